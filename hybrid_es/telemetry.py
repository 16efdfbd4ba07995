"""OpenTelemetry spans and metrics for searches, ingests and packets; a no-op without OpenTelemetry.

``pip install '.[otel]'`` brings ``opentelemetry-api``; the application configures the SDK
(providers, exporters) as it does for everything else, and hybrid-es reports to the global
providers (or to those given to :func:`configure`, e.g. in tests). Without the API installed,
:func:`span` hands back one shared do-nothing context manager and the ``record_*`` functions
return at once: the cost is a function call.

docs/telemetry.md is the reference: every span and metric, its attributes and units, in tables
that tests/integration/test_telemetry.py compares with what the SDK's in-memory exporter records.
In short:

- spans ``hybrid_es.search`` with a child per stage (``prepare``, ``embed``, ``retrieve``,
  ``legs``, ``fusion``, ``read_records``, ``authorize``, ``rerank``, ``assemble``), a span
  ``hybrid_es.ingest.batch`` per ingest batch (its counts and the milliseconds of each step) and
  ``hybrid_es.packet.<operation>``; their own attributes are ``hybrid_es.<name>``, and on
  failure ``error.type`` (the exception's class) with the span's status set to error;
- the spans that stand for an operation on the cluster also carry OpenTelemetry's database
  conventions (:func:`db_attributes`: ``db.system.name`` ``elasticsearch`` or ``opensearch``,
  ``db.operation.name``, ``db.collection.name``, ``server.address``, ``server.port``), the names
  elasticsearch-py's own spans use, so a trace view groups them with the client's;
- metrics (meter ``hybrid_es``, :data:`METRICS`): the duration histograms
  ``hybrid_es.search.duration`` (by ``stage``) and ``hybrid_es.packet.duration`` (by
  ``operation``) in seconds (unit ``s``, as the conventions measure durations; callers pass
  milliseconds, converted here), and counters of searches, refusals, fallbacks, packet
  verdicts, dropped traces and refused writes. Every attribute takes a bounded set of values,
  so no instrument grows with the traffic.

Never the query text, a record's text, a case id or a principal: request bodies stay out of
the client's spans too (``cluster.client.SpanSafeElasticsearch``, whatever
``OTEL_PYTHON_INSTRUMENTATION_ELASTICSEARCH_CAPTURE_SEARCH_QUERY`` says).

A failing or slow backend: every call into OpenTelemetry here is guarded, so an exception in it
is logged (once a minute) and never reaches the search. The API's own calls are in-memory; the
bound on what a backend can add to a search is the application's span processor's: with the
SDK's ``BatchSpanProcessor`` and a ``PeriodicExportingMetricReader`` (the usual setup) export
runs on their own threads and a search pays only for queueing (a full queue drops spans).
A ``SimpleSpanProcessor`` exports inside ``span.end()``, on the searching thread: use it in
tests only.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol
from urllib.parse import urlsplit

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

DURATION_BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
)
"""The duration histograms' bucket boundaries, in seconds: OpenTelemetry's advice for request
durations (0.005 to 10 s), with 0.5, 1 and 2.5 ms added for the sub-millisecond stages
(fusion, authorize). The SDK's default boundaries (0 to 10,000) were drawn for milliseconds: in
seconds every search would fall in the first bucket."""


@dataclass(frozen=True)
class Metric:
    """One instrument hybrid-es records (docs/telemetry.md lists them all, tested)."""

    name: str
    instrument: Literal["histogram", "counter"]
    unit: str
    """UCUM, as OpenTelemetry's conventions write it (``s``); empty for a plain count."""
    attributes: tuple[str, ...]
    description: str


METRICS: Final = (
    Metric("hybrid_es.search.duration", "histogram", "s", ("stage",), "search latency per stage"),
    Metric(
        "hybrid_es.search.requests",
        "counter",
        "",
        ("outcome", "fusion_path"),
        "searches by outcome and fusion path",
    ),
    Metric(
        "hybrid_es.search.refusals",
        "counter",
        "",
        ("reason",),
        "failed or refused searches by reason",
    ),
    Metric("hybrid_es.search.fallbacks", "counter", "", ("reason",), "fusion fallbacks by reason"),
    Metric(
        "hybrid_es.packet.duration",
        "histogram",
        "s",
        ("operation",),
        "packet operation latency",
    ),
    Metric("hybrid_es.packet.verdicts", "counter", "", ("verdict",), "packet verdicts"),
    Metric(
        "hybrid_es.traces.dropped",
        "counter",
        "",
        ("reason",),
        "traces lost by the writer, by reason",
    ),
    Metric(
        "hybrid_es.writes.refused",
        "counter",
        "",
        ("operation", "reason"),
        "writes and deletes refused by the tenant's write authority",
    ),
)
"""Every metric (meter ``hybrid_es``): the instruments are made from this, once."""

