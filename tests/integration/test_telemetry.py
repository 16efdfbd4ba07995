"""OpenTelemetry on a real search (issue 25), with the SDK's in-memory exporters: a span per stage
with the fusion path, counts and outcome, the error class on a failing search, the stage latency
histograms and the counters; the client's own spans named by endpoint (elasticsearch-py); a span
per ingest batch with its counts and timings; and the query or record text nowhere in what is
exported.

By the conventions (issue 39 item 5): the ingest and packet spans carry OpenTelemetry's database
attributes, the duration histograms are in seconds, a healthy connect, a new tenant's first ingest
and search and the packet operations make no error span (the client's own spans included), and
docs/telemetry.md lists exactly what is recorded."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hybrid_es import telemetry
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.deployment import HybridEs
from hybrid_es.errors import BadQueryError, UnknownTenantError
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.conftest import HashEmbedder, owner, travel_documents
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
    with HybridEs(deployment, embedder=HashEmbedder(), client=es, traces=False).searcher as s:
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
    with HybridEs(deployment, embedder=HashEmbedder(), client=es, traces=False).searcher as s:
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


def test_the_clients_spans_are_named_by_endpoint(es, deployment, settings, otel, monkeypatch):  # noqa: F811
    """elasticsearch-py names its span after the endpoint (``msearch``, ``search``) only for a
    typed API call; a bare ``perform_request`` is a span named ``POST``. opensearch-py makes no
    spans at all, so there is nothing of the client's to name on OpenSearch."""
    if es.flavor != "elasticsearch":
        pytest.skip("opensearch-py makes no OpenTelemetry spans of its own")
    import elasticsearch._otel

    from hybrid_es.cluster.engine import connect

    spans, _ = otel
    tracer = telemetry._tracer()  # the in-memory provider's, for the client too
    # Every elasticsearch-py client made from now on (and each ``.options()`` copy) traces here.
    monkeypatch.setattr(elasticsearch._otel, "_tracer", tracer)
    engine = connect(settings)
    spans.clear()  # what connecting asked (node info), before the search
    engine.refresh(deployment.chunks_index)
    with HybridEs(deployment, embedder=HashEmbedder(), client=engine, traces=False).searcher as s:
        resp = s.search(QUERY, AGENT, STAY, now=NOW)
    assert resp.hits
    finished = spans.get_finished_spans()
    # elasticsearch-py 9 follows the newer semantic conventions (``db.system.name``,
    # ``db.operation.name``), 8 the older ones (``db.system``, ``db.operation``).
    client = [
        sp
        for sp in finished
        if "elasticsearch" in (sp.attributes.get("db.system.name"), sp.attributes.get("db.system"))
    ]
    names = {sp.name for sp in client}
    assert "msearch" in names  # the legs
    assert "indices.refresh" in names
    assert not names & {"GET", "POST", "PUT", "HEAD", "DELETE"}, names
    by_id = {sp.context.span_id: sp for sp in finished}
    legs = next(sp for sp in client if sp.name == "msearch")
    assert by_id[legs.parent.span_id].name == "hybrid_es.legs"  # under the stage that sent it
    operation = legs.attributes.get("db.operation.name", legs.attributes.get("db.operation"))
    assert operation == "msearch"
    exported = json.dumps([dict(sp.attributes or {}) for sp in client], default=str)
    for word in ("KYO-H12", "roll-in", "shower", "kyo-h12"):
        assert word not in exported  # the client leaves bodies out by default


