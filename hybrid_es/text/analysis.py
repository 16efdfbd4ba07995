"""Client-side analysis, for clusters that lack the analysis-common module (the integ-test zip).

``client_terms`` turns text into the terms an English-stemming, CJK-bigram analyzer would
produce, joined by spaces; the ``search_terms`` field stores them and is indexed with the
built-in ``whitespace`` analyzer, and queries go through the same function. On a cluster with
``english``/``cjk`` analysis the ``full`` analysis profile does this natively instead.

``code_terms`` does the same for identifiers in source code, on every profile: Lucene's standard
tokenizer keeps ``run_target``, ``self.executor`` and ``DiffExecutor`` whole, so a question that
says "run target" or "executor" never matches them. The ``code_terms`` field holds each compound
identifier whole and split (on dots, ``::``, underscores and camelCase). Pure.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from hybrid_es.text.folding import FOLD_VERSION

ANALYSIS_VERSION = f"client-terms-v3;{FOLD_VERSION}"
"""Stored on every chunk: a change to ``client_terms`` or to the folding of the matched text
(``folding.FOLD_VERSION``, the converter's release included) must change it, so re-ingest
rewrites. v3: the matched text is folded (Traditional to Simplified, full width), and CJK
ideographs past the BMP are bigrams too."""

# Lucene's English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET).
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
# Kana, Han (extension A, unified, compatibility, and planes 2 and 3: extensions B to H, which
# some Traditional-to-Simplified folds give) and hangul syllables.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0003ffff"
_TOKEN = re.compile(f"[{_CJK}]+|[^\\W_]+", re.UNICODE)
_CJK_RUN = re.compile(f"^[{_CJK}]+$")


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def client_terms(text: str) -> str:
    """English words lowercased, stop words dropped, Snowball-stemmed; CJK runs as overlapping
    bigrams (a single character stays a unigram), as Lucene's CJKBigramFilter emits them.

    >>> client_terms("The rooms' roll-in showers 无障碍淋浴")
    'room roll shower 无障 障碍 碍淋 淋浴'
    """
    out: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        if _CJK_RUN.match(tok):
            out.extend([tok] if len(tok) == 1 else [tok[i : i + 2] for i in range(len(tok) - 1)])
        elif tok not in STOP_WORDS:
            out.append(_stem(tok))
    return " ".join(out)


# An identifier, possibly qualified: ``a.b``, ``a::b``, ``a->b``, ``A#b``.
_IDENT = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->|#)[A-Za-z_$][\w$]*)*")
_QUALIFIER = re.compile(r"\.|::|->|#")
# camelCase and PascalCase words, acronyms (``HTTPServer`` -> HTTP, Server) and digit runs.
_CAMEL_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def code_terms(text: str) -> str:
    """Compound identifiers whole and split, lowercased: each qualified name whole, each of its
    segments whole, and the words of each segment (split on underscores and camelCase).

    Only identifiers with at least two words of two or more characters count, so prose adds
    (almost) nothing: ``e.g.``, ``mRNA`` and ``roll-in`` give no terms.

    >>> code_terms("How does DiffExecutor call self.run_target?")
    'diffexecutor diff executor self.run_target self run_target self run target'
    """
    out: list[str] = []
    for ident in _IDENT.findall(text):
        segments = [s for s in _QUALIFIER.split(ident) if s]
        words = [
            w.lower()
            for seg in segments
            for part in seg.split("_")
            for w in _CAMEL_WORD.findall(part)
            if len(w) >= 2
        ]
        if len(words) < 2:
            continue
        out.append(ident.lower())
        if len(segments) > 1:
            out.extend(s.lower() for s in segments)
        out.extend(words)
    return " ".join(out)


_CJK_CHAR = re.compile(f"[{_CJK}]")
Script = Literal["cjk", "latin"]


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds at least one CJK character."""
    return _CJK_CHAR.search(text) is not None


def dominant_script(text: str) -> Script:
    """``cjk`` when CJK characters make up at least 30 % of the letters, else ``latin``.

    Coarse on purpose: it only has to tell a model trained on English claims from a Chinese
    question (the reranker's script gate).
    """
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "latin"
    cjk = sum(1 for c in letters if _CJK_CHAR.match(c))
    return "cjk" if cjk / len(letters) >= 0.3 else "latin"


# What Lucene's standard tokenizer makes a token of, counted generously: each CJK character and
# each emoji alone, and a run of letters or digits (underscores split it here, and a run longer
# than the tokenizer's 255 characters counts once per 255). No text yields more tokens than this
# counts, so a cap on these caps the clauses that a match query over the text expands to.
_QUERY_TERM = re.compile(f"[{_CJK}]|[\u2600-\u27bf\U0001f000-\U0001faff]|[^\\W_]{{1,255}}")


def cap_terms(text: str, max_terms: int) -> tuple[str, bool]:
    """``text`` up to the end of its ``max_terms``-th term (as :data:`_QUERY_TERM` counts them),
    and whether anything was cut. The scan stops at the first term past the cap, so a long
    text costs no more than a short one.

    >>> cap_terms("roll-in shower rate, April", 3)
    ('roll-in shower', True)
    """
    end = 0
    for n, m in enumerate(_QUERY_TERM.finditer(text)):
        if n == max_terms:
            return text[:end], True
        end = m.end()
    return text, False
