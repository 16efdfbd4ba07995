"""Trace documents (pure builders) and the writer's behaviour when the cluster cannot take them."""

from __future__ import annotations

import json
import math
import socket
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hybrid_es.cluster.client import make_client
from hybrid_es.errors import AuthenticationError, BadQueryError
from hybrid_es.hashing import PROCESS_KEY, keyed_digest
from hybrid_es.models import Hit, RequestScope, SearchResponse
from hybrid_es.retrieval.policy import authorize
from hybrid_es.settings import Settings
from hybrid_es.traces.documents import (
    ECS_VERSION,
    MAX_TEXT_CHARS,
    STAGES,
    packet_trace,
    scrub,
    search_error_trace,
    search_trace,
    value_at,
)
from hybrid_es.traces.hooks import packet_hook, search_hook
from hybrid_es.traces.writer import TraceWriter
from tests.constants import AGENT, NOW

MAPPING = (
    Path(__file__).resolve().parents[2] / "es_templates/component/hybrid-es-trace-mappings.json"
)


def _mapping() -> dict[str, Any]:
    return json.loads(MAPPING.read_text(encoding="utf-8"))["template"]["mappings"]


def _unmapped(doc: dict[str, Any], props: dict[str, Any], prefix: str = "") -> list[str]:
    """Every key of ``doc`` that a strict mapping would refuse."""
    out = []
    for key, value in doc.items():
        if key not in props:
            out.append(prefix + key)
            continue
        sub = props[key].get("properties")
        if sub is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            out += _unmapped(item, sub, f"{prefix}{key}.")
    return out


def _source(doc_id: str, version: int, tenant: str = "demo-A") -> dict[str, Any]:
    return {
        "tenant": tenant,
        "doc_id": doc_id,
        "version": version,
        "acl_groups": ["travel-agents"],
        "valid_from": "2026-01-01",
        "valid_to": "2027-01-01",
        "booking_ids": [],
    }


def _hit(rank: int, doc_id: str, *, tenant: str = "demo-A", **kw: Any) -> Hit:
    src = _source(doc_id, 2, tenant)
    fields: dict[str, Any] = {
        "chunk_id": f"{doc_id}::v2::c0000",
        "doc_id": doc_id,
        "index": "hybrid-es-chunks",
        "source_version": 2,
        "title": "never stored in a trace",
        "text": "raw chunk text, never stored in a trace",
        "sparse_rank": rank,
        "dense_rank": rank + 1,
        "sparse_score": 7.5,
        "dense_score": 0.81,
        "fused_score": 1 / (60 + rank) + 1 / (60 + rank + 1),
        "final_rank": rank,
        "fusion_path": "client-rrf",
        "authorization": authorize(AGENT, RequestScope(), NOW, src),
        "source": src,
    }
    fields.update(kw)
    return Hit(**fields)


def _response(*hits: Hit, timings: dict[str, float] | None = None) -> SearchResponse:
    return SearchResponse(
        query_hash=keyed_digest(PROCESS_KEY, "KYO-H12 April roll-in shower rate"),
        fusion_path="client-rrf",
        fusion_reason="auto: no native rrf retriever (licence or module), fused client-side",
        reranked=False,
        rerank_note="no reranker configured",
        hits=hits,
        candidates=len(hits) + 3,
        timings_ms=timings
        if timings is not None
        else {"embed": 12.5, "retrieval": 30.25, "fusion": 0.1, "total": 45.0},
        legs={"sparse": tuple(h.chunk_id for h in hits), "dense": ()},
        request_digest="ab" * 32,
    )


# -- search_trace ----------------------------------------------------------------------------


