"""Traces against the real cluster: written in the background to the storage the cluster has (a
data stream, or an index per day), in scope, readable by the CLI, aggregatable the way the Kibana
dashboard aggregates them, and pruned a whole index at a time; a refusing cluster fails no
search."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from hybrid_es.cli.traces import app as traces_app
from hybrid_es.cluster.client import make_client
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, OpenSearchEngine, _opensearch_client, as_engine
from hybrid_es.cluster.trace_storage import create_data_stream, delete_data_stream
from hybrid_es.errors import (
    BadQueryError,
    EngineUnavailableError,
    SearchTimeoutError,
    TraceNotFoundError,
    UnknownTenantError,
)
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import OPERATOR_ROLE, Principal, RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.traces.hooks import search_hook
from hybrid_es.traces.reader import TraceReader
from hybrid_es.traces.storage import TraceStorage, trace_storage
from hybrid_es.traces.writer import TraceWriter
from tests.conftest import ingest_as_owners, travel_documents
from tests.constants import AGENT, NOW, QUERY

pytestmark = pytest.mark.integration

OTHER = Principal(tenant="demo-B", user_id="agent-9")
STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
SEED = (
    "D0-stale-contract",
    "D1-current-contract",
    "D2-accessibility-note",
    "D4-generic-brochure",
    "D5-other-tenant",
)
KIBANA = Path(__file__).resolve().parents[2] / "es_templates" / "kibana"


def drop_storage(es: Engine, storage: TraceStorage) -> None:
    """Delete a test's traces: its data stream and its dated indices."""
    if storage.is_stream:
        delete_data_stream(es, storage.stream)
    es.delete_index(storage.pattern)


@pytest.fixture
def storage(es, bootstrapped, settings) -> Iterator[TraceStorage]:  # type: ignore[no-untyped-def]
    """An own trace storage of the kind this cluster has (a data stream, or an index per day:
    the templates apply to its names), deleted afterwards."""
    s = trace_storage(es, settings, base=f"{settings.traces_index}-test-{uuid.uuid4().hex[:10]}")
    yield s
    drop_storage(es, s)


@pytest.fixture
def trace_index(es, storage) -> str:  # type: ignore[no-untyped-def]
    """Where this test's traces (dated NOW) are written, created up front: the data stream, or
    NOW's dated index."""
    if storage.is_stream:
        create_data_stream(es, storage.stream)
        return storage.stream
    name = storage.target({}, today=NOW.date())
    es.create_index(name)
    return name


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


