"""Splitting a document into chunks, keeping each chunk's heading path. Pure.

Sizes are in tokens of the embedding model's tokenizer when one is given (``count``), so a chunk
fits the model's window; without one, a word/character estimate is used (CJK characters count
one each, other words one each). :func:`token_counter` turns a tokenizer into such a ``count``;
:func:`counter_for` picks the embedder's own when it has one.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sized
from dataclasses import dataclass
from functools import lru_cache

from hybrid_es.ingest.code_outline import Definition, definitions, is_code
from hybrid_es.ingest.documents import Document

TokenCount = Callable[[str], int]

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*\r?$\n?", re.M)
# after Latin . ! ? and whitespace, or after a CJK full stop, !, ?, ; (spaces after it included)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f\uff1b])\s*")
_PARAGRAPH = re.compile(r"(?:[^\n]|\n(?![ \t\r]*\n))+")  # lines up to a blank line (LF or CRLF)
_LINE = re.compile(r"[^\n]+")
# a comment or decorator line that belongs to the definition below it
_LEADING = re.compile(r"[ \t]*(?:@|#(?!\s*(?:include|if|endif|else|define)\b)|//|/\*|\*)")
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


@dataclass(frozen=True)
class Chunking:
    """The ingest's default chunker: :func:`chunk_document` at ``size`` tokens with ``overlap``,
    counted by ``count`` (an embedder's own tokenizer: :func:`counter_for`)."""

    size: int
    overlap: int
    count: TokenCount

    def __call__(self, doc: Document) -> list[Chunk]:
        return chunk_document(doc, size=self.size, overlap=self.overlap, count=self.count)


Span = tuple[int, int]
"""A piece of the source text: ``text[start:end]``."""


def _trim(text: str, start: int, end: int) -> Span | None:
    """``(start, end)`` without the whitespace at either end; None when nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _units(text: str, start: int, end: int) -> list[Span]:
    """Sentence-ish units of ``text[start:end]``: paragraphs (split at blank lines), and
    sentences within them: after ``.``, ``!`` or ``?`` and whitespace, or after a CJK full
    stop, ``!``, ``?`` or ``;``. A decimal point, a domain name or a method call (``3.5``,
    ``example.com``, ``self.run``) is not a sentence end."""
    out: list[Span] = []
    for para in _PARAGRAPH.finditer(text, start, end):
        cut = para.start()
        for m in _SENTENCE_END.finditer(text, para.start(), para.end()):
            span = _trim(text, cut, m.end())
            if span:
                out.append(span)
            cut = m.end()
        span = _trim(text, cut, para.end())
        if span:
            out.append(span)
    return out


def _sections(text: str) -> list[tuple[tuple[str, ...], Span]]:
    """The text between Markdown headings, with each part's heading path (the heading lines
    themselves are in the path, not in the text)."""
    sections: list[tuple[tuple[str, ...], Span]] = []
    path: list[str] = []
    begin = 0
    for m in _HEADING.finditer(text):
        sections.append((tuple(path), (begin, m.start())))
        level, title = len(m.group(1)), m.group(2)
        path = [*path[: level - 1], title]
        begin = m.end()
    sections.append((tuple(path), (begin, len(text))))
    return sections


def chunk_text(
    text: str,
    *,
    size: int = 200,
    overlap: int = 40,
    count: Callable[[str], int] = estimate_tokens,
) -> list[Chunk]:
    """Chunks of at most about ``size`` tokens, the last ``overlap`` tokens repeated in the next.

    Every chunk is a verbatim piece of ``text`` (``text[start:start + len(chunk.text)]``): the
    chunker chooses where to cut, never rewrites what is between (a quote taken from a chunk is a
    quote of the document). Markdown headings (``#``..``######``) start a new chunk and set its
    heading path. Raises ValueError for a bad size/overlap.
    """
    _check(size, overlap)
    chunks: list[Chunk] = []
    for path, (start, end) in _sections(text):
        for s, e in _pack(text, _units(text, start, end), size, overlap, count):
            chunks.append(Chunk(len(chunks), text[s:e], path, s))
    return chunks


def chunk_code(
    text: str,
    *,
    size: int = 200,
    overlap: int = 40,
    count: Callable[[str], int] = estimate_tokens,
) -> list[Chunk]:
    """Chunks of source code, cut at definition boundaries where they fit.

    The file is cut before each top-level definition (a comment or decorator block right above
    one goes with it); consecutive pieces are packed together while they fit in ``size``. A
    definition too big for one chunk is cut the same way at the definitions inside it (a class
    at its methods), and a piece without any is packed line by line, the last ``overlap`` tokens
    of lines repeated. Definitions are found by :mod:`~hybrid_es.ingest.code_outline`. Every chunk
    is a verbatim piece of ``text``, indentation and blank lines kept.
    """
    _check(size, overlap)
    defs = definitions(text)
    spans = _split_code(text, 0, len(text), defs, size, overlap, count)
    return [Chunk(i, text[s:e], (), s) for i, (s, e) in enumerate(spans)]


def chunk_document(
    doc: Document,
    *,
    size: int = 200,
    overlap: int = 40,
    count: Callable[[str], int] = estimate_tokens,
) -> list[Chunk]:
    """:func:`chunk_code` for a source file (its ``source_type`` is ``code``, or its
    ``metadata["path"]`` has a source suffix), :func:`chunk_text` for anything else."""
    path = doc.metadata.get("path")
    code = is_code(str(path) if path else None, doc.source_type)
    return (chunk_code if code else chunk_text)(doc.body, size=size, overlap=overlap, count=count)


def _check(size: int, overlap: int) -> None:
    if size < 16 or not 0 <= overlap < size // 2:
        raise ValueError(f"need size >= 16 and 0 <= overlap < size/2, got {size}/{overlap}")


# Stays whole: one greedy pass that packs units into chunks and carries the overlap; splitting it
# would split the packing state across functions.
def _pack(
    text: str, units: list[Span], size: int, overlap: int, count: Callable[[str], int]
) -> list[Span]:
    """Pack consecutive ``units`` into spans of at most ``size`` tokens, each repeating the
    previous span's last units up to ``overlap`` tokens; a unit over ``size`` is hard-split and
    stands alone."""
    out: list[Span] = []
    buf: list[tuple[Span, int]] = []  # units of the current chunk with their counts
    used = 0

    def flush() -> None:
        if buf:
            out.append((buf[0][0][0], buf[-1][0][1]))

    for unit in units:
        n = count(text[unit[0] : unit[1]])
        if n > size:  # one very long sentence (or line): hard-split by words/characters
            flush()
            out.extend(_hard_split(text, unit, size, count))
            buf, used = [], 0
            continue
        if used + n > size and buf:
            flush()
            tail: list[tuple[Span, int]] = []
            kept = 0
            for u, c in reversed(buf):
                if kept + c > overlap:
                    break
                tail.insert(0, (u, c))
                kept += c
            while tail and kept + n > size:  # the carried tail must leave room for the unit
                kept -= tail.pop(0)[1]
            buf, used = tail, kept
        buf.append((unit, n))
        used += n
    flush()
    return out


def _hard_split(text: str, unit: Span, size: int, count: Callable[[str], int]) -> list[Span]:
    """``unit`` in pieces of at most ``size`` tokens, cut between words (between characters in
    CJK text); a single word over ``size`` (by a model tokenizer) stays whole."""
    pieces: list[Span] = []
    begin = end = unit[0]
    for m in _PIECES.finditer(text, unit[0], unit[1]):
        if end > begin and count(text[begin : m.end()].strip()) > size:
            span = _trim(text, begin, end)
            if span:
                pieces.append(span)
            begin = m.start()
        end = m.end()
    span = _trim(text, begin, end)
    if span:
        pieces.append(span)
    return pieces


# -- code ----------------------------------------------------------------------------------------


def _lines(text: str, start: int, end: int) -> list[Span]:
    """The non-blank lines of ``text[start:end]``, each without its leading and trailing
    whitespace (a chunk packed from lines spans from its first line's first character to its last
    line's last, so the indentation of every line but the first is kept)."""
    out: list[Span] = []
    for m in _LINE.finditer(text, start, end):
        span = _trim(text, m.start(), m.end())
        if span:
            out.append(span)
    return out


def _definition_start(text: str, offset: int, floor: int) -> int:
    """Where a definition at ``offset`` starts as a piece: its line, moved up over the comment
    and decorator lines right above it (no blank line between), never above ``floor``."""
    start = text.rfind("\n", 0, offset) + 1
    while start > floor:
        prev = text.rfind("\n", 0, start - 1) + 1
        if prev < floor or not _LEADING.match(text, prev, start):
            break
        start = prev
    return max(start, floor)


# Stays whole: one recursion that cuts at the outermost definitions and packs the pieces.
def _split_code(
    text: str,
    start: int,
    end: int,
    defs: list[Definition],
    size: int,
    overlap: int,
    count: Callable[[str], int],
) -> list[Span]:
    """``text[start:end]`` in spans of at most ``size`` tokens, cut at the outermost definitions
    inside it (one at ``start`` itself is the piece being split, not a cut)."""
    whole = _trim(text, start, end)
    if whole is None:
        return []
    if count(text[whole[0] : whole[1]]) <= size:
        return [whole]
    # the definitions inside, each with where its piece would start; one that starts the piece
    # itself (its line, or the comments above it, come first) is what is being split
    inner = [
        (d, at)
        for d in defs
        if start <= d.offset < end and (at := _definition_start(text, d.offset, start)) > whole[0]
    ]
    if not inner:
        return _pack(text, _lines(text, start, end), size, overlap, count)
    level = min(d.indent for d, _ in inner)
    bounds = [start, *sorted({at for d, at in inner if d.indent == level}), end]
    out: list[Span] = []
    acc: Span | None = None
    for s, e in itertools.pairwise(bounds):
        piece = _trim(text, s, e)
        if piece is None:
            continue
        if acc is not None and count(text[acc[0] : piece[1]]) <= size:
            acc = (acc[0], piece[1])  # consecutive pieces share a chunk while they fit
            continue
        if acc is not None:
            out.append(acc)
            acc = None
        if count(text[piece[0] : piece[1]]) <= size:
            acc = piece
        else:
            # the last part of a split piece may take the small pieces after it (a closing brace)
            *done, acc = _split_code(text, s, e, defs, size, overlap, count)
            out.extend(done)
    if acc is not None:
        out.append(acc)
    return out
