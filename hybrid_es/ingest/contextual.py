"""Context headers that situate a chunk in its whole document (contextual retrieval, seed 002).

Contextualizers are pluggable (:class:`Contextualizer`):

- :class:`ExtractiveContextualizer`, the offline default: the header is built only from the parent
  document (title or file path, section path, document-level identifiers, names and dates; for
  source code the file's own summary line, the definitions that enclose the chunk and the names
  it defines), so it cannot introduce anything the document does not contain, and never longer
  than :data:`MAX_HEADER_TOKENS`. Pure.
- :class:`NoContextualizer`: no header (the baseline the benchmark compares against).
- ``AnthropicContextualizer`` (``ingest.anthropic_context``): an LLM writes the header from the
  whole document (a cached prompt block) and the chunk; the guardrail checks it.

Every header carries the prompt version that produced it, stored on the chunk as
``header_prompt_version``; an ingest skips a document only when its chunks were made under the
contextualizer's current version (:func:`made_by`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from hybrid_es.ingest.chunking import Chunk, estimate_tokens
from hybrid_es.ingest.code_outline import Definition, definitions, enclosing, is_code, summary
from hybrid_es.ingest.documents import Document
from hybrid_es.text.identifiers import extract_identifiers

EXTRACTIVE_PROMPT_VERSION = "extractive-v2"
NO_HEADER_VERSION = "none-v1"
MAX_HEADER_IDS = 8
MAX_HEADER_NAMES = 4
MAX_HEADER_DEFINES = 8
MAX_HEADER_TOKENS = 100
"""The longest header, in tokens: seed 002 asks for a succinct context of 50 to 100 tokens. A
longer LLM answer is refused (counted by the model's own ``usage.output_tokens``) and an
extractive header is trimmed to fit (counted by ``chunking.estimate_tokens``). A
shorter header is accepted: the 50 is what the prompt asks for, not a condition."""
MAX_EXAMPLES = 20
"""Rejected headers kept in the report as examples (the count is always exact)."""

_PROPER_NAME = re.compile(r"\b[A-Z][a-z]+(?:[ \t]+(?:of[ \t]+|de[ \t]+)?[A-Z][a-z]+)+\b")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_LEADING = re.compile(
    r"^(?:The|A|An|This|That|These|Those|In|On|At|For|From|To|By|With|Our|Its)\s+"
)


@dataclass(frozen=True)
class Header:
    """One chunk's context header and the prompt version that produced it."""

    text: str
    prompt_version: str
    rejected: str | None = None
    """Why a generated header was replaced by the fallback (None when it was not)."""


@dataclass
class ContextUsage:
    """What the contextualizer spent during one ingest; cost from the usage the model returned."""

    calls: int = 0
    llm_headers: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float | None = 0.0
    """None when the model's price is unknown (see ``anthropic_context.PRICES``)."""
    guardrail_rejections: int = 0
    """LLM headers refused: by the guardrail, cut off at ``max_tokens``, or over the token limit."""
    rejected_examples: list[str] = field(default_factory=list)

    def reject(self, chunk: str, reason: str) -> None:
        self.guardrail_rejections += 1
        if len(self.rejected_examples) < MAX_EXAMPLES:
            self.rejected_examples.append(f"{chunk}: {reason}")

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "llm_headers": self.llm_headers,
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "guardrail_rejections": self.guardrail_rejections,
        }


@runtime_checkable
class Contextualizer(Protocol):
    """Makes one header per chunk of a document, in chunk order."""

    @property
    def prompt_version(self) -> str: ...

    def headers(
        self, doc: Document, chunks: Sequence[Chunk], usage: ContextUsage
    ) -> list[Header]: ...


def made_by(chunk_prompt_version: str | None, contextualizer_version: str) -> bool:
    """Whether a stored chunk's header came from this contextualizer version, fallbacks included
    (``<version>+fallback:<other>``): a rejected header is not regenerated on every run."""
    return (chunk_prompt_version or "").split("+", 1)[0] == contextualizer_version


def fallback_version(primary: str, fallback: str) -> str:
    return f"{primary}+fallback:{fallback}"


def document_path(doc: Document) -> str | None:
    path = doc.metadata.get("path")
    return str(path) if path else None


@dataclass(frozen=True)
class _Outline:
    """What the extractive header needs from a document, computed once per document."""

    ids: tuple[str, ...]
    names: tuple[str, ...]
    dates: tuple[str, ...]
    code: bool
    about: str
    defs: tuple[Definition, ...]

    def defines(self, chunk: Chunk) -> tuple[str, ...]:
        """The names of the definitions that start inside ``chunk`` (none where its offset is
        unknown), at most :data:`MAX_HEADER_DEFINES`."""
        if chunk.start is None:
            return ()
        end = chunk.start + len(chunk.text)
        names = dict.fromkeys(d.name for d in self.defs if chunk.start <= d.offset < end)
        return tuple(names)[:MAX_HEADER_DEFINES]