def _hits(es, where: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    es.refresh(where)
    resp = es.search(where, {"size": 100, "sort": [{"@timestamp": "asc"}, {"trace.id": "asc"}]})
    return list(resp["hits"]["hits"])


def _docs(es, where: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    return [h["_source"] for h in _hits(es, where)]


def test_each_search_writes_one_trace_with_the_hits_provenance(es, embedder, corpus, storage):
    writer = TraceWriter(es, storage, flush_interval=0.05)
    searcher = _searcher(es, embedder, corpus, on_response=search_hook(writer))
    a = searcher.search(QUERY, AGENT, STAY, now=NOW)
    b = searcher.search(QUERY, OTHER, STAY, now=NOW)
    stats = writer.close()
    assert (stats.written, stats.dropped, stats.errors) == (2, 0, 0)

    docs = {d["organization"]["id"]: d for d in _docs(es, storage.pattern)}
    assert set(docs) == {"demo-A", "demo-B"}
    da, ours = docs["demo-A"], docs["demo-A"]["hybrid_es"]
    assert da["user"] == {"id": "agent-1"} and da["event"]["action"] == "search"
    assert da["event"]["outcome"] == "success" and da["event"]["duration"] > 0
    assert ours["query_hash"] == a.query_hash and "query_text" not in ours
    assert ours["fusion_path"] == a.fusion_path
    assert ours["hit_count"] == len(a.hits) and ours["request_digest"] == a.request_digest
    assert set(ours["latency_ms"]) >= {"embed", "retrieval", "fusion", "total"}
    assert [
        (c["chunk_id"], c["final_rank"], c.get("sparse_rank"), c.get("dense_rank"))
        for c in ours["candidates"]
    ] == [(h.chunk_id, h.final_rank, h.sparse_rank, h.dense_rank) for h in a.hits]
    assert all(c["allowed"] and c["authorization"].startswith("allow:") for c in ours["candidates"])
    # Nothing outside each caller's scope: not the superseded D0, not the other tenant's record.
    text_a = json.dumps(da)
    assert "D0-stale-contract" not in text_a and "D5-other-tenant" not in text_a
    b_candidates = docs["demo-B"]["hybrid_es"]["candidates"]
    assert [c["doc_id"] for c in b_candidates] == [h.doc_id for h in b.hits]
    assert {c["doc_id"] for c in b_candidates} == {"D5-other-tenant"}


def test_query_text_only_when_the_operator_opts_in(es, embedder, corpus, trace_index):
    writer = TraceWriter(es, trace_index, flush_interval=0.05)
    searcher = _searcher(es, embedder, corpus)
    resp = searcher.search(QUERY, AGENT, STAY, now=NOW)
    search_hook(writer, query_text=False, clock=lambda: NOW)(AGENT, resp, QUERY)
    opted_in = search_hook(writer, query_text=True, clock=lambda: NOW.replace(minute=1))
    # Another trace of the same answer (its trace id is the search's: the same id is one trace).
    again = resp.model_copy(update={"trace_id": ""})
    opted_in(AGENT, again, "  KYO-H12\x00 April roll-in shower rate ")
    writer.close()
    plain, opted = _docs(es, trace_index)
    assert "query_text" not in plain["hybrid_es"]
    assert opted["hybrid_es"]["query_text"] == QUERY  # the cleaned text the searcher ran


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
    assert "made-up" not in {d["organization"]["id"] for d in docs}
    errors = [d for d in docs if d.get("error")]
    assert sorted(d["error"]["type"] for d in errors) == [
        "EngineUnavailableError",
        "SearchTimeoutError",
    ]
    assert all(d["event"]["outcome"] == "failure" for d in errors)
    assert all(d["hybrid_es"]["hit_count"] == 0 and "candidates" not in d for d in errors)
    validations = [d for d in docs if d["event"]["action"] == "packet_validate"]
    assert sorted(d["hybrid_es"]["packet"]["verdict"] for d in validations) == [
        "refresh_required",
        "reuse",
        "reuse",
        "unverified",
    ]
    # The dashboard's reuse rate is the average of hybrid_es.packet.reuse over validations.
    resp = es.search(
        trace_index,
        {
            "size": 0,
            "query": {"term": {"event.action": "packet_validate"}},
            "aggs": {"rate": {"avg": {"field": "hybrid_es.packet.reuse"}}},
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
    good = {"@timestamp": "2026-04-01T09:00:00Z", "trace": {"id": "good"}, "event": {}}
    bad = {**good, "trace": {"id": "bad"}, "not_in_the_mapping": 1}  # dynamic: strict refuses it
    writer.submit(good)
    writer.submit(bad)
    stats = writer.close()
    assert (stats.written, stats.dropped, stats.errors) == (1, 1, 1)
    assert "strict_dynamic_mapping_exception" in (stats.last_error or "")
    assert [d["trace"]["id"] for d in _docs(es, trace_index)] == ["good"]


# -- the CLI -----------------------------------------------------------------------------------


def _run(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(traces_app, list(args), env={"COLUMNS": "250", **(env or {})})


def test_cli_tail_and_show_are_scoped_to_the_caller(es, embedder, corpus, storage):
    writer = TraceWriter(es, storage, flush_interval=0.05)
    searcher = _searcher(es, embedder, corpus, on_response=search_hook(writer))
    resp = searcher.search(QUERY, AGENT, STAY, now=NOW)
    search_hook(writer).on_error(OTHER, "rate", SearchTimeoutError("the search timed out"))
    writer.close()
    es.refresh(storage.pattern)
    a_user = ("--tenant", "demo-A", "--user", "agent-1")
    b_user = ("--tenant", "demo-B", "--user", "agent-9")
    # The default read target: HYBRID_ES_TRACES_INDEX's storage (its pattern), no --index.
    env = {"HYBRID_ES_TRACES_INDEX": storage.base}

    # Issue 11 I: a caller reads their own traces only; an operator reads every tenant's.
    out = _run("tail", *a_user, env=env)
    assert out.exit_code == 0, out.output
    assert "demo-A/agent-1" in out.output and "demo-B" not in out.output
    assert resp.fusion_path in out.output
    ops = _run("tail", "--operator", env=env)
    assert "demo-A/agent-1" in ops.output and "demo-B/agent-9" in ops.output
    assert "error: SearchTimeoutError" in ops.output
    only_b = json.loads(_run("tail", "--operator", "--tenant", "demo-B", "--json", env=env).stdout)
    assert [d["organization"]["id"] for d in only_b] == ["demo-B"]
    (doc,) = json.loads(_run("tail", *a_user, "--json", env=env).stdout)
    assert doc["organization"]["id"] == "demo-A"
    assert len(doc["hybrid_es"]["candidates"]) == len(resp.hits)
    errors = json.loads(_run("tail", *b_user, "--errors", "--json", env=env).stdout)
    assert [d["organization"]["id"] for d in errors] == ["demo-B"]
    assert json.loads(_run("tail", *b_user, "--json", env=env).stdout) == errors
    # --index still names one index, data stream or pattern.
    again = _run("tail", "--index", storage.pattern, *a_user, "--json")
    assert json.loads(again.stdout) == [doc]

    trace_id = doc["trace"]["id"]
    short = trace_id[:12]
    assert short in out.output
    # Issue 39: at 80 columns every value is whole (it was mostly ellipses).
    narrow = _run("tail", *a_user, env={**env, "COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    assert "…" not in narrow.output and max(map(len, narrow.output.splitlines())) <= 80
    assert short in narrow.output and resp.fusion_path in narrow.output
    assert f"{len(resp.hits)} hit(s)" in narrow.output
    shown = _run("show", short, *a_user, env=env)
    assert shown.exit_code == 0, shown.output
    for h in resp.hits:
        assert h.chunk_id in shown.output
    assert "latency (ms)" in shown.output and resp.query_hash in shown.output
    assert "organization.id" in shown.output and "event.outcome" in shown.output
    as_json = _run("show", trace_id, *a_user, "--json", env=env)
    assert json.loads(as_json.stdout) == doc

    # Someone else's trace reads exactly like one that does not exist.
    theirs = _run("show", trace_id, *b_user, env=env)
    missing = _run("show", "0" * 32, *a_user, env=env)
    assert isinstance(theirs.exception, TraceNotFoundError)
    assert str(theirs.exception) == str(missing.exception).replace("0" * 32, trace_id)
    assert "traces tail" in str(missing.exception)


def test_cli_on_a_missing_index_says_what_to_do():
    name = f"hybrid-es-traces-absent-{uuid.uuid4().hex[:8]}"
    out = _run("tail", "--index", name, "--tenant", "demo-A", "--user", "agent-1")
    assert out.exit_code != 0
    assert "bootstrap" in str(out.exception)


# -- the Kibana dashboard's Lens panels, run for real -------------------------------------------
#
# Kibana cannot run here, so each Lens layer is translated into the aggregation Lens sends (its
# buckets nested in column order, date histogram -> terms / filters -> metrics, the layer's KQL
# as the query) and run on real traces. The translator reads only the forms the saved objects
# use; anything else fails loudly rather than passing unchecked.

_KQL_TOKEN = re.compile(r'\s*(\(|\)|"(?:[^"\\]|\\.)*"|[^\s():"]+|:)')
_QS_SPECIAL = re.compile(r'([+\-=&|><!(){}\[\]^"~?:\\/ ])')


def _kql_tokens(kql: str) -> list[str]:
    tokens, pos = [], 0
    while kql[pos:].strip():
        m = _KQL_TOKEN.match(kql, pos)
        assert m, f"KQL the translator cannot read: {kql!r} at {pos}"
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


def _kql_to_query(kql: str) -> dict[str, Any]:
    """KQL as Kibana sends it, for the forms used here: ``f : "v"`` (match_phrase), ``f : v``
    (match), ``f : v*`` (query_string), ``f : *`` (exists), ``not``, ``and``, ``or``, parentheses.
    """
    tokens = _kql_tokens(kql)
    if not tokens:
        return {"match_all": {}}

    def take(expected: str | None = None) -> str:
        tok = tokens.pop(0)
        assert expected is None or tok == expected, (kql, tok, expected)
        return tok

    def peek() -> str | None:
        return tokens[0] if tokens else None

    def or_expr() -> dict[str, Any]:
        parts = [and_expr()]
        while peek() == "or":
            take()
            parts.append(and_expr())
        return (
            parts[0] if len(parts) == 1 else {"bool": {"should": parts, "minimum_should_match": 1}}
        )

    def and_expr() -> dict[str, Any]:
        parts = [not_expr()]
        while peek() == "and":
            take()
            parts.append(not_expr())
        return parts[0] if len(parts) == 1 else {"bool": {"filter": parts}}

    def not_expr() -> dict[str, Any]:
        if peek() == "not":
            take()
            return {"bool": {"must_not": [not_expr()]}}
        if peek() == "(":
            take()
            inner = or_expr()
            take(")")
            return inner
        field = take()
        take(":")
        value = take()
        if value == "*":
            return {"exists": {"field": field}}
        if value.startswith('"'):
            return {"match_phrase": {field: json.loads(value)}}
        if "*" in value:
            escaped = _QS_SPECIAL.sub(r"\\\1", value)
            return {"query_string": {"fields": [field], "query": escaped}}
        return {"match": {field: value}}

    query = or_expr()
    assert not tokens, f"KQL left over: {tokens} in {kql!r}"
    return query


def _metric_agg(col: dict[str, Any]) -> dict[str, Any] | None:
    """A metric column's aggregation (None: a plain count, which is the bucket's doc_count)."""
    op, field, params = col["operationType"], col.get("sourceField"), col.get("params", {})
    agg: dict[str, Any] | None
    if op == "count":
        agg = None
    elif op == "percentile":
        agg = {"percentiles": {"field": field, "percents": [params["percentile"]]}}
    elif op in ("average", "sum", "min", "max"):
        agg = {{"average": "avg"}.get(op, op): {"field": field}}
    elif op == "last_value":
        agg = {
            "top_hits": {
                "size": 1,
                "sort": [{params["sortField"]: {"order": "desc"}}],
                "_source": {"includes": [field]},
            }
        }
    else:
        raise AssertionError(f"no translation for the metric {op}")
    if "filter" in col:
        q = _kql_to_query(col["filter"]["query"])
        return {"filter": q} if agg is None else {"filter": q, "aggs": {"value": agg}}
    return agg


def _bucket_agg(col: dict[str, Any], columns: dict[str, dict[str, Any]]) -> dict[str, Any]:
    op, params = col["operationType"], col.get("params", {})
    if op == "date_histogram":
        return {"date_histogram": {"field": col["sourceField"], "calendar_interval": "1h"}}
    if op == "filters":
        return {
            "filters": {
                "filters": {
                    f["label"]: _kql_to_query(f["input"]["query"]) for f in params["filters"]
                }
            }
        }
    if op == "terms":
        body: dict[str, Any] = {"field": col["sourceField"], "size": params["size"]}
        direction = params["orderDirection"]
        order = params["orderBy"]
        if order["type"] == "alphabetical":
            body["order"] = {"_key": direction}
        else:
            target = columns[order["columnId"]]
            assert target["operationType"] == "count" and "filter" not in target, order
            body["order"] = {"_count": direction}
        if params.get("missingBucket"):
            body["missing"] = "(missing value)"
        return {"terms": body}
    raise AssertionError(f"no translation for the bucket {op}")


def _lens_request(obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The search body for a Lens object's one layer, and that layer."""
    state = obj["attributes"]["state"]
    (layer,) = state["datasourceStates"]["formBased"]["layers"].values()
    columns = layer["columns"]
    buckets = [c for c in layer["columnOrder"] if columns[c]["isBucketed"]]
    aggs: dict[str, Any] = {}
    for cid in layer["columnOrder"]:
        if not columns[cid]["isBucketed"]:
            agg = _metric_agg(columns[cid])
            if agg is not None:
                aggs[cid] = agg
    for cid in reversed(buckets):
        agg = _bucket_agg(columns[cid], columns)
        aggs = {cid: {**agg, "aggs": aggs} if aggs else agg}
    body = {"size": 0, "query": _kql_to_query(state["query"]["query"]), "aggs": aggs}
    return body, layer


def _metric_value(col: dict[str, Any], bucket: dict[str, Any], cid: str) -> Any:
    if col["operationType"] == "count" and "filter" not in col:
        return bucket["doc_count"]
    node = bucket[cid]
    if "filter" in col:
        if col["operationType"] == "count":
            return node["doc_count"]
        node = node["value"]
    if col["operationType"] == "percentile":
        (value,) = node["values"].values()
        return value
    if col["operationType"] == "last_value":
        hits = node["hits"]["hits"]
        if not hits:
            return None
        value: Any = hits[0]["_source"]
        for part in col["sourceField"].split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value
    return node["value"]


def _lens_rows(resp: dict[str, Any], layer: dict[str, Any]) -> list[dict[str, Any]]:
    """The response as Lens's table: one row per innermost bucket, keyed by column id."""
    columns = layer["columns"]
    buckets = [c for c in layer["columnOrder"] if columns[c]["isBucketed"]]
    metrics = [c for c in layer["columnOrder"] if not columns[c]["isBucketed"]]
    rows: list[dict[str, Any]] = []

    def walk(node: dict[str, Any], depth: int, row: dict[str, Any]) -> None:
        if depth == len(buckets):
            rows.append({**row, **{m: _metric_value(columns[m], node, m) for m in metrics}})
            return
        cid = buckets[depth]
        raw = node[cid]["buckets"]
        items = raw.items() if isinstance(raw, dict) else ((b["key"], b) for b in raw)
        for key, b in items:
            walk(b, depth + 1, {**row, cid: key})

    # A layer without buckets is one row over every matching trace.
    walk({**resp.get("aggregations", {}), "doc_count": resp["hits"]["total"]["value"]}, 0, {})
    return rows


def _lens_objects() -> list[dict[str, Any]]:
    out = []
    for f in sorted(KIBANA.glob("*.ndjson")):
        for line in f.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            if obj["type"] == "lens":
                out.append(obj)
    return out


CHINESE = "京都酒店无障碍淋浴房四月价格"
"""A query in a script MiniLM was not trained on: the searcher answers from BM25 alone."""


def test_kql_translation_of_the_forms_the_panels_use():
    assert _kql_to_query('a : "x" and not b : C*') == {
        "bool": {
            "filter": [
                {"match_phrase": {"a": "x"}},
                {"bool": {"must_not": [{"query_string": {"fields": ["b"], "query": "C*"}}]}},
            ]
        }
    }
    assert _kql_to_query("a : client-* or (b : true and c : *)") == {
        "bool": {
            "should": [
                {"query_string": {"fields": ["a"], "query": "client\\-*"}},
                {"bool": {"filter": [{"match": {"b": "true"}}, {"exists": {"field": "c"}}]}},
            ],
            "minimum_should_match": 1,
        }
    }
    assert _kql_to_query("") == {"match_all": {}}


def test_every_lens_panel_runs_on_real_traces(  # type: ignore[no-untyped-def]
    es, embedder, corpus, trace_index, tiny_cross_encoder
):
    from hybrid_es.encoders.reranker import CrossEncoderReranker

    writer = TraceWriter(es, trace_index, flush_interval=0.05)
    tracer = search_hook(writer)
    # A fixed weight, so that fusion=auto tries the engine's own fusion (the spread default is
    # client-side by design, never a fallback) and the fallback panel has something to count.
    fixed = {"on_response": tracer, "alpha": 0.4}
    auto = _searcher(es, embedder, corpus, **fixed)
    fallback = _searcher(es, embedder, corpus, native_rrf=False, **fixed)
    client = _searcher(es, embedder, corpus, fusion="client", **fixed)
    reranking = _searcher(
        es, embedder, corpus, reranker=CrossEncoderReranker(tiny_cross_encoder), **fixed
    )
    auto.search(QUERY, AGENT, STAY, now=NOW)
    auto.search(QUERY, OTHER, now=NOW)  # a second tenant
    fallback.search(QUERY, AGENT, STAY, now=NOW)  # fusion=auto, native unavailable: client-side
    client.search(QUERY, AGENT, STAY, now=NOW)  # client-side as configured: no fallback
    gated = auto.search(CHINESE, AGENT, STAY, now=NOW)
    assert gated.fusion_path == "bm25-only"
    assert not gated.hits  # BM25 finds nothing in the English corpus: the "no results" column
    assert reranking.search(QUERY, AGENT, STAY, now=NOW).reranked
    tracer.on_error(AGENT, "rate", SearchTimeoutError("the search timed out"), {"embed": 1.0})
    for verdict in ("reuse", "refresh_required", "deny"):
        tracer.packet(
            AGENT,
            packet_id="p",
            operation="packet_validate",
            verdict=verdict,
            reasons=[],
            latency_ms=2.0,
        )
    tracer.packet(
        AGENT,
        packet_id="p",
        operation="packet_build",
        verdict=None,
        reasons=[],
        latency_ms={"packet_build": 40.0, "total": 41.0},
    )
    assert writer.close().written == 11
    es.refresh(trace_index)

    tables: dict[str, list[dict[str, Any]]] = {}
    for obj in _lens_objects():
        body, layer = _lens_request(obj)
        resp = es.search(trace_index, body)
        assert resp["hits"]["total"]["value"] >= 1, obj["id"]  # the layer's query finds traces
        rows = _lens_rows(resp, layer)
        assert rows, obj["id"]
        for cid, col in layer["columns"].items():
            # Every column has a value somewhere: a metric a number (or text), a bucket a key.
            values = [r[cid] for r in rows if r.get(cid) not in (None, 0)]
            assert values, f"{obj['id']}: column {cid} ({col['label']}) has no value"
        tables[obj["id"]] = rows

    def total(panel: str, split: str, metric: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in tables[panel]:
            out[r[split]] = out.get(r[split], 0) + r[metric]
        return out

    # The configured fusion method (linear or rrf), natively where this cluster can.
    native = auto.native_available(auto.fusion_method)
    paths = total("hybrid-es-lens-fusion-path", "path", "searches")
    assert paths["bm25-only"] == 1
    client_side = sum(n for path, n in paths.items() if path.startswith("client-"))
    assert client_side == 2 + (0 if native else 3)
    # The fallback panel tells a fallback from a configured client-side fusion, and the script
    # gate from the BM25-only evaluation pipeline, by what the searcher writes in fusion_reason.
    fallbacks = total("hybrid-es-lens-fusion-fallbacks", "fallback", "searches")
    assert fallbacks == {
        "client-side fallback (fusion=auto)": 1 + (0 if native else 3),
        "BM25 only (embedder script gate)": 1,
    }
    rerank = total("hybrid-es-lens-rerank", "reranked", "searches")
    assert rerank == {"reranked": 1, "not reranked": 5}
    (b_row,) = [r for r in tables["hybrid-es-lens-tenants"] if r["tenant"] == "demo-B"]
    assert b_row["searches"] == 1 and b_row["hits"] >= 1
    (a_row,) = [r for r in tables["hybrid-es-lens-tenants"] if r["tenant"] == "demo-A"]
    assert (a_row["searches"], a_row["failed"], a_row["empty"]) == (6, 1, 1)
    assert total("hybrid-es-lens-errors", "class", "errors") == {"SearchTimeoutError": 1}
    (error,) = tables["hybrid-es-lens-errors-table"]
    assert error["message"] == "the search timed out"
    verdicts = total("hybrid-es-lens-packet-verdicts", "verdict", "validations")
    assert verdicts == {"reuse": 1, "refresh_required": 1, "deny": 1}
    (reuse,) = tables["hybrid-es-lens-reuse-rate"]
    assert reuse["rate"] == pytest.approx(1 / 3) and reuse["validations"] == 3


# -- where traces are stored, and pruning them -------------------------------------------------


def test_traces_land_in_the_storage_the_cluster_has(es, caps, storage):
    # The capability report, the writer and bootstrap agree on one storage per cluster.
    assert storage.kind == caps.trace_storage
    if es.flavor == "opensearch":
        assert storage.kind == "data-stream"  # data streams, and no ISM policy of ours
    elif "data-streams" not in caps.modules:
        assert storage.kind == "dated-indices"  # the integ-test distribution lacks the module
    writer = TraceWriter(es, storage, flush_interval=0.05)
    tracer = search_hook(writer, clock=lambda: NOW)
    tracer.on_error(AGENT, "rate", SearchTimeoutError("the search timed out"))
    assert writer.close().written == 1
    (hit,) = _hits(es, storage.pattern)
    if storage.is_stream:
        assert hit["_index"].startswith(f".ds-{storage.stream}-")
    else:
        assert hit["_index"] == f"{storage.base}-2026.04.01"  # NOW's day, UTC
    assert hit["_id"] == hit["_source"]["trace"]["id"]


def test_a_retried_trace_is_written_once(es, storage):
    doc = {
        "@timestamp": NOW.isoformat(),
        "trace": {"id": uuid.uuid4().hex},
        "event": {"action": "search"},
        "organization": {"id": "demo-A"},
        "user": {"id": "agent-1"},
    }
    writer = TraceWriter(es, storage, flush_interval=0.05)
    writer.submit(doc)
    writer.flush()
    writer.submit(dict(doc))  # the same trace again: created by id, so refused as a conflict
    stats = writer.close()
    assert (stats.written, stats.dropped) == (1, 1) and "409" in (stats.last_error or "")
    assert len(_docs(es, storage.pattern)) == 1


def _write_at(es: Engine, storage: TraceStorage, *days: datetime) -> None:
    writer = TraceWriter(es, storage, flush_interval=0.05)
    for day in days:
        tracer = search_hook(writer, clock=lambda day=day: day)  # type: ignore[misc]
        tracer.on_error(AGENT, "rate", SearchTimeoutError("the search timed out"))
    stats = writer.close()
    assert stats.written == len(days), stats


OPS = Principal(tenant="ops", user_id="o", roles=(OPERATOR_ROLE,))


@pytest.fixture
def dated(es, bootstrapped, settings) -> Iterator[TraceStorage]:  # type: ignore[no-untyped-def]
    """Dated indices, on any cluster (the data stream template covers only ``*-stream``)."""
    s = TraceStorage(f"{settings.traces_index}-test-{uuid.uuid4().hex[:10]}", "dated-indices")
    yield s
    drop_storage(es, s)


def test_prune_deletes_whole_days_older_than_the_cutoff_and_nothing_else(es, dated):
    from hybrid_es.traces.retention import prune_traces

    _write_at(es, dated, NOW - timedelta(days=40), NOW - timedelta(days=31), NOW)
    other = f"{dated.base}-notes"  # matches the read pattern, is no dated index: never pruned
    es.create_index(other)
    days = [f"{dated.base}-2026.02.20", f"{dated.base}-2026.03.01", f"{dated.base}-2026.04.01"]
    assert es.indices(dated.pattern) == sorted([*days, other])

    dry = prune_traces(es, dated, OPS, older_than=timedelta(days=30), now=NOW, dry_run=True)
    assert dry.deleted == tuple(days[:2]) and dry.kept == (days[2],) and dry.dry_run
    assert es.indices(dated.pattern) == sorted([*days, other])  # a dry run deletes nothing

    # A cutoff of 2026-03-01 09:00: all of 02.20 is older than it, not all of 03.01.
    done = prune_traces(es, dated, OPS, older_than=timedelta(days=1), now=NOW - timedelta(days=30))
    assert done.deleted == (days[0],) and done.kept == tuple(days[1:])
    assert es.indices(dated.pattern) == sorted([*days[1:], other])
    assert done.storage == "dated-indices" and done.rolled_over is None
    es.refresh(dated.pattern)
    assert len(TraceReader(es, dated).tail(OPS)) == 2  # the two younger days' traces


def test_cli_prune_is_for_operators_and_refuses_nonsense(es, dated):
    _write_at(es, dated, NOW - timedelta(days=400), NOW)
    env = {"HYBRID_ES_TRACES_INDEX": dated.base, "HYBRID_ES_TRACE_STORAGE": "dated-indices"}
    for args, why in [
        (("--older-than", "30"), "not an age"),
        (("--older-than", "-3d"), "not an age"),
        (("--older-than", "0d"), "above zero"),
        (("--older-than", "1y"), "not an age"),
        (("--older-than", "30d"), "operators only"),  # no --operator
    ]:
        out = _run("prune", *args, env=env)
        assert out.exit_code == 2, out.output
        assert why in out.output, out.output
    assert len(es.indices(dated.pattern)) == 2  # nothing was deleted

    # The CLI prunes at the real now: an age that puts the cutoff two days before NOW.
    age = f"{(datetime.now(UTC) - NOW).days + 2}d"
    dry = _run("prune", "--older-than", age, "--operator", "--dry-run", "--json", env=env)
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.stdout)
    assert report["dry_run"] and report["deleted"] == [f"{dated.base}-2025.02.25"]
    done = _run("prune", "--older-than", age, "--operator", env=env)
    assert done.exit_code == 0, done.output
    assert "deleted 1 index(es)" in done.output and f"{dated.base}-2025.02.25" in done.output
    assert es.indices(dated.pattern) == [f"{dated.base}-2026.04.01"]


@pytest.fixture
def stream(es, caps, bootstrapped, settings) -> Iterator[TraceStorage]:  # type: ignore[no-untyped-def]
    if caps.trace_storage == "dated-indices":
        pytest.skip("the cluster has no data streams (trace storage: dated-indices)")
    s = TraceStorage(f"{settings.traces_index}-test-{uuid.uuid4().hex[:10]}", "data-stream")
    yield s
    drop_storage(es, s)


def test_prune_rolls_a_data_stream_over_and_deletes_old_backing_indices(es, stream):
    from hybrid_es.cluster.trace_storage import backing_indices, get_data_stream
    from hybrid_es.traces.retention import prune_traces

    old = NOW - timedelta(days=60)
    _write_at(es, stream, old, old + timedelta(days=1))
    (first,) = backing_indices(get_data_stream(es, stream.stream) or {})
    # Everything in the write index is older than the cutoff: roll over, then delete it.
    report = prune_traces(es, stream, OPS, older_than=timedelta(days=30), now=NOW)
    assert report.rolled_over == first and report.deleted == (first,)
    (second,) = backing_indices(get_data_stream(es, stream.stream) or {})
    es.refresh(stream.stream)
    assert second != first and TraceReader(es, stream).tail(OPS) == []

    # Old and recent traces in the write index: rolled over, and kept until the recent ones age.
    _write_at(es, stream, old, NOW)
    report = prune_traces(es, stream, OPS, older_than=timedelta(days=30), now=NOW)
    assert report.rolled_over == second and report.deleted == () and second in report.kept
    again = prune_traces(es, stream, OPS, older_than=timedelta(days=30), now=NOW, dry_run=True)
    assert again.rolled_over is None and again.deleted == ()  # the new write index is empty
    later = prune_traces(es, stream, OPS, older_than=timedelta(days=30), now=NOW + timedelta(31))
    assert later.deleted == (second,)
    assert TraceReader(es, stream).tail(OPS) == []


def test_bootstrap_reports_the_traces_index_of_the_earlier_layout(es, caps, settings, dated):
    from hybrid_es.cluster.bootstrap import bootstrap

    es.create_index(dated.base)  # a plain index under the traces name, as before data streams
    mine = settings.model_copy(update={"traces_index": dated.base})
    report = bootstrap(es, caps, mine, check=True)
    (legacy,) = [a for a in report.actions if a.status == "legacy"]
    assert legacy.name == dated.base and "not read" in legacy.diff
    es.delete_index(dated.base)