def test_the_clients_spans_never_hold_a_body_even_when_the_variable_asks(
    es,
    deployment,  # noqa: F811
    settings,
    otel,
    monkeypatch,
):
    """``OTEL_PYTHON_INSTRUMENTATION_ELASTICSEARCH_CAPTURE_SEARCH_QUERY=raw`` makes
    elasticsearch-py put each search body in its span (``db.query.text``): the query text and
    the policy filter, the caller's user id and groups among it. The clients hybrid-es builds
    (blocking and async, and their ``.options()`` copies) leave it out; a client built
    directly, with the same settings, shows what the variable does."""
    if es.flavor != "elasticsearch":
        pytest.skip("opensearch-py makes no OpenTelemetry spans of its own")
    import asyncio

    import elasticsearch._otel

    from hybrid_es.cluster.client import BODY_CAPTURE_VARIABLE, es_client_kwargs
    from hybrid_es.cluster.engine import as_engine, connect
    from hybrid_es.retrieval.async_searcher import AsyncHybridSearcher

    spans, _ = otel
    monkeypatch.setattr(elasticsearch._otel, "_tracer", telemetry._tracer())
    monkeypatch.setenv(BODY_CAPTURE_VARIABLE, "raw")
    secret = (QUERY, "KYO-H12", "roll-in", AGENT.user_id, *AGENT.groups)

    def exported() -> str:
        client = [sp for sp in spans.get_finished_spans() if not sp.name.startswith("hybrid_es")]
        assert any(sp.name == "msearch" for sp in client)
        return json.dumps([dict(sp.attributes or {}) for sp in client], default=str)

    def search(engine: Any) -> None:
        spans.clear()
        with HybridEs(
            deployment, embedder=HashEmbedder(), client=engine, traces=False
        ).searcher as s:
            assert s.search(QUERY, AGENT, STAY, now=NOW).hits

    search(as_engine(elasticsearch.Elasticsearch(**es_client_kwargs(settings))))
    assert all(word in exported() for word in secret)  # the variable at work

    search(connect(settings))
    assert not [word for word in secret if word in exported()]

    spans.clear()
    with HybridEs(deployment, embedder=HashEmbedder(), client=es, traces=False).searcher as s:

        async def main() -> None:
            async with AsyncHybridSearcher.from_searcher(s, deployment) as asearcher:
                assert (await asearcher.search(QUERY, AGENT, STAY, now=NOW)).hits

        asyncio.run(main())
    assert not [word for word in secret if word in exported()]


def test_each_ingest_batch_is_a_span_with_its_counts_and_timings(es, bootstrapped, otel):
    tag = uuid.uuid4().hex[:10]
    chunks, state = f"hybrid-es-chunks-test-otel-{tag}", f"hybrid-es-corpus-state-test-otel-{tag}"
    docs = [d for d in travel_documents() if d.tenant == "demo-A"][:3]
    assert len(docs) == 3
    spans, _ = otel
    try:
        ing = Ingestor(
            es, HashEmbedder(), index=chunks, corpus_state=CorpusState(es, state), batch_size=2
        )
        first = ing.ingest(docs, owner("demo-A"), now=NOW)
        again = ing.ingest(docs, owner("demo-A"), now=NOW)  # unchanged: every document skipped
    finally:
        es.delete_index(f"{chunks},{state}")
    batches = [sp for sp in spans.get_finished_spans() if sp.name == "hybrid_es.ingest.batch"]
    assert len(batches) == 4  # 2 + 1 documents, twice
    attrs = [dict(sp.attributes) for sp in batches]
    assert [a["hybrid_es.documents"] for a in attrs] == [2, 1, 2, 1]
    assert sum(a["hybrid_es.chunks"] for a in attrs[:2]) == first.chunks > 0
    assert sum(a["hybrid_es.embedded"] for a in attrs[:2]) == first.embedded
    assert [a["hybrid_es.skipped_unchanged"] for a in attrs[2:]] == [2, 1]
    assert again.chunks == 0 and all(a["hybrid_es.chunks"] == 0 for a in attrs[2:])
    assert all(a["hybrid_es.failed"] == 0 == a["hybrid_es.failed_documents"] for a in attrs)
    for a in attrs:
        assert {"hybrid_es.read_ms", "hybrid_es.plan_ms", "hybrid_es.embed_ms"} <= set(a)
        assert a["hybrid_es.bulk_ms"] >= 0
    exported = json.dumps(attrs, default=str)
    for d in docs:  # no record text, no title
        assert d.body[:40] not in exported
        assert not d.title or d.title not in exported


# -- by the conventions (issue 39 item 5) ---------------------------------------------------------

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "telemetry.md"


@dataclass
class Recorded:
    """What one run of :func:`recorded` left in the in-memory exporter and reader."""

    healthy: list[Any]
    """The spans of the healthy part: connect, a new tenant's ingest and first search, packets."""
    spans: list[Any]
    """Every span, the two failing searches' included."""
    metrics: list[Any]
    flavor: str
    chunks: str
    packets: str
    search_total_ms: float
    search_total: tuple[int, float]
    """The ``total`` stage's count and sum right after the first search."""
    packet_ms: float


def _metrics_of(reader: Any) -> list[Any]:
    return [
        m
        for rm in reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    ]


