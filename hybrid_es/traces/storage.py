"""Where one deployment's traces are written and read: a data stream, or an index per UTC day.

The storage kind is the cluster's (``cluster.trace_storage``): a data stream where it has data
streams, else dated indices. Names come from the layout (``IndexLayout.traces_*``)::

    data stream     hybrid-es-traces-stream          (backing indices .ds-hybrid-es-traces-stream-*)
    dated indices   hybrid-es-traces-2026.04.01      (the day of the trace's @timestamp, UTC)
    reads           hybrid-es-traces-*               (either, and both after a switch)

:class:`TraceStorage` is a plain value (pure); :func:`trace_storage` decides it for a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.cluster.trace_storage import (
    TRACE_STORAGE_KINDS,
    TraceStorageKind,
    describe,
    probe_trace_storage,
)
from hybrid_es.settings import DEFAULT_TRACES_INDEX, Settings
from hybrid_es.tenancy import IndexLayout


@dataclass(frozen=True)
class TraceStorage:
    """A deployment's traces: ``base`` (``HYBRID_ES_TRACES_INDEX``) and the storage ``kind``."""

    base: str = DEFAULT_TRACES_INDEX
    kind: TraceStorageKind = "dated-indices"

    def __post_init__(self) -> None:
        if self.kind not in TRACE_STORAGE_KINDS:
            raise ValueError(f"trace storage must be one of {TRACE_STORAGE_KINDS}, not {self.kind}")

    @property
    def layout(self) -> IndexLayout:
        return IndexLayout(traces=self.base)

    @property
    def is_stream(self) -> bool:
        return self.kind != "dated-indices"

    @property
    def stream(self) -> str:
        return self.layout.traces_stream()

    @property
    def pattern(self) -> str:
        """What reads search: the data stream and every dated index."""
        return self.layout.traces_pattern()

    def target(self, doc: dict[str, Any], *, today: date) -> str:
        """The index or data stream that ``doc`` is written to (pure): the stream, or the dated
        index of the day of its ``@timestamp`` (``today`` when it has none that parses)."""
        if self.is_stream:
            return self.stream
        return self.layout.traces_on(_day(doc.get("@timestamp")) or today)

    def describe(self) -> str:
        where = self.stream if self.is_stream else self.layout.traces_on(date(2000, 1, 1))
        where = where.replace("2000.01.01", "YYYY.MM.DD")
        return f"{where} ({describe(self.kind)})"


def _day(timestamp: Any) -> date | None:
    if not isinstance(timestamp, str):
        return None
    try:
        when = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).date()


def trace_storage(
    client: Engine | Any, settings: Settings | None = None, *, base: str | None = None
) -> TraceStorage:
    """The trace storage of this deployment: ``HYBRID_ES_TRACE_STORAGE`` when pinned, else what
    the cluster supports (one read-only request; an answer it cannot read means dated indices,
    which any cluster takes). ``base`` overrides ``HYBRID_ES_TRACES_INDEX``."""
    s = settings or Settings()
    kind: TraceStorageKind
    if s.trace_storage == "auto":
        kind, _why = probe_trace_storage(as_engine(client))
    else:
        kind = s.trace_storage
    return TraceStorage(base or s.traces_index, kind)
