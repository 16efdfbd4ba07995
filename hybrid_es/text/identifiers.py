"""Exact identifiers in free text (contract ids, room codes, booking ids such as ``KYO-H12``).

Identifiers are matched exactly against keyword fields, because BM25 over the standard tokenizer
splits ``KYO-H12`` into ``kyo`` and ``h12`` and ranks any text with ``h12`` in it.
"""

from __future__ import annotations

import re

MAX_IDS = 20

# Alphanumeric groups joined by - _ / . with at least one digit somewhere (KYO-H12,
# JPN-2026-0417, INV_0042), or a letters+digits token (H12, A320) of 3+ characters.
_JOINED = re.compile(r"(?<![\w-])[A-Za-z0-9]+(?:[-_/.][A-Za-z0-9]+)+(?![\w-])")
# Not when joined to more id by / or . (KYO/H12 is one identifier, not also H12).
_MIXED = re.compile(
    r"(?<![\w-])(?<!\w[/.])(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{3,}"
    r"(?![\w-])(?![/.]\w)"
)


def extract_identifiers(text: str) -> list[str]:
    """Identifier-like tokens in ``text``, in order of first appearance, without duplicates.

    >>> extract_identifiers("KYO-H12 April roll-in shower rate for JPN-2026-0417")
    ['KYO-H12', 'JPN-2026-0417']
    """
    found: list[str] = []
    seen: set[str] = set()
    for m in sorted([*_JOINED.finditer(text), *_MIXED.finditer(text)], key=lambda m: m.start()):
        tok = m.group(0).strip("./")
        if not any(c.isdigit() for c in tok) or len(tok) > 64:
            continue
        key = tok.lower()
        if key not in seen:
            seen.add(key)
            found.append(tok)
        if len(found) >= MAX_IDS:
            break
    return found