def test_search_trace_records_hits_with_provenance_and_stage_latencies():
    resp = _response(_hit(1, "D1-current-contract"), _hit(2, "D2-accessibility-note"))
    doc = search_trace(AGENT, resp, now=NOW, trace_id="t1")
    # ECS where ECS has a field: when, which trace, what, how it ended and took, who asked.
    assert doc["@timestamp"] == "2026-04-01T09:00:00.000+00:00"
    assert doc["ecs"] == {"version": ECS_VERSION}
    assert doc["trace"] == {"id": "t1"}
    assert doc["event"] == {"action": "search", "outcome": "success", "duration": 45_000_000}
    assert doc["organization"] == {"id": "demo-A"} and doc["user"] == {"id": "agent-1"}
    assert "error" not in doc
    ours = doc["hybrid_es"]
    assert ours["scope_version"] == AGENT.scope_version
    assert ours["query_hash"] == resp.query_hash
    assert ours["fusion_path"] == "client-rrf"
    assert ours["reranked"] is False
    assert ours["hit_count"] == 2
    assert ours["candidate_count"] == 5
    assert ours["request_digest"] == "ab" * 32
    assert ours["policy_version"] == "policy-v1"
    assert ours["latency_ms"] == {"embed": 12.5, "retrieval": 30.25, "fusion": 0.1, "total": 45.0}
    first = ours["candidates"][0]
    assert first == {
        "chunk_id": "D1-current-contract::v2::c0000",
        "doc_id": "D1-current-contract",
        "source_version": 2,
        "sparse_rank": 1,
        "dense_rank": 2,
        "sparse_score": 7.5,
        "dense_score": 0.81,
        "fused_score": 1 / (60 + 1) + 1 / (60 + 2),
        "final_rank": 1,
        "allowed": True,
        "authorization": resp.hits[0].authorization.short(),
    }
    assert [c["final_rank"] for c in ours["candidates"]] == [1, 2]
    assert set(doc) == {"@timestamp", "ecs", "trace", "event", "organization", "user", "hybrid_es"}


def test_search_trace_never_holds_query_text_or_record_text_unless_asked():
    doc = search_trace(AGENT, _response(_hit(1, "D1-current-contract")), now=NOW)
    text = json.dumps(doc)
    assert "query_text" not in doc["hybrid_es"]
    assert "KYO-H12" not in text  # only the hash
    assert "raw chunk text" not in text and "never stored" not in text
    opted = search_trace(AGENT, _response(), now=NOW, query_text="KYO-H12 rate")
    assert opted["hybrid_es"]["query_text"] == "KYO-H12 rate"


def test_search_trace_clips_query_text_and_survives_lone_surrogates():
    doc = search_trace(AGENT, _response(), now=NOW, query_text="\ud800" + "x" * 5000)
    assert len(doc["hybrid_es"]["query_text"]) == MAX_TEXT_CHARS
    doc["hybrid_es"]["query_text"].encode("utf-8")  # would raise on a lone surrogate
    json.dumps(doc, ensure_ascii=False).encode("utf-8")


def test_search_trace_excludes_a_hit_of_another_tenant_or_a_denied_hit():
    # A SearchResponse never holds one (the searcher fails closed); the trace adds a second guard.
    other = _hit(2, "D5-other-tenant", tenant="demo-B")
    denied = _hit(3, "D0-stale-contract")
    denied = denied.model_copy(
        update={"authorization": denied.authorization.model_copy(update={"allowed": False})}
    )
    doc = search_trace(AGENT, _response(_hit(1, "D1-current-contract"), other, denied), now=NOW)
    assert [c["doc_id"] for c in doc["hybrid_es"]["candidates"]] == ["D1-current-contract"]
    assert doc["hybrid_es"]["hit_count"] == 1
    assert "D5-other-tenant" not in json.dumps(doc) and "D0-stale" not in json.dumps(doc)


def test_search_trace_drops_non_finite_scores_and_unknown_stages():
    hit = _hit(1, "D1-current-contract", rerank_score=math.nan, dense_score=math.inf)
    resp = _response(hit, timings={"embed": 1.0, "warmup": 5.0, "total": math.nan})
    doc = search_trace(AGENT, resp, now=NOW)
    assert doc["hybrid_es"]["latency_ms"] == {"embed": 1.0}
    assert "duration" not in doc["event"]  # no total, no duration
    assert "rerank_score" not in doc["hybrid_es"]["candidates"][0]
    assert "dense_score" not in doc["hybrid_es"]["candidates"][0]
    json.dumps(doc, allow_nan=False)  # Elasticsearch refuses NaN


