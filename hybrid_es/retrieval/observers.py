"""What a search tells those who watch it: the caller's hooks and the telemetry.

The hooks (``on_response``, ``on_error``: a trace writer, ``hybrid_es.traces.wiring``; a metrics
sink) and the telemetry (``hybrid_es.telemetry``: the root span's attributes and the search
metrics; no-ops without OpenTelemetry) observe a search, and observing never changes an answer:
a hook that raises is logged and the search's result or error stands as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hybrid_es import telemetry
from hybrid_es.errors import HybridEsError
from hybrid_es.models import Principal, SearchResponse
from hybrid_es.retrieval.fusion import fallback_kind

OnResponse = Callable[[Principal, SearchResponse, str], None]
"""Called with the caller, the response and the cleaned query text (e.g. ``traces.search_hook``)."""
OnError = Callable[[Principal, object, BaseException, dict[str, float]], None]
"""Called with the caller, the raw query, the error and the stage timings taken so far."""

log = logging.getLogger(__name__)


def notify(hook: Callable[..., None], *args: Any) -> None:
    """Call ``hook``; an exception it raises is logged, never passed on."""
    # Tracing and metrics hooks observe; they must never turn an answer into an error.
    try:
        hook(*args)
    except Exception:
        log.exception("a search hook failed; the search result is unaffected")


def search_failed(
    exc: BaseException,
    *,
    trace_id: str,
    principal: Principal,
    query: object,
    on_error: OnError | None,
    timings: dict[str, float],
    staged: dict[str, float],
    path: str | None,
) -> None:
    """A search raised ``exc``: a library error is given the search's trace id (``.trace_id``,
    unless it has one) and shown to ``on_error`` with the timings taken so far; the metrics
    count the error under the fusion path, when the legs had run."""
    if isinstance(exc, HybridEsError):
        exc.trace_id = exc.trace_id or trace_id
        if on_error is not None:
            notify(on_error, principal, query, exc, dict(timings))
    telemetry.record_search({**timings, **staged}, fusion_path=path, error=exc)


def search_answered(
    root: Any, response: SearchResponse, timings: dict[str, float], staged: dict[str, float]
) -> None:
    """A search answered: the root span ``root`` gets the path, the fallback (``fusion.
    fallback_kind``) and the counts; the metrics get every stage's time."""
    fallback = fallback_kind(response.fusion_path, response.fusion_reason)
    root.set(
        fusion_path=response.fusion_path,
        fallback=fallback,
        hits=len(response.hits),
        candidates=response.candidates,
        reranked=response.reranked,
    )
    telemetry.record_search(
        {**timings, **staged}, fusion_path=response.fusion_path, fallback=fallback
    )
