"""One slice of an index sync read as documents: the pages of the source (``cluster.source_read``)
mapped record by record (``ingest.source_mapping``), refusals counted by reason, and the
position from which the read can resume once what was read before it is written.

The ingestor reads the document stream a batch ahead of what it has written; a position is safe
to record only when every document of every page before it has been written (settled). So each
page is remembered with how many documents and records it ends at, and :meth:`SliceStream.settle`
(told by the ingestor how many more documents were written) returns the furthest page end that is
safe now: a resumed read starts there, and re-reads at most the page it stopped in (whose written
documents are then skipped as unchanged).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hybrid_es.cluster import source_read
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.source_read import Page, SourceIndex
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.source_mapping import Refusal, SourceMapping

MAX_EXAMPLES = 20
"""Refused records listed with their reason (the rest are counted)."""


@dataclass(frozen=True)
class SliceRead:
    """What one slice reads and from where: the way (``pit``, ``scroll`` or ``shards``), the
    query, the point in time, and where a resumed read starts (``after``: the sort values of a
    point in time, or ``{"<index uuid>/<shard>": seq_no}`` of shards)."""

    read: str
    index: str
    query: dict[str, Any]
    slice_id: int
    slices: int
    pit_id: str | None = None
    after: Any = None
    shards: tuple[tuple[str, str, int, int], ...] = ()
    """Shards mode: (concrete index, key ``uuid/shard``, shard, the seq_no it reads above)."""
    keep_alive: str = "5m"
    page_size: int = source_read.DEFAULT_PAGE


def slice_shards(
    info: SourceIndex, slice_id: int, slices: int, above: dict[str, int]
) -> tuple[tuple[str, str, int, int], ...]:
    """The shards of slice ``slice_id`` of ``slices`` (every ``slices``-th of the source's shards,
    in a fixed order), each with the ``_seq_no`` it is read above (``above``: the checkpoint).
    Pure."""
    out = []
    uuid_of = {i.name: i.uuid for i in info.indices}
    for n, (index, shard) in enumerate(info.shards()):
        if n % slices == slice_id:
            key = f"{uuid_of[index]}/{shard}"
            out.append((index, key, shard, int(above.get(key, -1))))
    return tuple(out)


def pages(engine: Engine, how: SliceRead, source: list[str] | bool) -> Iterator[Page]:
    """The slice's pages from its resume position."""
    if how.read == "pit":
        assert how.pit_id is not None
        yield from source_read.pit_pages(
            engine,
            how.pit_id,
            query=how.query,
            source=source,
            slice_id=how.slice_id,
            slices=how.slices,
            after=how.after,
            size=how.page_size,
            keep_alive=how.keep_alive,
        )
    elif how.read == "scroll":
        yield from source_read.scroll_pages(
            engine,
            how.index,
            query=how.query,
            source=source,
            slice_id=how.slice_id,
            slices=how.slices,
            size=how.page_size,
            keep_alive=how.keep_alive,
        )
    else:
        done: dict[str, int] = dict(how.after or {})
        for index, key, shard, above in how.shards:
            start = max(above, int(done.get(key, -1)))
            for page in source_read.shard_pages(
                engine, index, shard, query=how.query, source=source, above=start,
                size=how.page_size,
            ):  # fmt: skip
                done[key] = int(page.after[0]) if page.after else start
                yield Page(page.hits, dict(done))


def count(engine: Engine, how: SliceRead) -> int:
    """How many records the slice reads (for a scroll, an even share of the whole: a scroll's
    slice cannot be counted apart)."""
    if how.read == "pit":
        assert how.pit_id is not None
        return source_read.pit_count(
            engine,
            how.pit_id,
            query=how.query,
            slice_id=how.slice_id,
            slices=how.slices,
            keep_alive=how.keep_alive,
        )
    if how.read == "scroll":
        whole = source_read.count(engine, how.index, how.query)
        return -(-whole // how.slices)
    return sum(
        source_read.shard_count(engine, index, shard, how.query, above)
        for index, _, shard, above in how.shards
    )


@dataclass
class SliceStream:
    """A slice's records as the documents of the caller's tenant, the refusals counted, and the
    resume positions of the pages written so far (module docstring)."""

    mapping: SourceMapping
    read: int = 0
    """Records read."""
    refused: dict[str, int] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    documents: int = 0
    """Documents handed to the ingestor."""
    _pages: list[tuple[int, int, Any]] = field(default_factory=list)
    """Each page read whole: (documents, records) at its end, and its resume position."""
    _settled_docs: int = 0
    _next: int = 0
    _settled_records: int = 0

    def documents_of(self, source: Iterator[Page]) -> Iterator[Document]:
        """The documents of ``source``'s pages, in order."""
        for page in source:
            for hit in page.hits:
                self.read += 1
                mapped = self.mapping.record(hit)
                if isinstance(mapped, Refusal):
                    self.refuse(mapped)
                    continue
                self.documents += 1
                yield mapped
            self._pages.append((self.documents, self.read, page.after))

    def refuse(self, refusal: Refusal) -> None:
        self.refused[refusal.reason] = self.refused.get(refusal.reason, 0) + 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(
                {"doc_id": refusal.doc_id, "reason": refusal.reason, "message": refusal.message}
            )

    def settle(self, k: int) -> tuple[Any, int, int] | None:
        """``k`` more documents are written: the furthest safe resume position now, with the
        records read up to it and how many records more that is than at the last call; None
        when no page ended in between."""
        self._settled_docs += k
        moved = None
        while self._next < len(self._pages) and self._pages[self._next][0] <= self._settled_docs:
            moved = self._pages[self._next]
            self._next += 1
        if moved is None:
            return None
        delta = moved[1] - self._settled_records
        self._settled_records = moved[1]
        return moved[2], moved[1], delta

    @property
    def unsettled_records(self) -> int:
        """Records read whose page's documents are not all known to be written yet."""
        return self.read - self._settled_records