def test_naive_now_is_taken_as_utc():
    doc = search_trace(AGENT, _response(), now=datetime(2026, 4, 1, 9, 0))
    assert doc["@timestamp"] == "2026-04-01T09:00:00.000+00:00"


def test_every_trace_field_is_in_the_strict_mapping():
    props = _mapping()["properties"]
    hit = _hit(1, "D1-current-contract", rerank_score=0.9)
    docs = [
        search_trace(
            AGENT,
            _response(hit, timings=dict.fromkeys(STAGES, 1.0)),
            now=NOW,
            query_text="q",
            error="late failure",
        ),
        search_error_trace(
            AGENT, query_hash="h", error=BadQueryError("empty"), now=NOW, query_text="q"
        ),
        packet_trace(
            AGENT,
            packet_id="JPN-2026-0417-packet-v1",
            operation="packet_validate",
            verdict="refresh_required",
            reasons=["member D1-current-contract moved to v3"],
            latency_ms={"packet_validate": 3.0, "total": 3.5},
            now=NOW,
            error=RuntimeError("x"),
        ),
    ]
    for doc in docs:
        assert _unmapped(doc, props) == []


def test_stages_are_exactly_the_mapped_latency_fields():
    ours = _mapping()["properties"]["hybrid_es"]["properties"]
    assert set(STAGES) == set(ours["latency_ms"]["properties"])


def test_ecs_fields_have_ecs_types():
    props = _mapping()["properties"]
    assert props["@timestamp"]["type"] == "date"
    for obj, name in [
        ("trace", "id"),
        ("event", "action"),
        ("event", "outcome"),
        ("organization", "id"),
        ("user", "id"),
        ("error", "type"),
        ("ecs", "version"),
    ]:
        assert props[obj]["properties"][name]["type"] == "keyword", (obj, name)
    assert props["event"]["properties"]["duration"]["type"] == "long"  # ECS: nanoseconds
    # ECS maps error.message as match_only_text; a keyword here, so the top failures aggregate.
    assert props["error"]["properties"]["message"]["type"] == "keyword"


def test_value_at_reads_dotted_paths():
    doc = search_trace(AGENT, _response(_hit(1, "D1-current-contract")), now=NOW)
    assert value_at(doc, "organization.id") == "demo-A"
    assert value_at(doc, "hybrid_es.latency_ms.total") == 45.0
    assert value_at(doc, "hybrid_es.packet.verdict") is None
    assert value_at(doc, "organization.id.deeper") is None


def test_the_mapping_stays_strict():
    assert _mapping()["dynamic"] == "strict"


# -- error and packet traces -----------------------------------------------------------------


def test_error_trace_keeps_type_and_scrubbed_message():
    exc = RuntimeError("boom at http://elastic:hunter2-secret@db:9200/x (password=hunter2-secret)")
    doc = search_error_trace(AGENT, query_hash="h1", error=exc, now=NOW, timings_ms={"embed": 2.0})
    assert doc["error"]["type"] == "RuntimeError"
    assert "hunter2-secret" not in json.dumps(doc)
    assert doc["error"]["message"].startswith("RuntimeError: boom at http://[redacted]@db:9200/x")
    assert doc["event"] == {"action": "search", "outcome": "failure"}
    ours = doc["hybrid_es"]
    assert ours["hit_count"] == 0 and ours["latency_ms"] == {"embed": 2.0}
    assert ours["query_hash"] == "h1"
    assert "candidates" not in ours and "fusion_path" not in ours


def test_error_trace_uses_the_library_message_and_hint():
    err = AuthenticationError("Elasticsearch at http://h:9200 rejected the credentials", hint="fix")
    doc = search_error_trace(AGENT, query_hash="h", error=err, now=NOW)
    assert doc["error"] == {
        "message": "Elasticsearch at http://h:9200 rejected the credentials (fix)",
        "type": "AuthenticationError",
    }


def test_error_text_is_clipped():
    doc = search_error_trace(AGENT, query_hash="h", error="e" * 5000, now=NOW)
    assert len(doc["error"]["message"]) == 1000 and "type" not in doc["error"]


