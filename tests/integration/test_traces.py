"""Traces against the real cluster: written in the background, in scope, readable by the CLI and
aggregatable the way the Kibana dashboard aggregates them; a refusing cluster fails no search."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from hybrid_es.cli.traces import app as traces_app
from hybrid_es.cluster.client import make_client
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, OpenSearchEngine, _opensearch_client, as_engine
from hybrid_es.errors import (
    BadQueryError,
    EngineUnavailableError,
    SearchTimeoutError,
    TraceNotFoundError,
    UnknownTenantError,
)
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.traces.hooks import search_hook
from hybrid_es.traces.writer import TraceWriter
from tests.conftest import ingest_as_owners, travel_documents

pytestmark = pytest.mark.integration

QUERY = "KYO-H12 April roll-in shower rate"
AGENT = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
OTHER = Principal(tenant="demo-B", user_id="agent-9")
STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
NOW = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
SEED = (
    "D0-stale-contract",
    "D1-current-contract",
    "D2-accessibility-note",
    "D4-generic-brochure",
    "D5-other-tenant",
)
KIBANA = Path(__file__).resolve().parents[2] / "es_templates" / "kibana"


@pytest.fixture
def trace_index(es, bootstrapped, settings) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """An own traces index (the traces index template applies to it), deleted afterwards."""
    name = f"{settings.traces_index}-test-{uuid.uuid4().hex[:10]}"
    es.create_index(name)
    yield name
    es.delete_index(name)


@pytest.fixture
def corpus(es, embedder, fresh_indices):  # type: ignore[no-untyped-def]
    ing = Ingestor(
        es,
        embedder,
        index=fresh_indices["chunks"],
        corpus_state=CorpusState(es, fresh_indices["corpus_state"]),
    )
    ingest_as_owners(ing, travel_documents(*SEED), now=NOW)
    return fresh_indices


def _searcher(es, embedder, names, **kw):  # type: ignore[no-untyped-def]
    return HybridSearcher(
        es, embedder, index=names["chunks"], corpus_state_index=names["corpus_state"], **kw
    )


def _docs(es, index: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    es.refresh(index)
    resp = es.search(index, {"size": 100, "sort": [{"@timestamp": "asc"}, {"trace_id": "asc"}]})
    return [h["_source"] for h in resp["hits"]["hits"]]


def test_each_search_writes_one_trace_with_the_hits_provenance(es, embedder, corpus, trace_index):
    writer = TraceWriter(es, trace_index, flush_interval=0.05)
    searcher = _searcher(es, embedder, corpus, on_response=search_hook(writer))
    a = searcher.search(QUERY, AGENT, STAY, now=NOW)
    b = searcher.search(QUERY, OTHER, STAY, now=NOW)
    stats = writer.close()
    assert (stats.written, stats.dropped, stats.errors) == (2, 0, 0)

    docs = {d["tenant"]: d for d in _docs(es, trace_index)}
    assert set(docs) == {"demo-A", "demo-B"}
    da = docs["demo-A"]
    assert da["principal_id"] == "agent-1" and da["operation"] == "search"
    assert da["query_hash"] == a.query_hash and "query_text" not in da
    assert da["fusion_path"] == a.fusion_path
    assert da["hit_count"] == len(a.hits) and da["request_digest"] == a.request_digest
    assert set(da["latency_ms"]) >= {"embed", "retrieval", "fusion", "total"}
    assert [
        (c["chunk_id"], c["final_rank"], c.get("sparse_rank"), c.get("dense_rank"))
        for c in da["candidates"]
    ] == [(h.chunk_id, h.final_rank, h.sparse_rank, h.dense_rank) for h in a.hits]
    assert all(c["allowed"] and c["authorization"].startswith("allow:") for c in da["candidates"])
    # Nothing outside each caller's scope: not the superseded D0, not the other tenant's record.
    text_a = json.dumps(da)
    assert "D0-stale-contract" not in text_a and "D5-other-tenant" not in text_a
    assert [c["doc_id"] for c in docs["demo-B"]["candidates"]] == [h.doc_id for h in b.hits]
    assert {c["doc_id"] for c in docs["demo-B"]["candidates"]} == {"D5-other-tenant"}


def test_query_text_only_when_the_operator_opts_in(es, embedder, corpus, trace_index):
    writer = TraceWriter(es, trace_index, flush_interval=0.05)
    searcher = _searcher(es, embedder, corpus)
    resp = searcher.search(QUERY, AGENT, STAY, now=NOW)
    search_hook(writer, query_text=False, clock=lambda: NOW)(AGENT, resp, QUERY)
    opted_in = search_hook(writer, query_text=True, clock=lambda: NOW.replace(minute=1))
    opted_in(AGENT, resp, "  KYO-H12\x00 April roll-in shower rate ")
    writer.close()
    plain, opted = _docs(es, trace_index)
    assert "query_text" not in plain
    assert opted["query_text"] == QUERY  # the cleaned text the searcher actually ran


def test_failed_searches_and_packet_operations_are_traced(es, trace_index):
    writer = TraceWriter(es, trace_index, flush_interval=0.05)
    tracer = search_hook(writer)
    tracer.on_error(AGENT, "rate", SearchTimeoutError("the search timed out"), {"embed": 1.0})
    tracer.on_error(AGENT, "x" * 3000, EngineUnavailableError("cannot reach Elasticsearch"))
    # Refused requests are counted, never traced (issue 11 I): not a bad query, and not a
    # search claiming a tenant that has no corpus.
    tracer.on_error(AGENT, "", BadQueryError("the query is empty"), {"embed": 0.0})
    tracer.on_error(
        Principal(tenant="made-up", user_id="x"), "rate", UnknownTenantError("no corpus state")
    )
    for verdict in ("reuse", "reuse", "refresh_required", "unverified"):
        tracer.packet(
            AGENT,
            packet_id="JPN-2026-0417-packet-v1",
            operation="packet_validate",
            verdict=verdict,
            reasons=[] if verdict == "reuse" else [f"because {verdict}"],
            latency_ms=2.5,
        )
    tracer.packet(
        AGENT,
        packet_id="JPN-2026-0417-packet-v1",
        operation="packet_build",
        verdict=None,
        reasons=[],
        latency_ms={"packet_build": 40.0, "total": 41.0},
    )
    stats = writer.close()
    assert (stats.written, stats.dropped) == (7, 0)
    assert stats.refused == {"BadQueryError": 1, "UnknownTenantError": 1}
    docs = _docs(es, trace_index)
    assert "made-up" not in {d["tenant"] for d in docs}
    errors = [d for d in docs if d.get("error")]
    assert sorted(d["error_type"] for d in errors) == [
        "EngineUnavailableError",
        "SearchTimeoutError",
    ]
    assert all(d["hit_count"] == 0 and "candidates" not in d for d in errors)
    validations = [d for d in docs if d["operation"] == "packet_validate"]
    assert sorted(d["packet_verdict"] for d in validations) == [
        "refresh_required",
        "reuse",
        "reuse",
        "unverified",
    ]
    # The dashboard's reuse rate is the average of packet_reuse over validations.
    resp = es.search(
        trace_index,
        {
            "size": 0,
            "query": {"term": {"operation": "packet_validate"}},
            "aggs": {"rate": {"avg": {"field": "packet_reuse"}}},
        },
    )
    assert resp["aggregations"]["rate"]["value"] == pytest.approx(0.5)


def test_a_refusing_cluster_fails_no_search_and_counts_the_drops(es, embedder, corpus, trace_index):
    es.put_settings(trace_index, {"index.blocks.write": True})
    try:
        writer = TraceWriter(es, trace_index, flush_interval=0.05)
        searcher = _searcher(es, embedder, corpus, on_response=search_hook(writer))
        for _ in range(3):
            assert searcher.search(QUERY, AGENT, STAY, now=NOW).hits
        stats = writer.close()
    finally:
        es.put_settings(trace_index, {"index.blocks.write": False})
    assert (stats.written, stats.dropped) == (0, 3)
    assert stats.errors >= 1 and "403" in (stats.last_error or "")


def _unreachable(es: Engine, settings: Settings) -> Engine:
    """An engine of the flavour under test, with the environment's settings, at a port nothing
    listens on (built without a request: ``connect`` would fail)."""
    url = f"{urlsplit(settings.url).scheme}://127.0.0.1:1"
    s = settings.model_copy(update={"url": url, "max_retries": 0})
    if es.flavor == "opensearch":
        return OpenSearchEngine(_opensearch_client(s), url=s.redacted_url())
    return as_engine(make_client(s), url=s.redacted_url())


def test_an_unreachable_trace_cluster_fails_no_search(es, settings, embedder, corpus, trace_index):
    dead = _unreachable(es, settings)
    writer = TraceWriter(dead, trace_index, flush_interval=0.05)
    searcher = _searcher(es, embedder, corpus, on_response=search_hook(writer))
    assert searcher.search(QUERY, AGENT, STAY, now=NOW).hits
    stats = writer.close()
    assert (stats.written, stats.dropped) == (0, 1) and stats.errors >= 1


def test_a_refused_item_drops_only_itself(es, trace_index):
    writer = TraceWriter(es, trace_index, flush_interval=0.05)
    good = {"@timestamp": "2026-04-01T09:00:00Z", "trace_id": "good", "operation": "search"}
    bad = {**good, "trace_id": "bad", "not_in_the_mapping": 1}  # dynamic: strict refuses it
    writer.submit(good)
    writer.submit(bad)
    stats = writer.close()
    assert (stats.written, stats.dropped, stats.errors) == (1, 1, 1)
    assert "strict_dynamic_mapping_exception" in (stats.last_error or "")
    assert [d["trace_id"] for d in _docs(es, trace_index)] == ["good"]


# -- the CLI -----------------------------------------------------------------------------------


def _run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(traces_app, list(args), env={"COLUMNS": "250"})


def test_cli_tail_and_show_are_scoped_to_the_caller(es, embedder, corpus, trace_index):
    writer = TraceWriter(es, trace_index, flush_interval=0.05)
    searcher = _searcher(es, embedder, corpus, on_response=search_hook(writer))
    resp = searcher.search(QUERY, AGENT, STAY, now=NOW)
    search_hook(writer).on_error(OTHER, "rate", SearchTimeoutError("the search timed out"))
    writer.close()
    es.refresh(trace_index)
    a_user = ("--tenant", "demo-A", "--user", "agent-1")
    b_user = ("--tenant", "demo-B", "--user", "agent-9")

    # Issue 11 I: a caller reads their own traces only; an operator reads every tenant's.
    out = _run("tail", "--index", trace_index, *a_user)
    assert out.exit_code == 0, out.output
    assert "demo-A/agent-1" in out.output and "demo-B" not in out.output
    assert resp.fusion_path in out.output
    ops = _run("tail", "--index", trace_index, "--operator")
    assert "demo-A/agent-1" in ops.output and "demo-B/agent-9" in ops.output
    assert "error: SearchTimeoutError" in ops.output
    only_b = json.loads(
        _run("tail", "--index", trace_index, "--operator", "--tenant", "demo-B", "--json").stdout
    )
    assert [d["tenant"] for d in only_b] == ["demo-B"]
    (doc,) = json.loads(_run("tail", "--index", trace_index, *a_user, "--json").stdout)
    assert doc["tenant"] == "demo-A" and len(doc["candidates"]) == len(resp.hits)
    errors = json.loads(_run("tail", "--index", trace_index, *b_user, "--errors", "--json").stdout)
    assert [d["tenant"] for d in errors] == ["demo-B"]
    assert json.loads(_run("tail", "--index", trace_index, *b_user, "--json").stdout) == errors

    short = doc["trace_id"][:12]
    assert short in out.output
    shown = _run("show", short, "--index", trace_index, *a_user)
    assert shown.exit_code == 0, shown.output
    for h in resp.hits:
        assert h.chunk_id in shown.output
    assert "latency (ms)" in shown.output and resp.query_hash in shown.output
    as_json = _run("show", doc["trace_id"], "--index", trace_index, *a_user, "--json")
    assert json.loads(as_json.stdout) == doc

    # Someone else's trace reads exactly like one that does not exist.
    theirs = _run("show", doc["trace_id"], "--index", trace_index, *b_user)
    missing = _run("show", "0" * 32, "--index", trace_index, *a_user)
    assert isinstance(theirs.exception, TraceNotFoundError)
    assert str(theirs.exception) == str(missing.exception).replace("0" * 32, doc["trace_id"])
    assert "traces tail" in str(missing.exception)


def test_cli_on_a_missing_index_says_what_to_do():
    name = f"hybrid-es-traces-absent-{uuid.uuid4().hex[:8]}"
    out = _run("tail", "--index", name, "--tenant", "demo-A", "--user", "agent-1")
    assert out.exit_code != 0
    assert "bootstrap" in str(out.exception)


# -- the Kibana dashboard's aggregations, run for real ------------------------------------------


def _kql_to_query(kql: str) -> dict[str, Any]:
    """The KQL forms the saved objects use: ``f : "v"`` and ``f : *``, joined by ``and``."""
    filters: list[dict[str, Any]] = []
    for part in filter(None, (p.strip() for p in re.split(r"\s+and\s+", kql))):
        field, _, value = (s.strip() for s in part.partition(":"))
        filters.append(
            {"exists": {"field": field}} if value == "*" else {"term": {field: value.strip('"')}}
        )
    return {"bool": {"filter": filters}}


def _vis_request(vis_state: dict[str, Any], kql: str) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    buckets: list[tuple[str, dict[str, Any]]] = []
    for agg in vis_state["aggs"]:
        p = agg["params"]
        if agg["type"] == "count":
            continue
        if agg["type"] == "terms":
            body = {"field": p["field"], "size": p["size"]}
            if p.get("missingBucket"):
                body["missing"] = "__missing__"
            buckets.append((f"b{agg['id']}", {"terms": body}))
        elif agg["type"] == "percentiles":
            metrics[f"m{agg['id']}"] = {
                "percentiles": {"field": p["field"], "percents": p["percents"]}
            }
        else:
            metrics[f"m{agg['id']}"] = {agg["type"]: {"field": p["field"]}}
    aggs: dict[str, Any] = metrics
    for name, bucket in reversed(buckets):
        aggs = {name: {**bucket, "aggs": aggs}} if aggs else {name: bucket}
    return {"size": 0, "query": _kql_to_query(kql), "aggs": aggs}


def test_every_dashboard_visualization_runs_on_real_traces(es, embedder, corpus, trace_index):
    writer = TraceWriter(es, trace_index, flush_interval=0.05)
    tracer = search_hook(writer)
    searcher = _searcher(es, embedder, corpus, on_response=tracer)
    searcher.search(QUERY, AGENT, STAY, now=NOW)
    tracer.on_error(AGENT, "rate", SearchTimeoutError("the search timed out"))
    tracer.packet(
        AGENT, packet_id="p", operation="packet_validate", verdict="reuse", reasons=[], latency_ms=1
    )
    writer.close()
    es.refresh(trace_index)
    ran = 0
    for line in (KIBANA / "hybrid-es-traces.ndjson").read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if obj["type"] != "visualization":
            continue
        state = json.loads(obj["attributes"]["visState"])
        source = json.loads(obj["attributes"]["kibanaSavedObjectMeta"]["searchSourceJSON"])
        resp = es.search(trace_index, _vis_request(state, source["query"]["query"]))
        assert resp["hits"]["total"]["value"] >= 1, obj["id"]  # each panel has data
        ran += 1
    assert ran >= 4