DB_SYSTEMS: Final = ("elasticsearch", "opensearch")
"""``db.system.name`` as OpenTelemetry's conventions name the two engines (and as
elasticsearch-py's own spans set it)."""


class Cluster(Protocol):
    """What :func:`db_attributes` reads of an engine (``cluster.engine.Engine``, the async one):
    its flavour and its URL (redacted: no credentials)."""

    @property
    def flavor(self) -> str: ...

    @property
    def url(self) -> str: ...


def db_attributes(
    cluster: Cluster, operation: str, collection: str | None = None
) -> dict[str, str | int]:
    """OpenTelemetry's database conventions for one operation on ``cluster``, for the spans of
    :func:`span` (its second argument): ``db.system.name`` (``elasticsearch`` or ``opensearch``),
    ``db.operation.name`` (``operation``: a client endpoint's name such as ``search``,
    ``msearch`` or ``bulk``, or hybrid-es's own such as ``ingest`` or ``packet.build``),
    ``db.collection.name`` (``collection``: the index; left out when None or empty) and
    ``server.address`` and ``server.port`` of the engine's URL (the first node's when it names
    several; the scheme's port when it names none; both left out when it cannot be read, e.g.
    an engine made around a client without a URL). Pure, never raises; the URL's parts are
    cached."""
    out: dict[str, str | int] = {}
    system = getattr(cluster, "flavor", None)
    if system in DB_SYSTEMS:
        out["db.system.name"] = str(system)
    out["db.operation.name"] = operation
    if collection:
        out["db.collection.name"] = collection
    out.update(_server(str(getattr(cluster, "url", "") or "")))
    return out


@functools.lru_cache(maxsize=64)
def _server(url: str) -> dict[str, str | int]:
    try:
        parts = urlsplit(url.split(",", 1)[0].strip())
        if not parts.hostname:
            return {}
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:  # a port that is not a number: the URL is for the client to refuse
        return {}
    out: dict[str, str | int] = {"server.address": parts.hostname}
    if port:
        out["server.port"] = port
    return out


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
            m.name.removeprefix(f"{SCOPE}."): _instrument(meter, m) for m in METRICS
        }
    return _state.instruments


def _instrument(meter: Any, m: Metric) -> Any:
    if m.instrument == "counter":
        return meter.create_counter(m.name, unit=m.unit, description=m.description)
    try:
        return meter.create_histogram(
            m.name,
            unit=m.unit,
            description=m.description,
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
    except TypeError:  # opentelemetry-api before 1.23 takes no advice: the SDK's boundaries
        return meter.create_histogram(m.name, unit=m.unit, description=m.description)


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
    """The span ``name`` with ``attributes`` (full names, as exported) set at its start."""
    try:
        cm = _tracer().start_as_current_span(
            name,
            attributes=attributes,
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


def span(name: str, conventions: Mapping[str, Any] | None = None, /, **attributes: Any) -> Any:
    """A context manager around one stage: the span ``name`` (``hybrid_es.<stage>``) with
    ``hybrid_es.<key>`` attributes (None values left out) and, for a stage that is an operation
    on the cluster, ``conventions`` as they are (:func:`db_attributes`), all set at the span's
    start, where samplers see them. It yields an object whose ``set(**attributes)`` adds more
    ``hybrid_es.<key>`` attributes. An exception passing through sets ``error.type`` (its class)
    and the error status, and is re-raised unchanged. Without OpenTelemetry, or before the
    application sets a tracer provider: a do-nothing context manager. E.g.::

        with telemetry.span(
            "hybrid_es.ingest.batch", telemetry.db_attributes(engine, "ingest", index), documents=2
        ) as sp:
            sp.set(chunks=7)
    """
    if not ENABLED or not _tracing():
        return _no_span(name, attributes)
    own = {f"hybrid_es.{k}": v for k, v in attributes.items() if v is not None}
    return _otel_span(name, {**conventions, **own} if conventions else own)


def record_search(
    timings_ms: Mapping[str, float],
    *,
    fusion_path: str | None,
    fallback: str | None = None,
    error: BaseException | None = None,
) -> None:
    """One search's metrics: each stage's latency (``timings_ms``, the searcher's milliseconds,
    recorded in seconds), the outcome and path, the fallback, the refusal reason. Never
    raises."""
    if not ENABLED:
        return
    try:
        ins = _instruments()
        for stage, ms in timings_ms.items():
            if stage in STAGES:
                ins["search.duration"].record(float(ms) / 1000.0, {"stage": stage})
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
    """One packet operation's latency (``ms``, recorded in seconds) and verdict. Never raises."""
    if not ENABLED:
        return
    try:
        ins = _instruments()
        op = operation if operation in PACKET_OPERATIONS else "other"
        ins["packet.duration"].record(float(ms) / 1000.0, {"operation": op})
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