@pytest.fixture(scope="module")
def recorded(es, bootstrapped, settings) -> Iterator[Recorded]:  # type: ignore[no-untyped-def]
    """Connect with the clients traced too, ingest a tenant new to its own indices, search as
    it (its first search), build, render and refresh a packet: the healthy part. Then a search
    that names an unknown tenant and one with an empty question (failing on purpose)."""
    import elasticsearch._otel
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from hybrid_es.cluster.engine import connect

    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    tag = uuid.uuid4().hex[:10]
    chunks = f"{settings.chunks_index}-test-conv-{tag}"
    state = f"{settings.corpus_state_index}-test-conv-{tag}"
    packets = f"{settings.packets_index}-test-conv-{tag}"
    for name in (chunks, state, packets):
        es.create_index(name)
    agent = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
    telemetry.configure(tracer_provider=tp, meter_provider=MeterProvider(metric_readers=[reader]))
    try:
        with pytest.MonkeyPatch.context() as mp:
            # Every elasticsearch-py client made from now on traces here, connect's included.
            mp.setattr(elasticsearch._otel, "_tracer", tp.get_tracer("elasticsearch-api"))
            engine = connect(settings)
            docs = [d for d in travel_documents() if d.tenant == "demo-A"][:3]
            ing = Ingestor(
                engine,
                HashEmbedder(),
                index=chunks,
                corpus_state=CorpusState(engine, state),
                batch_size=2,
            )
            assert ing.ingest(docs, owner("demo-A"), now=NOW).chunks > 0
            searcher = HybridSearcher(
                engine, HashEmbedder(), index=chunks, corpus_state_index=state
            )
            response = searcher.search(QUERY, agent, STAY, now=NOW)
            assert response.hits
            (first_total,) = [  # before the packets' own searches add to it
                p
                for m in _metrics_of(reader)
                if m.name == "hybrid_es.search.duration"
                for p in m.data.data_points
                if p.attributes["stage"] == "total"
            ]
            service = PacketService(
                searcher, PacketStore(engine, packets), ttl=timedelta(minutes=5)
            )
            built = service.build("JPN-2026-0417", "rate", QUERY, agent, STAY, now=NOW)
            pid = built.manifest.packet_id
            service.render(pid, agent, scope=STAY, now=NOW)
            service.refresh(pid, agent, now=NOW)
            healthy = list(exporter.get_finished_spans())
            with pytest.raises(UnknownTenantError):
                searcher.search(QUERY, Principal(tenant="no-such-tenant", user_id="x"), STAY)
            with pytest.raises(BadQueryError):
                searcher.search("   ", agent, STAY, now=NOW)
        result = Recorded(
            healthy=healthy,
            spans=list(exporter.get_finished_spans()),
            metrics=_metrics_of(reader),
            flavor=engine.flavor,
            chunks=chunks,
            packets=packets,
            search_total_ms=response.timings_ms["total"],
            search_total=(first_total.count, first_total.sum),
            packet_ms=sum(sum(v) for v in service.metrics.latencies.values()),
        )
    finally:
        telemetry.configure()
        es.delete_index(f"{chunks},{state},{packets}")
    yield result


def _server(settings: Any) -> dict[str, Any]:
    url = urlsplit(settings.node_urls()[0])
    return {"server.address": url.hostname, "server.port": url.port}


def test_ingest_and_packet_spans_carry_the_database_conventions(recorded, settings):
    server = _server(settings)
    batches = [sp for sp in recorded.spans if sp.name == "hybrid_es.ingest.batch"]
    assert len(batches) == 2  # 3 documents, 2 a batch
    for sp in batches:
        assert {k: sp.attributes.get(k) for k in (*server, "db.system.name")} == {
            **server,
            "db.system.name": recorded.flavor,
        }
        assert sp.attributes["db.operation.name"] == "ingest"
        assert sp.attributes["db.collection.name"] == recorded.chunks
    ops = {sp.name: sp for sp in recorded.spans if sp.name.startswith("hybrid_es.packet.")}
    assert set(ops) == {f"hybrid_es.packet.{o}" for o in ("build", "validate", "render", "refresh")}
    for name, sp in ops.items():
        assert sp.attributes["db.system.name"] == recorded.flavor
        assert sp.attributes["db.operation.name"] == name.removeprefix("hybrid_es.")
        assert sp.attributes["db.collection.name"] == recorded.packets
        assert {k: sp.attributes.get(k) for k in server} == server
    if recorded.flavor == "elasticsearch":  # the same names on the client's own spans
        bulk = next(sp for sp in recorded.spans if sp.name == "bulk")
        assert bulk.attributes["db.system.name"] == "elasticsearch"
        assert {k: bulk.attributes.get(k) for k in server} == server


