"""OpenTelemetry spans and metrics for searches and packets; a no-op without OpenTelemetry.

``pip install '.[otel]'`` brings ``opentelemetry-api``; the application configures the SDK
(providers, exporters) as it does for everything else, and hybrid-es reports to the global
providers (or to those given to :func:`configure`, e.g. in tests). Without the API installed,
:func:`span` hands back one shared do-nothing context manager and the ``record_*`` functions
return at once: the cost is a function call.

What is reported (nothing else, and never the query text or a record's text, as elasticsearch-py
leaves request bodies out of its spans):

- spans ``hybrid_es.search`` with a child per stage (``prepare``, ``embed``, ``retrieve``,
  ``fusion``, ``read_records``, ``authorize``, ``rerank``, ``assemble``) and
  ``hybrid_es.packet.<operation>``; attributes: the fusion path, the fallback kind, counts
  (hits, candidates, top_k), whether it reranked, the trace id, and on failure ``error.type``
  (the exception's class) with the span's status set to error;
- a span ``hybrid_es.ingest.batch`` per ingest batch: its documents, the chunks written,
  embedded, skipped unchanged, superseded and removed, the failed items and documents, and the
  milliseconds of each step (``read_ms``, ``plan_ms``, ``embed_ms``, ``bulk_ms``);
- metrics (meter ``hybrid_es``): ``hybrid_es.search.duration`` (histogram, ms, by ``stage``),
  ``hybrid_es.search.requests`` (counter, by ``outcome`` and ``fusion_path``),
  ``hybrid_es.search.refusals`` (counter, by ``reason``: a class of :mod:`hybrid_es.errors` or
  ``other``), ``hybrid_es.search.fallbacks`` (counter, by ``reason``: one of :data:`FALLBACKS`),
  ``hybrid_es.packet.duration`` (histogram, ms, by ``operation``),
  ``hybrid_es.packet.verdicts`` (counter, by ``verdict``), ``hybrid_es.traces.dropped``
  (counter, by ``reason``: one of :data:`TRACE_DROP_REASONS`) and ``hybrid_es.writes.refused``
  (counter, by ``operation``, ``write`` or ``delete``, and ``reason``: one of
  ``ingest.authority.REFUSALS``). Every attribute takes a bounded
  set of values, so no instrument grows with the traffic.

A failing or slow backend: every call into OpenTelemetry here is guarded, so an exception in it
is logged (once a minute) and never reaches the search. The API's own calls are in-memory; the
bound on what a backend can add to a search is the application's span processor's: with the
SDK's ``BatchSpanProcessor`` and a ``PeriodicExportingMetricReader`` (the usual setup) export
runs on their own threads and a search pays only for queueing (a full queue drops spans).
A ``SimpleSpanProcessor`` exports inside ``span.end()``, on the searching thread: use it in
tests only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from hybrid_es import errors as _errors

log = logging.getLogger(__name__)

try:  # the optional extra: pip install '.[otel]'
    from opentelemetry import metrics as _otel_metrics
    from opentelemetry import trace as _otel_trace
except ImportError:  # pragma: no cover - exercised where the extra is absent
    _otel_metrics = None  # type: ignore[assignment]
    _otel_trace = None  # type: ignore[assignment]

ENABLED: Final = _otel_trace is not None
"""Whether ``opentelemetry-api`` is importable (else every function here does nothing)."""

SCOPE = "hybrid_es"
FALLBACKS: Final = ("no-native", "native-refused", "per-shard", "script-gate")
"""Why a search did not fuse the way it was asked to (the ``reason`` of
``hybrid_es.search.fallbacks``): the cluster cannot fuse natively (``auto`` fused client-side),
the cluster refused native fusion at query time, OpenSearch 2.19 fuses per shard over several
shards, or the embedder was not trained on the query's script (BM25 alone answered)."""

STAGES: Final = (
    "prepare",
    "embed",
    "retrieval",
    "fusion",
    "authorize",
    "rerank",
    "assemble",
    "total",
)
"""The stages whose latency ``hybrid_es.search.duration`` records (the searcher's timings)."""

_ERROR_CLASSES: Final = frozenset(
    name
    for name, value in vars(_errors).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)


class _State:
    tracer: Any = None
    tracer_given: bool = False
    """Whether :func:`configure` named a tracer provider (else the global one is used)."""
    meter: Any = None
    instruments: dict[str, Any] | None = None
    last_log: float = -1e18