def _outline(doc: Document) -> _Outline:
    code = is_code(document_path(doc), doc.source_type)
    ids: list[str] = []
    names: list[str] = []
    dates: list[str] = []
    if not code:  # in code, digit-bearing tokens are types and literals (u32, 0x10), not ids
        head = f"{doc.title}\n{doc.body[:4000]}"
        for v in (
            *doc.contract_ids,
            *doc.property_ids,
            *doc.room_codes,
            *doc.booking_ids,
            *extract_identifiers(head),
        ):
            if v.lower() not in {i.lower() for i in ids} and not _ISO_DATE.fullmatch(v):
                ids.append(v)
        # A sentence's first word is capitalised anyway: "The Kyoto Garden Hotel" is the hotel.
        found = (_LEADING.sub("", m.group(0)) for m in _PROPER_NAME.finditer(doc.body))
        counts = Counter(n for n in found if " " in n)
        in_title = {_LEADING.sub("", m.group(0)) for m in _PROPER_NAME.finditer(doc.title)}
        names = [n for n, c in counts.most_common() if c > 1 or n in in_title]
        known = {str(doc.valid_from), str(doc.valid_to)}
        dates = [d for d in dict.fromkeys(_ISO_DATE.findall(doc.body)) if d not in known]
    return _Outline(
        ids=tuple(ids[:MAX_HEADER_IDS]),
        names=tuple(names[:MAX_HEADER_NAMES]),
        dates=tuple(dates[:3]),
        code=code,
        about=summary(doc.body) if code else "",
        defs=tuple(definitions(doc.body)) if code else (),
    )


def extractive_header(doc: Document, chunk: Chunk, outline: _Outline | None = None) -> str:
    """A short header made only of what ``doc`` says: for prose, its title, the chunk's section
    path, document identifiers, names that recur, dates, validity and source; for code, its path,
    its own summary line and the definitions enclosing the chunk.

    Never over :data:`MAX_HEADER_TOKENS` (as ``chunking.estimate_tokens`` counts):
    a longer one loses its least useful parts first, one item at a time from the end: dates, then
    names (for code, the names the chunk defines), then identifiers; what is still too long is
    clipped at the limit (a very long title or section path)."""
    o = outline or _outline(doc)
    if o.code:
        return _fit(lambda d, n, i: _code_header(doc, chunk, o, n), (), o.defines(chunk), ())
    return _fit(lambda d, n, i: _prose_header(doc, chunk, d, n, i), o.dates, o.names, o.ids)


def _fit(
    build: Callable[[Sequence[str], Sequence[str], Sequence[str]], str],
    dates: Sequence[str],
    names: Sequence[str],
    ids: Sequence[str],
) -> str:
    """``build(dates, names, ids)`` within :data:`MAX_HEADER_TOKENS`: items are dropped one at a
    time from the end of the first list that still has any (dates, then names, then ids); a
    header too long even without any of them is clipped."""
    d, n, i = list(dates), list(names), list(ids)
    header = build(d, n, i)
    while estimate_tokens(header) > MAX_HEADER_TOKENS and (d or n or i):
        (d or n or i).pop()
        header = build(d, n, i)
    return _clip(header, MAX_HEADER_TOKENS)


def _clip(text: str, limit: int) -> str:
    """The longest prefix of ``text`` within ``limit`` estimated tokens. A token is counted from
    its first character on, so that prefix ends just before the first token over the limit: no
    word is halved."""
    if estimate_tokens(text) <= limit:
        return text
    lo, hi = 0, len(text)  # estimate_tokens never falls as a prefix grows: bisect on length
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip()


def _code_header(doc: Document, chunk: Chunk, o: _Outline, defines: Sequence[str]) -> str:
    path = document_path(doc)
    parts: list[str] = []
    parts.append(f"File: {path}." if path else f"Document: {doc.title}." if doc.title else "")
    if o.about:
        parts.append(f"About: {o.about}.")
    if chunk.start is not None:
        scope = enclosing(list(o.defs), doc.body, chunk.start)
        if scope:
            parts.append(f"In: {' > '.join(f'{d.kind} {d.name}' for d in scope)}.")
        # Repeating the names a chunk defines lets BM25 rank the definition of X above the
        # chunks that merely use X (measured: docs/contextual-retrieval.md).
        if defines:
            parts.append(f"Defines: {', '.join(defines)}.")
    return " ".join(p for p in parts if p)


def _prose_header(
    doc: Document,
    chunk: Chunk,
    dates: Sequence[str],
    names: Sequence[str],
    ids: Sequence[str],
) -> str:
    path = document_path(doc)
    parts: list[str] = []
    if doc.title:
        parts.append(f"Document: {doc.title}.")
    elif path:
        parts.append(f"File: {path}.")
    if chunk.heading_path:
        parts.append(f"Section: {' > '.join(chunk.heading_path)}.")
    if ids:
        parts.append(f"Identifiers: {', '.join(ids)}.")
    if names:
        parts.append(f"Names: {', '.join(names)}.")
    if dates:
        parts.append(f"Dates: {', '.join(dates)}.")
    if doc.valid_from or doc.valid_to:
        parts.append(f"Valid {doc.valid_from or '...'} to {doc.valid_to or 'open'}.")
    parts.append(f"Source: {doc.source_type}, version {doc.version}.")
    return " ".join(parts)


class ExtractiveContextualizer:
    """The offline default: headers from the document alone (see :func:`extractive_header`)."""

    prompt_version = EXTRACTIVE_PROMPT_VERSION

    def headers(self, doc: Document, chunks: Sequence[Chunk], usage: ContextUsage) -> list[Header]:
        outline = _outline(doc)
        return [Header(extractive_header(doc, c, outline), self.prompt_version) for c in chunks]


class NoContextualizer:
    """No header: the search payload is the raw chunk (the benchmark's baseline)."""

    prompt_version = NO_HEADER_VERSION

    def headers(self, doc: Document, chunks: Sequence[Chunk], usage: ContextUsage) -> list[Header]:
        return [Header("", self.prompt_version) for _ in chunks]