def test_the_duration_histograms_are_in_seconds(recorded):
    by_name = {m.name: m for m in recorded.metrics}
    for name in ("hybrid_es.search.duration", "hybrid_es.packet.duration"):
        metric = by_name[name]
        assert metric.unit == "s"
        for point in metric.data.data_points:
            assert tuple(point.explicit_bounds) == telemetry.DURATION_BUCKETS
    count, seconds = recorded.search_total
    assert count == 1
    assert seconds == pytest.approx(recorded.search_total_ms / 1000)  # 12.5 ms is 0.0125
    packet = sum(p.sum for p in by_name["hybrid_es.packet.duration"].data.data_points)
    assert packet == pytest.approx(recorded.packet_ms / 1000)


def test_healthy_operations_make_no_error_span(recorded):
    """Connect (``GET /`` asked below the client's spans), a tenant's first ingest (its corpus
    state does not exist yet: a 404 the client expects), its first search, and packet builds
    and checks (each looks for a next version that does not exist): no span in error, the
    client's own included. On OpenSearch the client makes no spans; hybrid-es's are checked."""
    errors = [
        (sp.name, dict(sp.attributes or {}))
        for sp in recorded.healthy
        if sp.status.status_code.name == "ERROR"
    ]
    assert errors == []
    names = {sp.name for sp in recorded.healthy}
    assert not names & {"GET", "HEAD"}  # the connect probe makes no span
    if recorded.flavor == "elasticsearch":
        absent = [
            sp
            for sp in recorded.healthy
            if sp.name == "get" and sp.attributes.get("db.response.status_code") == "404"
        ]
        assert absent  # the expected 404s were asked, and are not errors
    # A failure is still an error: the unknown tenant's search.
    failed = [sp for sp in recorded.spans if sp.status.status_code.name == "ERROR"]
    assert {sp.attributes.get("error.type") for sp in failed} == {
        "UnknownTenantError",
        "BadQueryError",
    }


def _table(section: str) -> list[list[str]]:
    """The cells of the first table under ``## <section>`` of docs/telemetry.md (no header)."""
    text = REFERENCE.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    lines = body.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2 :]:  # past the header and its rule
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _names(cell: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", cell))


def test_the_reference_page_lists_every_span_and_attribute_recorded(recorded):
    documented = {}
    for name, operation, always, when in _table("Spans"):
        (span_name,) = _names(name)
        documented[span_name] = (next(iter(_names(operation)), None), _names(always), _names(when))
    seen: dict[str, list[tuple[dict[str, Any], bool]]] = {}
    for sp in recorded.spans:
        if sp.name.startswith("hybrid_es."):
            failed = sp.status.status_code.name == "ERROR"
            seen.setdefault(sp.name, []).append((dict(sp.attributes or {}), failed))
    assert set(seen) == set(documented)
    for name, instances in seen.items():
        operation, always, when = documented[name]
        for attributes, failed in instances:
            keys = set(attributes)
            if not failed:  # a span that failed part-way lacks what it would have set after
                assert always <= keys, f"{name} lacks {always - keys} (docs/telemetry.md: Always)"
            assert keys <= always | when, f"{name} records {keys - always - when}, not listed"
            assert attributes.get("db.operation.name") == operation, name


def test_the_reference_page_lists_every_metric_with_its_unit_and_attributes(recorded):
    documented = {}
    for name, instrument, unit, attributes in _table("Metrics"):
        (metric,) = _names(name)
        documented[metric] = (instrument, next(iter(_names(unit)), ""), _names(attributes))
    made = {m.name: (m.instrument, m.unit, set(m.attributes)) for m in telemetry.METRICS}
    assert documented == made
    kinds = {"Histogram": "histogram", "Sum": "counter"}
    assert recorded.metrics
    for metric in recorded.metrics:
        instrument, unit, attributes = documented[metric.name]
        assert (kinds[type(metric.data).__name__], metric.unit) == (instrument, unit)
        for point in metric.data.data_points:
            assert set(point.attributes) == attributes, metric.name