def test_packet_validate_trace_marks_reuse():
    kw: dict[str, Any] = {
        "packet_id": "JPN-2026-0417-packet-v1",
        "operation": "packet_validate",
        "reasons": [],
        "latency_ms": 4.25,
        "now": NOW,
    }
    reuse = packet_trace(AGENT, verdict="reuse", **kw)
    assert reuse["hybrid_es"]["packet"] == {
        "id": "JPN-2026-0417-packet-v1",
        "verdict": "reuse",
        "reasons": [],
        "reuse": 1,
    }
    assert reuse["hybrid_es"]["latency_ms"] == {"packet_validate": 4.25, "total": 4.25}
    assert reuse["event"] == {
        "action": "packet_validate",
        "outcome": "success",
        "duration": 4_250_000,
    }
    refresh = packet_trace(AGENT, verdict="refresh_required", **{**kw, "reasons": ["watermark"]})
    packet = refresh["hybrid_es"]["packet"]
    assert packet["reuse"] == 0 and packet["reasons"] == ["watermark"]
    failed = packet_trace(AGENT, verdict=None, error=RuntimeError("x"), **kw)
    assert failed["event"]["outcome"] == "failure" and failed["error"]["type"] == "RuntimeError"


def test_packet_build_trace_has_no_reuse_flag():
    doc = packet_trace(
        AGENT,
        packet_id="p1",
        operation="packet_build",
        verdict=None,
        reasons=[],
        latency_ms=10.0,
        now=NOW,
    )
    assert doc["hybrid_es"]["packet"] == {"id": "p1", "reasons": []}
    assert doc["hybrid_es"]["latency_ms"] == {"packet_build": 10.0, "total": 10.0}


@pytest.mark.parametrize("missing", ["packet_id", "operation"])
def test_packet_trace_needs_an_id_and_an_operation(missing):
    kw: dict[str, Any] = {
        "packet_id": "p1",
        "operation": "packet_build",
        "verdict": None,
        "reasons": [],
        "latency_ms": 1.0,
        "now": NOW,
    }
    with pytest.raises(ValueError, match="packet_id and an operation"):
        packet_trace(AGENT, **{**kw, missing: ""})


# -- scrub -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("GET https://elastic:s3cr3t-pw@es.example:9200/_search failed", "s3cr3t-pw"),
        ("Authorization: Basic ZWxhc3RpYzpzM2NyM3Q=", "ZWxhc3RpYzpzM2NyM3Q="),
        (
            "authorization=ApiKey VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw==",
            "VnVh",
        ),
        ("header Bearer abcdefghijklmnop123", "abcdefghijklmnop123"),
        ('{"api_key": "k-123456-secret"}', "k-123456-secret"),
        ("password=hunter2&user=x", "hunter2"),
        ("HYBRID_ES_PASSWORD: hunter2", "hunter2"),
    ],
)
def test_scrub_removes_credentials(text, secret):
    assert secret not in scrub(text)
    assert "[redacted]" in scrub(text)


def test_scrub_leaves_ordinary_text_alone():
    text = (
        "index missing during search: index_not_found_exception: no such index [x] at http://h:9200"
    )
    assert scrub(text) == text


# -- the writer, against clusters that cannot take traces ------------------------------------


def _unreachable_client():
    # A real client to a closed port: connection refused, immediately.
    return make_client(Settings(url="http://127.0.0.1:1", max_retries=0))


def test_submit_to_an_unreachable_cluster_never_raises_and_counts_drops():
    writer = TraceWriter(_unreachable_client(), "hybrid-es-traces", flush_interval=0.05)
    docs = [search_trace(AGENT, _response(), now=NOW) for _ in range(5)]
    assert all(writer.submit(d) for d in docs)
    assert writer.flush(timeout=10)
    stats = writer.close()
    assert (stats.written, stats.dropped, stats.queued) == (0, 5, 0)
    assert stats.errors >= 1 and stats.last_error and "ConnectionError" in stats.last_error
    assert not writer.submit(docs[0])  # closed: dropped, counted, not raised
    assert writer.stats().dropped == 6


