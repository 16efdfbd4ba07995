"""``hybrid_es.telemetry`` without a cluster: a no-op without OpenTelemetry, never failing its
caller when the backend breaks, bounded labels; the database conventions of an operation on the
cluster (``db_attributes``) and how they reach a span; the packet service's bounded latencies;
the CLI's JSON log lines."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from hybrid_es import telemetry
from hybrid_es.errors import BadQueryError, PolicyViolationError
from hybrid_es.packets.service import PacketMetrics


@pytest.fixture(autouse=True)
def _reset() -> Any:
    yield
    telemetry.configure()


def test_without_opentelemetry_everything_is_a_no_op(monkeypatch):
    monkeypatch.setattr(telemetry, "ENABLED", False)
    with telemetry.span("hybrid_es.search", top_k=3) as sp:
        sp.set(hits=1)
    assert telemetry.record_search({"total": 1.0}, fusion_path="client-rrf") is None
    assert telemetry.record_packet("packet_build", 1.0, "reuse") is None
    with pytest.raises(BadQueryError), telemetry.span("hybrid_es.search"):
        raise BadQueryError("the caller's error passes through unchanged")


def test_before_the_application_sets_a_tracer_provider_no_span_is_started(monkeypatch):
    """OpenTelemetry's global provider is a proxy until the application sets one: no span is
    started then (each would be non-recording, and still cost a context switch); once a real
    provider is global, the next span records."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    started: list[str] = []
    real = telemetry._otel_span
    monkeypatch.setattr(telemetry, "_otel_span", lambda n, a: started.append(n) or real(n, a))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    with telemetry.span("hybrid_es.search", top_k=3) as sp:
        sp.set(hits=1)
    assert started == [] and sp is telemetry._NO_SPAN
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    monkeypatch.setattr(telemetry._state, "tracer", provider.get_tracer(telemetry.SCOPE))
    with telemetry.span("hybrid_es.search", top_k=3) as sp:
        sp.set(hits=1)
    assert started == ["hybrid_es.search"]
    assert [s.name for s in exporter.get_finished_spans()] == ["hybrid_es.search"]


