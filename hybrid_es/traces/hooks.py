"""The searcher's and the packet service's trace hooks: build a trace on the caller's thread
(tens of microseconds) and hand it to the writer; never raise.

Wiring::

    writer = TraceWriter(client, trace_storage(client, settings))
    tracer = search_hook(writer, query_text=settings.trace_query_text, hash_key=key)
    searcher = HybridSearcher(client, embedder, on_response=tracer, on_error=tracer.on_error,
                              hash_key=key, ...)
    ...
    writer.close()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from hybrid_es.errors import BadQueryError
from hybrid_es.hashing import PROCESS_KEY, keyed_digest
from hybrid_es.models import Principal, SearchResponse
from hybrid_es.retrieval.queries import clean_query
from hybrid_es.traces.documents import REFUSED, packet_trace, search_error_trace, search_trace
from hybrid_es.traces.writer import TraceWriter


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SearchTracer:
    """The searcher's hooks: ``on_response`` (this object called) and ``on_error``.

    Builds the trace on the caller's thread (tens of microseconds) and hands it to the writer;
    never raises.
    """

    def __init__(
        self,
        writer: TraceWriter,
        *,
        query_text: bool = False,
        clock: Callable[[], datetime] = _utcnow,
        hash_key: bytes = PROCESS_KEY,
    ) -> None:
        self.writer = writer
        self.query_text = query_text
        self._clock = clock
        self.hash_key = hash_key

    def __call__(
        self, principal: Principal, response: SearchResponse, query: str | None = None
    ) -> None:
        def build() -> dict[str, Any]:
            # The searcher's cleaned text, already within its (configurable) length limit.
            text = clean_query(query, None) if self.query_text and query is not None else None
            return search_trace(
                principal,
                response,
                now=self._clock(),
                query_text=text,
                trace_id=response.trace_id or None,
            )

        self._submit(build)

    def _submit(self, build: Callable[[], dict[str, Any]]) -> None:
        """Build a trace and queue it; a failure to build is recorded, never raised."""
        try:
            doc = build()
        except Exception as exc:
            self.writer.record_error(exc)
            return
        self.writer.submit(doc)

    def on_error(
        self,
        principal: Principal,
        query: object,
        error: BaseException,
        timings_ms: Mapping[str, float] | None = None,
    ) -> None:
        """Trace a failed search. ``query`` is the caller's raw input (any type). A refused
        request (:data:`REFUSED`) is counted, not traced: its tenant is only a claim."""
        if isinstance(error, REFUSED):
            self.writer.count_refused(type(error).__name__)
            return
        self._submit(
            lambda: search_error_trace(
                principal,
                query_hash=_hash_any(query, self.hash_key),
                error=error,
                now=self._clock(),
                timings_ms=timings_ms,
                query_text=query if self.query_text and isinstance(query, str) else None,
                trace_id=getattr(error, "trace_id", None),
            )
        )

    def packet(
        self,
        principal: Principal,
        *,
        packet_id: str,
        operation: str,
        verdict: str | None,
        reasons: Sequence[str],
        latency_ms: float | Mapping[str, float],
        error: BaseException | str | None = None,
    ) -> None:
        """Trace one packet operation (see :func:`packet_trace`); never raises."""
        self._submit(
            lambda: packet_trace(
                principal,
                packet_id=packet_id,
                operation=operation,
                verdict=verdict,
                reasons=reasons,
                latency_ms=latency_ms,
                now=self._clock(),
                error=error,
            )
        )

    def packet_event(self, principal: Principal, event: Mapping[str, Any]) -> None:
        """``PacketService(on_event=...)``: its event dict (operation, packet_id, verdict,
        reasons, latency_ms) as a packet trace; never raises."""
        try:
            self.packet(
                principal,
                packet_id=str(event["packet_id"]),
                operation=str(event["operation"]),
                verdict=event.get("verdict"),
                reasons=[str(r) for r in event.get("reasons") or ()],
                latency_ms=event["latency_ms"],
                error=event.get("error"),
            )
        except Exception as exc:
            self.writer.record_error(exc)


def _hash_any(query: object, key: bytes) -> str:
    # Hash what the searcher would have hashed, so a failing query groups with its successes.
    if not isinstance(query, str):
        return keyed_digest(key, f"<{type(query).__name__}>")
    try:
        return keyed_digest(key, clean_query(query))
    except BadQueryError:
        return keyed_digest(key, query.encode("utf-8", "replace").decode("utf-8"))


def search_hook(
    writer: TraceWriter,
    *,
    query_text: bool = False,
    clock: Callable[[], datetime] = _utcnow,
    hash_key: bytes = PROCESS_KEY,
) -> SearchTracer:
    """The ``on_response`` hook for :class:`~hybrid_es.retrieval.searcher.HybridSearcher` (and,
    through ``.on_error``, its error hook). ``query_text`` comes from ``Settings.trace_query_text``;
    ``hash_key`` must be the searcher's, so failures group with successes."""
    return SearchTracer(writer, query_text=query_text, clock=clock, hash_key=hash_key)


def packet_hook(
    writer: TraceWriter, *, clock: Callable[[], datetime] = _utcnow
) -> Callable[[Principal, Mapping[str, Any]], None]:
    """The ``on_event`` hook for :class:`~hybrid_es.packets.service.PacketService`."""
    return SearchTracer(writer, clock=clock).packet_event
