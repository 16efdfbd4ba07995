"""The guardrail on generated context headers (seed 002): a header may situate a chunk only with
what its parent document says. A header that introduces a named entity, identifier or number that
the document does not contain is rejected, and the caller falls back to the extractive header.

What counts as introduced, checked as whole words, case-insensitively, against the document (and
``allowed`` terms such as its title and path):

- identifiers: anything with a digit (``KYO-H12``, ``Q3``, ``2025``, ``42.1``), CamelCase or
  snake_case names, dotted and ``::`` paths;
- names: capitalised words inside a sentence, and all-capitals words anywhere.

A plain capitalised word that starts a sentence ("This chunk ...", "Describes ...") is not
checked: English capitalises it anyway. CJK text has no capitalisation, so only identifiers and
numbers are checked there. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_QUOTE = "\u2019"  # a typographic apostrophe, as in ACME\u2019s

_TOKEN = re.compile(rf"[$€£¥]?\w(?:[\w.\-:/'{_QUOTE}&]|,(?=\d))*\w|[$€£¥]?\w")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|[\"'(\[]\s*)$")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
MAX_HEADER_CHARS = 1200
"""A longer answer is not a succinct context (the prompt asks for 50 to 100 tokens)."""


def _normal(token: str) -> str:
    token = re.sub(rf"['{_QUOTE}]s$", "", token)
    return token.strip(f".,;:!?'{_QUOTE}\"()[]{{}}$€£¥").lower()


def _candidates(header: str) -> list[str]:
    out: list[str] = []
    for m in _TOKEN.finditer(header):
        tok = m.group(0)
        word = _normal(tok)
        if not word:
            continue
        bare = tok.lstrip("$€£¥")
        has_digit = any(c.isdigit() for c in bare)
        code_like = (
            bool(_CAMEL.search(bare))
            or "_" in bare
            or "::" in bare
            or ("." in bare.strip(".") and not has_digit)
        )
        all_caps = len(bare) > 1 and bare.isupper()
        capital = bare[:1].isupper()
        starts_sentence = bool(_SENTENCE_START.search(header[: m.start()]))
        if has_digit or code_like or all_caps or (capital and not starts_sentence):
            out.append(word)
    return out


def _present(word: str, text: str) -> bool:
    if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text):
        return True
    # 1,000 and 1000, 42.1% and 42.1 are the same number; a possessive or plural of a name is it.
    digits = word.replace(",", "")
    if digits != word and re.search(rf"(?<!\w){re.escape(digits)}(?!\w)", text.replace(",", "")):
        return True
    return any(
        re.search(rf"(?<!\w){re.escape(part)}(?!\w)", text)
        for part in (word.rstrip("s"), word.rstrip("%"))
        if part and part != word
    )


def novel_terms(header: str, document: str, *, allowed: Iterable[str] = ()) -> list[str]:
    """The terms of ``header`` that neither ``document`` nor ``allowed`` contains, in order.

    >>> novel_terms("This chunk is from ACME Corp's Q3 2025 filing.", "ACME Corp, Q3 2025 report")
    []
    >>> novel_terms("Part of the Globex contract KYO-H99.", "the contract for KYO-H12")
    ['globex', 'kyo-h99']
    """
    text = "\n".join([document, *allowed]).lower()
    seen: set[str] = set()
    novel: list[str] = []
    for word in _candidates(header):
        if word not in seen and not _present(word, text):
            novel.append(word)
        seen.add(word)
    return novel


def check_header(header: str, document: str, *, allowed: Iterable[str] = ()) -> str | None:
    """None when ``header`` may be used; otherwise why it is rejected (for the ingest report)."""
    if not header.strip():
        return "empty header"
    if len(header) > MAX_HEADER_CHARS:
        return f"header of {len(header)} characters (limit {MAX_HEADER_CHARS})"
    novel = novel_terms(header, document, allowed=allowed)
    if novel:
        return f"introduces {', '.join(novel[:5])} (absent from the document)"
    return None