@pytest.fixture
def stalled_url():
    """A port that accepts connections and never answers: a cluster stuck mid-request."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    srv.close()


def test_a_full_queue_drops_without_blocking(stalled_url):
    client = make_client(Settings(url=stalled_url, max_retries=0))
    writer = TraceWriter(client, "t", max_queue=10, flush_interval=0.01, request_timeout=2)
    doc = search_trace(AGENT, _response(), now=NOW)
    writer.submit(doc)
    time.sleep(0.3)  # the thread is now inside a bulk request that will not return for 2 s
    t0 = time.perf_counter()
    accepted = [writer.submit(dict(doc)) for _ in range(50)]
    elapsed = time.perf_counter() - t0
    assert accepted.count(True) == 10 and accepted.count(False) == 40
    assert writer.stats().dropped == 40
    assert elapsed < 0.5  # 50 submits against a stalled cluster: no waiting on it
    stats = writer.close(timeout=30)
    assert stats.written == 0 and stats.dropped == 51 and stats.queued == 0


def test_writer_rejects_nonsense_sizes():
    with pytest.raises(ValueError, match="max_queue"):
        TraceWriter(_unreachable_client(), "t", max_queue=0)


def test_hook_never_raises_and_counts_what_it_could_not_build():
    writer = TraceWriter(_unreachable_client(), "t", flush_interval=0.05)
    tracer = search_hook(writer, query_text=True)
    tracer(AGENT, _response(_hit(1, "D1-current-contract")), "KYO-H12 rate")
    tracer.on_error(AGENT, "   ", BadQueryError("the query is empty"))
    tracer.on_error(AGENT, 42, BadQueryError("the query must be text"))
    tracer.packet(
        AGENT, packet_id="", operation="packet_build", verdict=None, reasons=[], latency_ms=1.0
    )
    stats = writer.close()
    assert stats.errors >= 2  # the unbuildable packet trace, and the refused connection
    # The two refused queries are counted, never traced: the trace and the packet are dropped.
    assert stats.refused == {"BadQueryError": 2}
    assert stats.dropped == 2 and stats.written == 0


def test_error_hook_hashes_like_the_searcher():
    seen: list[dict[str, Any]] = []

    class _Capture(TraceWriter):
        def submit(self, doc: dict[str, Any]) -> bool:
            seen.append(doc)
            return True

    writer = _Capture(_unreachable_client(), "t")
    tracer = search_hook(writer, clock=lambda: NOW)
    tracer.on_error(AGENT, "  KYO-H12\tApril  ", RuntimeError("x"))
    writer.close()
    assert seen[0]["hybrid_es"]["query_hash"] == keyed_digest(PROCESS_KEY, "KYO-H12 April")
    assert seen[0]["@timestamp"] == "2026-04-01T09:00:00.000+00:00"
    assert "query_text" not in seen[0]["hybrid_es"]


def test_packet_hook_turns_a_packet_service_event_into_a_trace():
    seen: list[dict[str, Any]] = []

    class _Capture(TraceWriter):
        def submit(self, doc: dict[str, Any]) -> bool:
            seen.append(doc)
            return True

    writer = _Capture(_unreachable_client(), "t")
    hook = packet_hook(writer, clock=lambda: NOW)
    # The event PacketService hands its on_event hook.
    hook(
        AGENT,
        {
            "operation": "packet_validate",
            "packet_id": "JPN-2026-0417-packet-v1",
            "verdict": "refresh_required",
            "reasons": ("corpus watermark moved",),
            "latency_ms": 3.5,
        },
    )
    hook(AGENT, {"operation": "packet_build"})  # malformed: counted, not raised
    stats = writer.close()
    assert len(seen) == 1 and stats.errors == 1
    (doc,) = seen
    packet = doc["hybrid_es"]["packet"]
    assert packet["verdict"] == "refresh_required" and packet["reuse"] == 0
    assert packet["reasons"] == ["corpus watermark moved"]
    assert doc["hybrid_es"]["latency_ms"] == {"packet_validate": 3.5, "total": 3.5}
    assert doc["organization"]["id"] == "demo-A" and doc["user"]["id"] == "agent-1"