_state = _State()


def configure(*, tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Report to these providers instead of the global ones (None: back to the global ones).
    For tests and applications that keep their providers apart; no effect without OTel."""
    if not ENABLED:
        return
    _state.tracer = tracer_provider.get_tracer(SCOPE) if tracer_provider is not None else None
    _state.tracer_given = tracer_provider is not None
    _state.meter = meter_provider.get_meter(SCOPE) if meter_provider is not None else None
    _state.instruments = None


def _tracer() -> Any:
    if _state.tracer is None:
        _state.tracer = _otel_trace.get_tracer(SCOPE)
    return _state.tracer


def _instruments() -> dict[str, Any]:
    if _state.instruments is None:
        meter = _state.meter or _otel_metrics.get_meter(SCOPE)
        _state.instruments = {
            "search.duration": meter.create_histogram(
                "hybrid_es.search.duration", unit="ms", description="search latency per stage"
            ),
            "search.requests": meter.create_counter(
                "hybrid_es.search.requests", description="searches by outcome and fusion path"
            ),
            "search.refusals": meter.create_counter(
                "hybrid_es.search.refusals", description="failed or refused searches by reason"
            ),
            "search.fallbacks": meter.create_counter(
                "hybrid_es.search.fallbacks", description="fusion fallbacks by reason"
            ),
            "packet.duration": meter.create_histogram(
                "hybrid_es.packet.duration", unit="ms", description="packet operation latency"
            ),
            "packet.verdicts": meter.create_counter(
                "hybrid_es.packet.verdicts", description="packet verdicts"
            ),
            "traces.dropped": meter.create_counter(
                "hybrid_es.traces.dropped", description="traces lost by the writer, by reason"
            ),
            "writes.refused": meter.create_counter(
                "hybrid_es.writes.refused",
                description="writes and deletes refused by the tenant's write authority",
            ),
        }
    return _state.instruments


def _failed(what: str, exc: BaseException) -> None:
    # Telemetry observes; its failure is logged once a minute and goes no further.
    now = time.monotonic()
    if now - _state.last_log >= 60.0:
        _state.last_log = now
        log.warning("telemetry failed (%s): %s: %s", what, type(exc).__name__, exc)


def error_reason(error: BaseException) -> str:
    """A bounded label for an error: its class name when hybrid-es defines it, else ``other``."""
    name = type(error).__name__
    return name if name in _ERROR_CLASSES else "other"


class _NoSpan:
    """What :func:`span` yields without OpenTelemetry (and when starting a span failed)."""

    __slots__ = ()

    def set(self, **attributes: Any) -> None:
        return None


_NO_SPAN: Final = _NoSpan()


class _Span:
    __slots__ = ("_span",)

    def __init__(self, span: Any) -> None:
        self._span = span

    def set(self, **attributes: Any) -> None:
        """Set ``hybrid_es.<name>`` attributes (None values are left out); never raises."""
        try:
            if self._span.is_recording():
                for k, v in attributes.items():
                    if v is not None:
                        self._span.set_attribute(f"hybrid_es.{k}", v)
        except Exception as exc:
            _failed("attribute", exc)


@contextmanager
def _otel_span(name: str, attributes: Mapping[str, Any]) -> Iterator[_Span | _NoSpan]:
    try:
        cm = _tracer().start_as_current_span(
            name,
            attributes={f"hybrid_es.{k}": v for k, v in attributes.items() if v is not None},
            record_exception=False,
            set_status_on_exception=False,
        )
        raw = cm.__enter__()
    except Exception as exc:
        _failed("span start", exc)
        yield _NO_SPAN
        return
    error: BaseException | None = None
    try:
        yield _Span(raw)
    except BaseException as exc:
        error = exc
        try:
            raw.set_attribute("error.type", type(exc).__name__)
            raw.set_status(_otel_trace.Status(_otel_trace.StatusCode.ERROR, type(exc).__name__))
        except Exception as inner:
            _failed("span error", inner)
        raise
    finally:
        try:
            # The exception is recorded above by class only: its message may quote the query.
            cm.__exit__(None, None, None)
        except Exception as exc:
            _failed("span end", exc)
        del error


@contextmanager
def _no_span(name: str, attributes: Mapping[str, Any]) -> Iterator[_NoSpan]:
    yield _NO_SPAN


def _tracing() -> bool:
    """Whether a span can reach a backend: a provider given to :func:`configure`, or a global one
    the application has set. Until it sets one, OpenTelemetry's global is a proxy that hands out
    non-recording spans, each still attached to and detached from the context: a search's eight
    spans took 0.26 ms here (timeit, 2-core machine under load), for nothing. The check runs per
    span, so spans start the moment the application sets its provider."""
    if _state.tracer_given:
        return True
    try:
        return not isinstance(_otel_trace.get_tracer_provider(), _otel_trace.ProxyTracerProvider)
    except Exception as exc:
        _failed("tracer provider", exc)
        return False


def span(name: str, **attributes: Any) -> Any:
    """A context manager around one stage: the span ``name`` (``hybrid_es.<stage>``) with
    ``hybrid_es.<key>`` attributes; it yields an object whose ``set(**attributes)`` adds more.
    An exception passing through sets ``error.type`` (its class) and the error status, and is
    re-raised unchanged. Without OpenTelemetry, or before the application sets a tracer
    provider: a do-nothing context manager."""
    if not ENABLED or not _tracing():
        return _no_span(name, attributes)
    return _otel_span(name, attributes)


def record_search(
    timings_ms: Mapping[str, float],
    *,
    fusion_path: str | None,
    fallback: str | None = None,
    error: BaseException | None = None,
) -> None:
    """One search's metrics: each stage's latency, the outcome and path, the fallback, the
    refusal reason. Never raises."""
    if not ENABLED:
        return
    try:
        ins = _instruments()
        for stage, ms in timings_ms.items():
            if stage in STAGES:
                ins["search.duration"].record(float(ms), {"stage": stage})
        outcome = "success" if error is None else "failure"
        ins["search.requests"].add(1, {"outcome": outcome, "fusion_path": fusion_path or "none"})
        if error is not None:
            ins["search.refusals"].add(1, {"reason": error_reason(error)})
        if fallback is not None:
            ins["search.fallbacks"].add(
                1, {"reason": fallback if fallback in FALLBACKS else "other"}
            )
    except Exception as exc:
        _failed("search metrics", exc)


PACKET_OPERATIONS: Final = ("packet_build", "packet_validate", "packet_render")
VERDICTS: Final = ("reuse", "refresh_required", "deny", "unverified", "withhold")


def record_packet(operation: str, ms: float, verdict: str | None = None) -> None:
    """One packet operation's latency and verdict. Never raises."""
    if not ENABLED:
        return
    try:
        ins = _instruments()
        op = operation if operation in PACKET_OPERATIONS else "other"
        ins["packet.duration"].record(float(ms), {"operation": op})
        if verdict is not None:
            ins["packet.verdicts"].add(1, {"verdict": verdict if verdict in VERDICTS else "other"})
    except Exception as exc:
        _failed("packet metrics", exc)


TRACE_DROP_REASONS: Final = ("queue_full", "closed", "unbuildable", "refused", "request_failed")
"""Why the trace writer lost a trace (``traces.writer.DROP_REASONS`` says what each means)."""


def record_trace_drops(n: int, reason: str) -> None:
    """``n`` traces lost for ``reason`` (one of :data:`TRACE_DROP_REASONS`, else ``other``).
    Never raises."""
    if not ENABLED or n <= 0:
        return
    try:
        label = reason if reason in TRACE_DROP_REASONS else "other"
        _instruments()["traces.dropped"].add(int(n), {"reason": label})
    except Exception as exc:
        _failed("trace metrics", exc)


WRITE_OPERATIONS: Final = ("write", "delete")
WRITE_REFUSALS: Final = ("hidden", "widens-acl")
"""``ingest.authority.REFUSALS``, repeated here so that this module imports nothing of ingest."""


def record_refused_write(operation: str, reason: str) -> None:
    """One write or delete that the write authority refused (``ingest.authority``): counted for
    operators, since the caller cannot tell a refused delete from one of a missing id. Never
    raises."""
    if not ENABLED:
        return
    try:
        op = operation if operation in WRITE_OPERATIONS else "other"
        label = reason if reason in WRITE_REFUSALS else "other"
        _instruments()["writes.refused"].add(1, {"operation": op, "reason": label})
    except Exception as exc:
        _failed("write metrics", exc)
