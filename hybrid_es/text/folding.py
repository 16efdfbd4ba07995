"""Script folding for matching: Traditional Chinese to Simplified, full-width forms to half-width.

``fold_for_matching`` gives the form of a text that the BM25 leg matches on, on both sides: the
chunk's ``search_folded``, ``title_folded``, ``search_terms`` and ``code_terms`` are built from
the folded text at ingest (``ingest.plan``), and the query is folded the same way before its
BM25 clauses are built (``queries.sparse_query``). A Traditional question then matches a
Simplified record and the reverse, on both engines and both analysis profiles, because the
engine's analyzer sees Simplified on both sides. What is stored and shown (``raw_chunk_text``,
``search_payload``, ``title``, the hits) stays as written, and the dense leg embeds the raw
question: its model reads either script itself.

Two folds, both total (no text is refused, whatever its script):

- **Width** (what Lucene's ``cjk_width`` filter does, on every profile): full-width ASCII
  (U+FF01 to U+FF5E: a full-width ``KYO-H12``, the Chinese comma and brackets) becomes ASCII,
  half-width katakana becomes full-width (by NFKC).
- **Traditional to Simplified**: OpenCC's ``t2s`` (the official C++ converter's Python
  bindings, package ``opencc``), character tables with phrase conversion for the one-to-many
  cases (乾隆 stays, 乾燥 becomes 干燥; 頭髮 becomes 头发). It folds the Taiwan and Hong Kong
  variant characters (臺 to 台, 裡 to 里, 綫 to 线) and the CJK compatibility ideographs. It runs
  on runs of Han characters only, so every other character (English, identifiers, digits, kana,
  hangul, punctuation but the full-width forms above) is kept exactly; Japanese kanji are folded
  too, identically on both sides.
  A character outside the tables is kept as it is.

Not folded: regional *vocabulary* (OpenCC's ``tw2sp``: 軟體 to 软件, 網路 to 网络). Measured on
the 2,391 sentences and questions of XQuAD-zh, ``tw2sp`` rewrote 161 spans of already-Simplified
text (建立 to 建/创建, 程序 to 程, 理查德 to 理乍得, 议程 to 议进程, 333 characters) where ``t2s``
changed 3 characters, each a Traditional character in the Simplified text (內, 顛, 遙): a fold
applied to both sides must leave the common case alone. docs/chinese.md has the measurements.

Pure (the converter's tables are read once, on the first text that has a Han character).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from importlib import metadata
from typing import Any

from hybrid_es.errors import ConfigurationError

FOLD_CONFIG = "t2s"
"""The OpenCC configuration that folds Chinese: Traditional (any region's characters) to
Simplified, with phrases."""


def _converter_version() -> str:
    try:
        return metadata.version("opencc")
    except metadata.PackageNotFoundError:
        return "missing"


FOLD_VERSION = f"width+{FOLD_CONFIG}-opencc-{_converter_version()}"
"""Part of ``analysis.ANALYSIS_VERSION``: another converter release (its tables) makes the next
ingest re-process every chunk, so stored and query-side folding agree."""

# Han characters: the unified ideographs with extension A, the compatibility ideographs, and
# planes 2 and 3 (extensions B to H, the compatibility supplement), where the converter's
# tables have entries (and which some of its outputs are).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
_HAN_RUN = re.compile(f"[{_HAN}]+")
# Full-width ASCII variants and half-width katakana: Lucene's CJKWidthFilter's ranges.
_WIDTH_RUN = re.compile("[\uff01-\uff5e\uff65-\uff9f]+")
_FOLDABLE = re.compile(f"[{_HAN}\uff01-\uff5e\uff65-\uff9f]")


@lru_cache(maxsize=1)
def _converter() -> Any:
    """OpenCC's ``t2s`` converter, loaded once (20-65 ms) and shared by every thread (its tables
    are read-only: 8 threads folding XQuAD-zh gave the serial results)."""
    try:
        from opencc import OpenCC
    except ImportError as exc:  # a base dependency: only a broken install gets here
        raise ConfigurationError(
            f"cannot fold Chinese for matching: the OpenCC converter is not importable ({exc})",
            hint="reinstall hybrid-es (it depends on `opencc`), or `pip install opencc`",
        ) from exc
    return OpenCC(FOLD_CONFIG)


def _to_simplified(match: re.Match[str]) -> str:
    return str(_converter().convert(match.group()))


def _to_width(match: re.Match[str]) -> str:
    return unicodedata.normalize("NFKC", match.group())


def fold_for_matching(text: str) -> str:
    """``text`` in the form the BM25 leg matches on: full-width ASCII as ASCII, half-width
    katakana as full-width, Traditional Chinese as Simplified (OpenCC ``t2s``, phrases
    included). Everything else is kept exactly; a text with nothing to fold is returned as it
    is, without loading the converter.

    >>> fold_for_matching("無障礙淋浴間 \uff2b\uff39\uff2f-H12 roll-in shower")
    '无障碍淋浴间 KYO-H12 roll-in shower'
    """
    if _FOLDABLE.search(text) is None:
        return text
    text = _WIDTH_RUN.sub(_to_width, text)
    return _HAN_RUN.sub(_to_simplified, text)
