"""Traces attached to a searcher: the trace writer, the searcher's hooks, and their counters.

The front door (:class:`hybrid_es.HybridEs`) attaches them when ``Settings.traces``
(``HYBRID_ES_TRACES``) is on::

    with HybridEs(Settings(traces=True)) as hes:   # or HYBRID_ES_TRACES=true
        hes.search(query, principal, scope)
    # leaving the block closed it: the background writer flushed what was queued

``hes.close()`` (or the searcher's) returns ``{"traces": TraceWriterStats}`` (written, dropped,
errors): drops are counted, never raised, and a close that dropped any logs one warning. While it
runs, :func:`trace_stats` reads the same counters. A cluster that refuses or cannot take traces
costs a search nothing but the drops it counts (the writer's queue is bounded and ``submit`` never
blocks; writes time out after ``request_timeout`` seconds on the writer's own thread).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.hashing import PROCESS_KEY
from hybrid_es.models import Principal, SearchResponse
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.traces.hooks import SearchTracer, search_hook
from hybrid_es.traces.storage import trace_storage
from hybrid_es.traces.writer import TraceWriter, TraceWriterStats

log = logging.getLogger(__name__)

_FROM_SETTINGS: Any = object()
"""``reranker``'s default: the one ``HYBRID_ES_RERANKER_MODEL`` names, if any."""


def hash_key(settings: Settings) -> bytes:
    """The deployment's trace hash key (``HYBRID_ES_TRACE_HASH_KEY``), else this process's
    random one. The searcher and its tracer must share it, so failures group with successes."""
    key = settings.trace_hash_key
    return key.get_secret_value().encode() if key else PROCESS_KEY


def trace_writer(client: Engine | Any, settings: Settings, **options: Any) -> TraceWriter:
    """A background writer to this deployment's trace storage (``trace_storage``: probed once,
    or ``HYBRID_ES_TRACE_STORAGE``). ``options`` go to :class:`TraceWriter` (``max_queue``,
    ``batch``, ``flush_interval``, ``request_timeout``). The caller closes it."""
    return TraceWriter(client, trace_storage(client, settings), **options)


def search_tracer(
    writer: TraceWriter, settings: Settings, *, key: bytes | None = None
) -> SearchTracer:
    """The searcher's and packet service's hooks over ``writer``, as the settings ask (query
    text only with ``HYBRID_ES_TRACE_QUERY_TEXT``)."""
    return search_hook(
        writer, query_text=settings.trace_query_text, hash_key=key or hash_key(settings)
    )


class _Both:
    """Two ``on_response`` (or ``on_error``) hooks in order: the caller's, then the tracer's."""

    def __init__(self, first: Any, second: Any) -> None:
        self.first, self.second = first, second

    def __call__(self, *args: Any) -> None:
        try:
            self.first(*args)
        finally:
            self.second(*args)


def attach_traces(
    searcher: HybridSearcher,
    settings: Settings,
    *,
    tracer: SearchTracer | None = None,
    **writer_options: Any,
) -> SearchTracer:
    """Trace every search of ``searcher``: its ``on_response``/``on_error`` hooks (kept, and
    called first, where the caller set their own). Without ``tracer`` a writer is made
    (:func:`trace_writer`) and closed by ``searcher.close()`` (its result under ``traces``); a
    ``tracer`` given is the caller's to close (one writer shared by a process)."""
    if tracer is None:
        writer = trace_writer(searcher.client, settings, **writer_options)
        tracer = search_tracer(writer, settings, key=searcher.hash_key)
        searcher.add_closer("traces", lambda: close_writer(writer))
    on_response, on_error = searcher.on_response, searcher.on_error
    searcher.on_response = tracer if on_response is None else _Both(on_response, tracer)
    searcher.on_error = tracer.on_error if on_error is None else _Both(on_error, tracer.on_error)
    return tracer


def close_writer(writer: TraceWriter, timeout: float = 10.0) -> TraceWriterStats:
    """Close ``writer`` (flushing what is queued, for up to ``timeout`` seconds) and return its
    final counters; when it dropped any trace or failed, one WARNING says how many, why (by
    reason) and where: how a closed searcher, and the CLI at exit, report drops."""
    stats = writer.close(timeout)
    if stats.dropped or stats.errors:
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(stats.dropped_by.items()))
        log.warning(
            "traces: %d written, %d dropped%s, %d error(s) writing to %s (last: %s)",
            stats.written,
            stats.dropped,
            f" ({why})" if why else "",
            stats.errors,
            writer.index,
            stats.last_error,
        )
    return stats


def tracer_of(searcher: HybridSearcher) -> SearchTracer | None:
    """The tracer attached to ``searcher`` (:func:`attach_traces`), or None."""
    hook: Any = searcher.on_response
    while isinstance(hook, _Both):
        hook = hook.second
    return hook if isinstance(hook, SearchTracer) else None


def trace_stats(searcher: HybridSearcher) -> TraceWriterStats | None:
    """The counters of the searcher's trace writer (written, dropped, errors, queued), or None
    when it writes no traces."""
    tracer = tracer_of(searcher)
    return tracer.writer.stats() if tracer is not None else None


class NoTracer:
    """The hooks' shape, doing nothing: what the CLI hands a packet service when traces are
    off (``HYBRID_ES_TRACES=false``)."""

    def __call__(
        self, principal: Principal, response: SearchResponse, query: str | None = None
    ) -> None:
        return None

    def on_error(self, *args: Any) -> None:
        return None

    def packet_event(self, principal: Principal, event: Mapping[str, Any]) -> None:
        return None
