"""OpenTelemetry on a real search (issue 25), with the SDK's in-memory exporters: a span per stage
with the fusion path, counts and outcome, the error class on a failing search, the stage latency
histograms and the counters; and the query text nowhere in what is exported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hybrid_es import telemetry
from hybrid_es.errors import BadQueryError, UnknownTenantError
from hybrid_es.models import Principal
from hybrid_es.traces.wiring import traced_searcher
from tests.conftest import HashEmbedder
from tests.integration.test_traces_by_default import (  # the module's indices and settings
    AGENT,
    NOW,
    QUERY,
    STAY,
    deployment,  # noqa: F401
)

pytestmark = pytest.mark.integration

sdk = pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK (dev extra)")


@pytest.fixture
def otel() -> Iterator[tuple[Any, Any]]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    telemetry.configure(tracer_provider=tp, meter_provider=MeterProvider(metric_readers=[reader]))
    yield spans, reader
    telemetry.configure()


def _metrics(reader: Any) -> dict[str, list[tuple[dict[str, Any], Any]]]:
    out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                for p in m.data.data_points:
                    value = getattr(p, "value", None)
                    if value is None:
                        value = p.count
                    out.setdefault(m.name, []).append((dict(p.attributes), value))
    return out


def test_a_search_reports_a_span_per_stage_and_its_metrics(es, deployment, otel):  # noqa: F811
    spans, reader = otel
    with traced_searcher(deployment, embedder=HashEmbedder(), client=es, traces=False) as s:
        resp = s.search(QUERY, AGENT, STAY, now=NOW)
    finished = {sp.name: sp for sp in spans.get_finished_spans()}
    for stage in (
        "search",
        "prepare",
        "embed",
        "retrieve",
        "legs",
        "fusion",
        "read_records",
        "authorize",
        "rerank",
        "assemble",
    ):
        assert f"hybrid_es.{stage}" in finished, stage
    root = finished["hybrid_es.search"].attributes
    assert root["hybrid_es.fusion_path"] == resp.fusion_path
    assert root["hybrid_es.hits"] == len(resp.hits)
    assert root["hybrid_es.trace_id"] == resp.trace_id
    assert root["hybrid_es.top_k"] == 10
    assert finished["hybrid_es.fusion"].parent.span_id == (
        finished["hybrid_es.retrieve"].context.span_id
    )
    assert finished["hybrid_es.retrieve"].parent.span_id == (
        finished["hybrid_es.search"].context.span_id
    )

    metrics = _metrics(reader)
    stages = {a["stage"] for a, _ in metrics["hybrid_es.search.duration"]}
    assert {"prepare", "embed", "retrieval", "fusion", "authorize", "total"} <= stages
    assert metrics["hybrid_es.search.requests"] == [
        ({"outcome": "success", "fusion_path": resp.fusion_path}, 1)
    ]

    exported = json.dumps(
        [
            {"name": sp.name, "attributes": dict(sp.attributes or {}), "events": len(sp.events)}
            for sp in spans.get_finished_spans()
        ]
        + [reader.get_metrics_data().to_json()],
        default=str,
    )
    for word in ("KYO-H12", "roll-in", "shower", "kyo-h12"):
        assert word not in exported  # no query text (nor record text) anywhere


def test_a_failing_search_records_its_error_class(es, deployment, otel):  # noqa: F811
    spans, reader = otel
    with traced_searcher(deployment, embedder=HashEmbedder(), client=es, traces=False) as s:
        with pytest.raises(UnknownTenantError):
            s.search(QUERY, Principal(tenant="no-such-tenant", user_id="x"), STAY, now=NOW)
        with pytest.raises(BadQueryError):
            s.search("   ", AGENT, STAY, now=NOW)
    roots = [sp for sp in spans.get_finished_spans() if sp.name == "hybrid_es.search"]
    assert [sp.attributes["error.type"] for sp in roots] == ["UnknownTenantError", "BadQueryError"]
    assert all(sp.status.status_code.name == "ERROR" for sp in roots)
    assert all(not sp.events for sp in spans.get_finished_spans())  # no exception message
    refusals = dict((a["reason"], v) for a, v in _metrics(reader)["hybrid_es.search.refusals"])
    assert refusals == {"UnknownTenantError": 1, "BadQueryError": 1}
    assert "no-such-tenant" not in json.dumps([dict(sp.attributes) for sp in roots])
