"""Splitting a document into chunks, keeping each chunk's heading path. Pure.

Sizes are in tokens of the embedding model's tokenizer when one is given (``count``), so a chunk
fits the model's window; without one, a word/character estimate is used (CJK characters count
one each, other words one each). :func:`token_counter` turns a tokenizer into such a ``count``;
:func:`counter_for` picks the embedder's own when it has one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sized
from dataclasses import dataclass
from functools import lru_cache

TokenCount = Callable[[str], int]

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\uff1b])\s*")  # also CJK full stop, !, ?, ;
_CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_RANGES}]")
# one CJK character, or a run of other non-space characters with its trailing space
_PIECES = re.compile(f"[{_CJK_RANGES}]|[^\\s{_CJK_RANGES}]+\\s*")


@dataclass(frozen=True)
class Chunk:
    number: int
    text: str
    heading_path: tuple[str, ...]
    start: int | None = None
    """Character offset of the chunk's first character in the source text, where known."""


def estimate_tokens(text: str) -> int:
    """The fallback count: one per CJK character, one per other whitespace-separated word."""
    cjk = len(_CJK.findall(text))
    words = len(_CJK.sub(" ", text).split())
    return cjk + words


def token_counter(
    tokenize: Callable[[str], int | Sized], *, cache_size: int = 65_536
) -> TokenCount:
    """A ``count`` for :func:`chunk_text` from a tokenizer.

    ``tokenize`` returns either the token count or the tokens (anything with a length), without
    the special tokens the model adds around a whole input. The chunker counts the same sentence
    several times (when it is added, and again when it is carried over as overlap), and model
    tokenizers are slow per call, so counts are memoised.

    >>> token_counter(str.split)("three short words")
    3
    """

    @lru_cache(maxsize=cache_size)
    def count(text: str) -> int:
        n = tokenize(text)
        return n if isinstance(n, int) else len(n)

    return count


def counter_for(embedder: object) -> TokenCount:
    """The embedder's ``count_tokens`` when it has one (so chunks fit its window), else the
    estimate. Duck-typed: embedders without a tokenizer need not implement anything."""
    method = getattr(embedder, "count_tokens", None)
    return token_counter(method) if callable(method) else estimate_tokens


def _units(text: str) -> list[str]:
    """Sentence-ish units: lines, and sentences within long lines (CJK and Latin punctuation)."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if para:
            out.extend(s for s in _SENTENCE_END.split(para) if s.strip())
    return out


# Stays whole: one pass over the text's sections that packs tokens into chunks; splitting it
# would split the packing state across functions.
def chunk_text(
    text: str,
    *,
    size: int = 200,
    overlap: int = 40,
    count: Callable[[str], int] = estimate_tokens,
) -> list[Chunk]:
    """Chunks of at most about ``size`` tokens, the last ``overlap`` tokens repeated in the next.

    Markdown headings (``#``..``######``) start a new chunk and set its heading path. Each chunk
    records where it starts in ``text`` (``start``). Raises ValueError for a bad size/overlap.
    """
    if size < 16 or not 0 <= overlap < size // 2:
        raise ValueError(f"need size >= 16 and 0 <= overlap < size/2, got {size}/{overlap}")
    chunks: list[Chunk] = []
    path: list[str] = []
    buf: list[str] = []

    def flush() -> None:
        if buf:
            chunks.append(Chunk(len(chunks), " ".join(buf).strip(), tuple(path)))

    sections: list[tuple[tuple[str, ...], list[str]]] = [((), [])]
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            level, title = len(m.group(1)), m.group(2)
            path = [*path[: level - 1], title]
            sections.append((tuple(path), []))
        else:
            sections[-1][1].append(line)
    for heading, lines in sections:
        path = list(heading)
        units = _units("\n".join(lines))
        buf = []
        used = 0
        for unit in units:
            n = count(unit)
            if n > size:  # one very long sentence: hard-split by words/characters
                for piece in _hard_split(unit, size, count):
                    if buf:
                        flush()
                        buf = []
                    chunks.append(Chunk(len(chunks), piece, tuple(path)))
                used = 0
                continue
            if used + n > size and buf:
                flush()
                tail: list[str] = []
                kept = 0
                for u in reversed(buf):
                    c = count(u)
                    if kept + c > overlap:
                        break
                    tail.insert(0, u)
                    kept += c
                while tail and kept + n > size:  # the carried tail must leave room for the unit
                    kept -= count(tail.pop(0))
                buf, used = tail, kept
            buf.append(unit)
            used += n
        flush()
    return _with_offsets(text, chunks)


def _with_offsets(text: str, chunks: list[Chunk]) -> list[Chunk]:
    """Chunks with ``start`` set. A chunk begins with a verbatim piece of the text (units are
    substrings; only the whitespace joining them changes), and starts no earlier than the chunk
    before it (overlap repeats a tail, never an earlier head)."""
    out: list[Chunk] = []
    cursor = 0
    for ch in chunks:
        head = ch.text[:64].split("\n", 1)[0].strip() or ch.text[:64]
        at = text.find(head, cursor)
        if at < 0:
            at = text.find(head)
        out.append(Chunk(ch.number, ch.text, ch.heading_path, at if at >= 0 else None))
        cursor = max(cursor, at if at >= 0 else cursor)
    return out


def _hard_split(unit: str, size: int, count: Callable[[str], int]) -> list[str]:
    pieces: list[str] = []
    cur = ""
    for tok in _PIECES.findall(unit):
        if cur and count(cur + tok) > size:
            pieces.append(cur.strip())
            cur = ""
        cur += tok
    if cur.strip():
        pieces.append(cur.strip())
    return pieces