class _Broken:
    """A provider whose every call fails: a telemetry backend that is down or misconfigured."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"backend down ({name})")

        return fail


def test_a_broken_backend_never_fails_or_changes_the_caller(caplog):
    if not telemetry.ENABLED:
        pytest.skip("opentelemetry-api is not installed")

    class Provider:
        def get_tracer(self, *a: Any) -> Any:
            return _Broken()

        def get_meter(self, *a: Any) -> Any:
            return _Broken()

    telemetry.configure(tracer_provider=Provider(), meter_provider=Provider())
    ran = []
    with caplog.at_level(logging.WARNING, logger="hybrid_es.telemetry"):
        with telemetry.span("hybrid_es.search") as sp:
            sp.set(hits=2)
            ran.append(1)
        telemetry.record_search({"total": 1.0}, fusion_path="client-rrf", fallback="no-native")
        telemetry.record_packet("packet_build", 2.0)
        with pytest.raises(PolicyViolationError), telemetry.span("hybrid_es.search"):
            raise PolicyViolationError("refused")
    assert ran == [1]
    assert len(caplog.records) <= 1  # logged once a minute at most, whatever the rate


def test_error_labels_are_a_bounded_set():
    assert telemetry.error_reason(BadQueryError("x")) == "BadQueryError"
    assert telemetry.error_reason(ValueError("secret query text")) == "other"
    assert telemetry.error_reason(type("Made" + "Up", (Exception,), {})()) == "other"


def test_spans_and_metrics_with_the_sdk_carry_only_bounded_labels():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    telemetry.configure(meter_provider=MeterProvider(metric_readers=[reader]))
    for i in range(50):
        telemetry.record_search(
            {"total": float(i), f"made-up-{i}": 1.0},
            fusion_path="native-rrf",
            fallback=f"free text {i}",
            error=ValueError(str(i)),
        )
        telemetry.record_packet(f"op-{i}", 1.0, f"verdict-{i}")
    labels: set[tuple[str, str]] = set()
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                for p in m.data.data_points:
                    labels |= {(m.name, f"{k}={v}") for k, v in p.attributes.items()}
    assert ("hybrid_es.search.fallbacks", "reason=other") in labels
    assert ("hybrid_es.search.refusals", "reason=other") in labels
    assert ("hybrid_es.search.duration", "stage=total") in labels
    assert not any("made-up" in v or "free text" in v or "op-" in v for _, v in labels)
    assert len(labels) < 12


def test_packet_latencies_are_bounded():
    m = PacketMetrics(max_latencies=100)
    for i in range(10_000):
        m.record("packet_build", float(i), "reuse" if i % 2 else "deny")
    assert len(m.latencies["packet_build"]) == 100
    p50, p95 = m.percentiles("packet_build")
    assert 9_900 <= p50 <= p95 <= 9_999
    assert m.reuse_rate == 0.5


def test_cli_json_logs_are_one_object_per_line(capsys):
    from hybrid_es.cli.main import _configure_logging

    logger = logging.getLogger("hybrid_es")
    before = (logger.level, logger.propagate, list(logger.handlers))
    try:
        _configure_logging("INFO", "json")
        logging.getLogger("hybrid_es.retrieval.searcher").info("stage %s took %d ms", "embed", 3)
        logging.getLogger("hybrid_es.traces").debug("not at INFO")
    finally:
        logger.handlers[:] = before[2]
        logger.setLevel(before[0])
        logger.propagate = before[1]
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert set(rec) == {"time", "level", "logger", "message"}
    assert rec["level"] == "INFO" and rec["logger"] == "hybrid_es.retrieval.searcher"
    assert rec["message"] == "stage embed took 3 ms" and rec["time"].endswith("+00:00")


def test_cli_refuses_an_unknown_log_level():
    import typer

    from hybrid_es.cli.main import _configure_logging

    with pytest.raises(typer.BadParameter):
        _configure_logging("LOUD", "text")


class _Engine:
    def __init__(self, flavor: str, url: str) -> None:
        self.flavor, self.url = flavor, url


@pytest.mark.parametrize(
    ("flavor", "url", "address", "port"),
    [
        ("elasticsearch", "http://127.0.0.1:9200", "127.0.0.1", 9200),
        ("opensearch", "https://search.example", "search.example", 443),  # the scheme's port
        ("elasticsearch", "http://a:9201, http://b:9202", "a", 9201),  # the first node's
        ("elasticsearch", "http://[::1]:9200", "::1", 9200),
        ("elasticsearch", "", None, None),  # an engine made around a client without a URL
        ("elasticsearch", "http://a:port", None, None),
    ],
)
def test_the_database_conventions_of_one_operation(flavor, url, address, port):
    server = {"server.address": address, "server.port": port} if address else {}
    got = telemetry.db_attributes(_Engine(flavor, url), "ingest", "hybrid-es-chunks")
    assert got == {
        "db.system.name": flavor,
        "db.operation.name": "ingest",
        "db.collection.name": "hybrid-es-chunks",
        **server,
    }
    bare = telemetry.db_attributes(_Engine("other", ""), "msearch")
    assert bare == {"db.operation.name": "msearch"}  # no system it could name, no index


def test_the_conventions_go_on_the_span_as_they_are(monkeypatch):
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.configure(tracer_provider=provider)
    db = telemetry.db_attributes(_Engine("opensearch", "https://os:9400"), "ingest", "chunks")
    with telemetry.span("hybrid_es.ingest.batch", db, documents=2, missing=None) as sp:
        sp.set(chunks=7)
    (span,) = exporter.get_finished_spans()
    assert dict(span.attributes or {}) == {
        **db,
        "hybrid_es.documents": 2,
        "hybrid_es.chunks": 7,
    }
