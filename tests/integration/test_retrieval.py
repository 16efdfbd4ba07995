"""The travel-copilot fixture end to end against the real cluster (brief: exact gates)."""

from __future__ import annotations

import json
import os
from datetime import date
from typing import Any

import pytest

from hybrid_es.cluster.capabilities import native_fusion_works
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.encoders.reranker import CrossEncoderReranker
from hybrid_es.errors import (
    BadQueryError,
    CapabilityMissingError,
    IndexMissingError,
    ModelError,
    UnknownTenantError,
)
from hybrid_es.evaluation.metrics import evaluate, ranking_to_run
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope, SearchRequest
from hybrid_es.retrieval import effects, search_run
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import MAX_QUERY_CHARS
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout
from tests.conftest import ingest_as_owners, sent_searches, travel_documents
from tests.constants import AGENT, NOW, QUERY

pytestmark = pytest.mark.integration

STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
SEED_FIXTURE = (
    "D0-stale-contract",
    "D1-current-contract",
    "D2-accessibility-note",
    "D4-generic-brochure",
    "D5-other-tenant",
)
FORBIDDEN = ("D0-stale-contract", "D5-other-tenant")


def _ingest(es, embedder, names, docs):  # type: ignore[no-untyped-def]
    ing = Ingestor(
        es, embedder, index=names["chunks"], corpus_state=CorpusState(es, names["corpus_state"])
    )
    return ingest_as_owners(ing, docs, now=NOW)


def _searcher(es, embedder, names, **kw):  # type: ignore[no-untyped-def]
    return HybridSearcher(
        es, embedder, index=names["chunks"], corpus_state_index=names["corpus_state"], **kw
    )


def _doc(chunk_id: str) -> str:
    return chunk_id.split("::")[0]


def test_seed_fixture_gates_on_the_fused_ranking(es, embedder, fresh_indices, tiny_cross_encoder):
    _ingest(es, embedder, fresh_indices, travel_documents(*SEED_FIXTURE))
    searcher = _searcher(
        es, embedder, fresh_indices, reranker=CrossEncoderReranker(tiny_cross_encoder)
    )
    resp = searcher.search(QUERY, AGENT, STAY, now=NOW, top_k=5)
    docs = [h.doc_id for h in resp.hits]
    # Exactly the three documents in scope, one hit each (one chunk each), nothing else; their
    # order is the random plumbing reranker's, so it is not gated here (the fused order is, below).
    assert sorted(docs) == ["D1-current-contract", "D2-accessibility-note", "D4-generic-brochure"]
    # D0 (superseded for the stay) and D5 (other tenant) reach no leg, no reranker input, no hit.
    seen = [
        *resp.legs["sparse"],
        *resp.legs["dense"],
        *resp.reranker_inputs,
        *(h.chunk_id for h in resp.hits),
    ]
    assert not [c for c in seen if _doc(c) in FORBIDDEN]
    # The default fusion (min-max linear, chosen by scripts/bench_fusion.py).
    assert resp.fusion_path in ("client-linear", "native-linear")
    # Provenance on every hit.
    for h in resp.hits:
        assert h.authorization.allowed and h.authorization.policy_version
        assert h.rerank_score is not None and h.fused_score > 0
        assert h.sparse_rank is not None or h.dense_rank is not None
        assert h.source_version >= 1
    # The metric gates on the fused order (before the random plumbing reranker).
    fused = sorted(resp.hits, key=lambda h: -h.fused_score)
    gains = {"q": {"D1-current-contract": 2, "D2-accessibility-note": 1, "D4-generic-brochure": 0}}
    ev = evaluate(gains, {"q": ranking_to_run([h.doc_id for h in fused])})
    assert ev.scores == {"recall@3": 1.0, "mrr": 1.0, "ndcg@3": 1.0}
    assert fused[-1].doc_id == "D4-generic-brochure"


class KnownScorer:
    """A deterministic reranker whose ranking is known in advance: a passage scores by the
    phrases it holds. It stands in for a cross-encoder so the rerank stage itself is gated (the
    model is not the subject here; the trained one is gated below, where the cache holds it)."""

    model_name = "known-scorer"
    weight = 1.0
    scripts = None

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    def covers(self, query: str) -> tuple[bool, str]:
        return True, "latin"

    def score(self, query: str, passages):  # type: ignore[no-untyped-def]
        return [max((v for k, v in self.table.items() if k in p), default=0.0) for p in passages]


SEED_GAINS = {"q": {"D1-current-contract": 2, "D2-accessibility-note": 1, "D4-generic-brochure": 0}}
TARGET = {"JPY 31,500": 3.0, "fold-down seat": 2.0, "cherry blossom": 1.0}
"""Scores the contract above the accessibility note above the brochure: the seed's labels."""
INVERTED = {"JPY 31,500": 1.0, "fold-down seat": 2.0, "cherry blossom": 3.0}


def test_the_rerank_stage_is_gated_on_the_reranked_order(es, embedder, fresh_indices):
    _ingest(es, embedder, fresh_indices, travel_documents(*SEED_FIXTURE))
    good = _searcher(es, embedder, fresh_indices, reranker=KnownScorer(TARGET))
    resp = good.search(QUERY, AGENT, STAY, now=NOW, top_k=5)
    assert resp.reranked and resp.hits[0].rerank_score == 3.0
    docs = [h.doc_id for h in resp.hits]
    assert {"D1-current-contract", "D2-accessibility-note"} <= set(docs[:3])
    assert docs[-1] == "D4-generic-brochure"  # the brief's post-rerank gate
    ev = evaluate(SEED_GAINS, {"q": ranking_to_run(docs)})
    assert ev.scores == {"recall@3": 1.0, "mrr": 1.0, "ndcg@3": 1.0}
    # The same gate fails when the stage orders badly: it measures the reranked order, which
    # follows the scorer and not the fused scores.
    bad = _searcher(es, embedder, fresh_indices, reranker=KnownScorer(INVERTED))
    worse = [h.doc_id for h in bad.search(QUERY, AGENT, STAY, now=NOW, top_k=5).hits]
    assert worse[:3] == ["D4-generic-brochure", "D2-accessibility-note", "D1-current-contract"]
    assert round(evaluate(SEED_GAINS, {"q": ranking_to_run(worse)}).scores["ndcg@3"], 6) == (
        0.619906
    )


def test_seed_fixture_gates_after_a_trained_reranker(es, embedder, fresh_indices):
    model = os.environ.get("HYBRID_ES_TEST_RERANKER")
    if not model:
        pytest.skip(
            "missing capability: a trained cross-encoder (no pretrained reranker weights install "
            "here; `hybrid-es reranker train ../shared/datasets/scifact --out "
            "~/.cache/hybrid-es/models/scifact-ce`, 20 min, and scripts/test.sh uses it)"
        )
    _ingest(es, embedder, fresh_indices, travel_documents(*SEED_FIXTURE))
    searcher = _searcher(es, embedder, fresh_indices, reranker=CrossEncoderReranker(model))
    resp = searcher.search(QUERY, AGENT, STAY, now=NOW, top_k=5)
    docs = [h.doc_id for h in resp.hits]
    assert {"D1-current-contract", "D2-accessibility-note"} <= set(docs[:3])
    assert docs[-1] == "D4-generic-brochure"


def test_historical_mode_admits_the_superseded_contract(es, embedder, fresh_indices):
    _ingest(es, embedder, fresh_indices, travel_documents(*SEED_FIXTURE))
    searcher = _searcher(es, embedder, fresh_indices)
    hist = searcher.search(
        QUERY, AGENT, RequestScope(as_of=date(2025, 6, 1), historical=True), now=NOW
    )
    docs = [h.doc_id for h in hist.hits]
    assert "D0-stale-contract" in docs
    assert "D1-current-contract" not in docs  # not yet valid on 2025-06-01
    assert "D5-other-tenant" not in docs
    current = searcher.search(QUERY, AGENT, RequestScope(as_of=date(2025, 6, 1)), now=NOW)
    assert "D0-stale-contract" not in [h.doc_id for h in current.hits]


def test_prompt_injection_in_text_and_metadata_changes_nothing(es, embedder, fresh_indices, wire):
    docs = travel_documents(*SEED_FIXTURE)
    _ingest(es, embedder, fresh_indices, docs)
    recording, log = wire
    searcher = _searcher(recording, embedder, fresh_indices)
    searcher.search(QUERY, AGENT, STAY, now=NOW)
    sent = sent_searches(log)
    _ingest(es, embedder, fresh_indices, travel_documents("D6-guest-review"))
    log.clear()
    after = searcher.search(QUERY, AGENT, STAY, now=NOW)
    # The same bytes went to the cluster (captured at the transport): the document cannot alter
    # the query, filter or settings. The read of the head's records names the keys found, so
    # it is compared without them.
    assert len(sent) == 2 and sent_searches(log) == sent
    review = [h for h in after.hits if h.doc_id == "D6-guest-review"]
    assert review and review[0].source["metadata"]["tenant"] == "demo-B"
    assert review[0].source["tenant"] == "demo-A"  # judged on its real fields
    # Its metadata claims tenant demo-B and an open ACL: demo-B still cannot see it.
    other = Principal(tenant="demo-B", user_id="agent-9")
    b = searcher.search(QUERY, other, STAY, now=NOW)
    assert "D6-guest-review" not in [h.doc_id for h in b.hits]
    assert {h.doc_id for h in b.hits} == {"D5-other-tenant"}


def _payloads(log: list[tuple[str, str, bytes]]) -> list[list[dict[str, Any]]]:
    return [
        [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
        for _, path, raw in log
        if path.endswith("/_msearch")
    ]


def test_the_legs_return_ids_and_only_the_head_is_read(es, embedder, fresh_indices, wire):
    """Top 2: the legs send no record back; one read under the same policy fetches the two
    hits' records. Top 50 (the whole window): the legs carry the records, and no read follows."""
    _ingest(es, embedder, fresh_indices, travel_documents(*SEED_FIXTURE))
    recording, log = wire
    searcher = _searcher(recording, embedder, fresh_indices, fusion="client")
    resp = searcher.search(QUERY, AGENT, STAY, top_k=2, now=NOW)
    legs, read = _payloads(log)
    assert [body["_source"] for body in legs[1::2]] == [False, False]
    (filt,) = [c for c in read[1]["query"]["bool"]["filter"] if "ids" in c]
    assert filt["ids"]["values"] == [f"demo-A::{h.chunk_id}" for h in resp.hits]
    assert read[1]["query"]["bool"]["filter"][0] == policy_filter(AGENT, STAY, NOW)
    assert all(h.source["tenant"] == "demo-A" and h.text for h in resp.hits)
    assert resp.candidates == len(resp.hits) == 2

    log.clear()
    deep = searcher.search(QUERY, AGENT, STAY, top_k=50, now=NOW)
    (legs,) = _payloads(log)
    assert all(body["_source"] == {"excludes": ["embedding"]} for body in legs[1::2])
    assert [h.chunk_id for h in deep.hits[:2]] == [h.chunk_id for h in resp.hits]


def test_a_record_that_leaves_scope_between_the_legs_and_the_read_is_not_returned(
    es, embedder, fresh_indices
):
    _ingest(es, embedder, fresh_indices, travel_documents(*SEED_FIXTURE))
    searcher = _searcher(es, embedder, fresh_indices, fusion="client")
    first = searcher.search(QUERY, AGENT, STAY, top_k=3, now=NOW).hits[0]
    ctx = searcher.context()
    sent: list[int] = []

    def send_then_delete(effect):  # type: ignore[no-untyped-def]
        out = ctx.answers.send(effect)
        sent.append(len(effect.searches))
        if len(sent) == 1:  # the legs are answered: the first hit's record goes (a deletion)
            es.request(
                "DELETE",
                f"/{fresh_indices['chunks']}/_doc/demo-A::{first.chunk_id}",
                params={"refresh": "true"},
            )
        return out

    steps = search_run.search_steps(ctx, SearchRequest(QUERY, AGENT, STAY, top_k=3, now=NOW))
    resp = effects.run(steps, send_then_delete)
    assert sent == [2, 1]  # the legs, then the read of the head
    assert first.chunk_id not in [h.chunk_id for h in resp.hits]
    assert len(resp.hits) == 2  # the head was three: the gone one is left out, nothing else


def test_a_chinese_query_over_the_chinese_fixture(es, embedder, fresh_indices):
    _ingest(
        es,
        embedder,
        fresh_indices,
        travel_documents(
            "D1-current-contract-zh",
            "D2-accessibility-note-zh",
            "D4-generic-brochure",
            "D5-other-tenant",
        ),
    )
    searcher = _searcher(es, embedder, fresh_indices)
    resp = searcher.search("KYO-H12 四月 无障碍淋浴间 房价", AGENT, STAY, now=NOW)
    assert resp.hits[0].doc_id == "D1-current-contract-zh"
    assert "D5-other-tenant" not in [h.doc_id for h in resp.hits]
    # MiniLM is English-only: the Chinese question is answered by the BM25 leg, and says so.
    assert resp.fusion_path == "bm25-only" and "not trained on cjk text" in resp.fusion_reason
    assert resp.legs["dense"] == () and "embed" not in resp.timings_ms
    latin = searcher.search("KYO-H12 April roll-in shower rate", AGENT, STAY, now=NOW)
    assert latin.fusion_path != "bm25-only" and latin.legs["dense"]


def test_the_multilingual_e5_embedder_end_to_end(es, fresh_indices):
    from hybrid_es.encoders.embedder import make_embedder

    e5 = make_embedder("e5")
    _ingest(
        es,
        e5,
        fresh_indices,
        travel_documents(
            "D1-current-contract-zh", "D2-accessibility-note-zh", "D4-generic-brochure"
        ),
    )
    resp = _searcher(es, e5, fresh_indices).search("无障碍淋浴间", AGENT, STAY, now=NOW)
    assert resp.legs["dense"][0].startswith("D2-accessibility-note-zh")


def test_native_fusion_is_refused_where_the_cluster_cannot_run_it(
    es, embedder, fresh_indices, caps
):
    if caps.native_rrf:
        pytest.skip("the cluster runs native rrf; the refusal path does not apply")
    _ingest(es, embedder, fresh_indices, travel_documents(*SEED_FIXTURE))
    with pytest.raises(CapabilityMissingError):
        _searcher(es, embedder, fresh_indices, fusion="native", fusion_method="rrf").search(
            QUERY, AGENT, STAY, now=NOW
        )
    auto = _searcher(es, embedder, fresh_indices, fusion_method="rrf").search(
        QUERY, AGENT, STAY, now=NOW
    )
    assert auto.fusion_path == "client-rrf"
    assert "cannot run rrf natively" in auto.fusion_reason and "client-side" in auto.fusion_reason


def test_native_and_client_fusion_agree(es, embedder, fresh_indices, caps):
    if not caps.native_rrf:
        pytest.skip("missing capability: native rrf retriever (rank-rrf module or licence)")
    _ingest(es, embedder, fresh_indices, travel_documents())
    # A fixed weight: native fusion takes one (the spread default is client-side).
    native = _searcher(es, embedder, fresh_indices, fusion="native", alpha=0.4)
    client = _searcher(es, embedder, fresh_indices, fusion="client", alpha=0.4)
    a = native.search(QUERY, AGENT, STAY, now=NOW, rerank=False, top_k=20)
    b = client.search(QUERY, AGENT, STAY, now=NOW, rerank=False, top_k=20)
    assert [h.chunk_id for h in a.hits] == [h.chunk_id for h in b.hits]
    for x, y in zip(a.hits, b.hits, strict=True):
        assert x.fused_score == pytest.approx(y.fused_score, rel=1e-6)  # ES scores are float32
        assert (x.sparse_rank, x.dense_rank) == (y.sparse_rank, y.dense_rank)


@pytest.mark.engine(
    "elasticsearch",
    reason="the file-realm reader users (rx-reader-demo-A/B) exist on the scripts/es.sh node "
    "only; OpenSearch's native document-level security is tested in "
    "tests/security/test_opensearch_dls.py",
)
def test_document_level_security_holds_without_the_client_filter(es, settings, embedder):
    """rx-reader-demo-B (file realm, role from es_templates/roles) sends a body with no policy
    filter at all to its own index, into which demo-A's records were misrouted: document-level
    security alone keeps demo-A's records out. (The role names only demo-B's own index, so
    demo-A's index is refused outright: tests/security/test_reader_matrix.py.)"""
    from hybrid_es.cluster.engine import connect
    from hybrid_es.errors import HybridEsError
    from tests.security.test_reader_matrix import LAYOUT

    own_b = LAYOUT.chunks_for("demo-B")
    misrouted = IndexLayout.fixed(own_b, corpus_state=LAYOUT.corpus_state)
    es.delete_index(f"{own_b},{LAYOUT.corpus_state}")
    try:
        ing = Ingestor(
            es, embedder, layout=misrouted, corpus_state=CorpusState(es, LAYOUT.corpus_state)
        )
        ingest_as_owners(ing, travel_documents(), now=NOW)
        try:
            reader = connect(settings.model_copy(update={"username": "rx-reader-demo-B"}))
            raw = reader.search(own_b, {"query": {"match_all": {}}, "size": 100})
        except HybridEsError as exc:  # the file-realm users are provisioned by scripts/es.sh
            pytest.fail(f"rx-reader-demo-B cannot search ({exc}); start it with scripts/es.sh")
        tenants = {h["_source"]["tenant"] for h in raw["hits"]["hits"]}
        assert tenants == {"demo-B"}
        knn = reader.search(
            own_b,
            {
                "knn": {
                    "field": "embedding",
                    "query_vector": embedder.embed_queries([QUERY])[0].tolist(),
                    "k": 20,
                    "num_candidates": 50,
                }
            },
        )
        assert {h["_source"]["tenant"] for h in knn["hits"]["hits"]} == {"demo-B"}
        # Even a searcher told it is demo-A gets nothing of demo-A through B's credentials.
        with pytest.raises(UnknownTenantError):
            HybridSearcher(
                reader, embedder, index=own_b, corpus_state_index=LAYOUT.corpus_state
            ).search(QUERY, AGENT, STAY, now=NOW)
    finally:
        es.delete_index(f"{own_b},{LAYOUT.corpus_state}")


def test_bad_input_gets_specific_errors(es, embedder, fresh_indices):
    _ingest(es, embedder, fresh_indices, travel_documents(*SEED_FIXTURE))
    s = _searcher(es, embedder, fresh_indices)
    with pytest.raises(BadQueryError):
        s.search("   ", AGENT, STAY, now=NOW)
    with pytest.raises(BadQueryError):
        s.search("x" * (MAX_QUERY_CHARS + 1), AGENT, STAY, now=NOW)
    with pytest.raises(BadQueryError):
        s.search(QUERY, AGENT, STAY, now=NOW, top_k=0)
    # Lucene syntax is just text: a normal answer, no parse error, no filter bypass.
    odd = s.search('tenant:demo-B OR * AND "KYO-H12" \\ {"bool": {}}', AGENT, STAY, now=NOW)
    assert all(h.source["tenant"] == "demo-A" for h in odd.hits)
    with pytest.raises(UnknownTenantError):
        s.search(QUERY, Principal(tenant="nobody", user_id="x"), STAY, now=NOW)
    with pytest.raises(IndexMissingError):
        HybridSearcher(
            es,
            embedder,
            index="hybrid-es-chunks-does-not-exist",
            corpus_state_index=fresh_indices["corpus_state"],
        ).search(QUERY, AGENT, STAY, now=NOW)


def test_an_index_built_with_another_model_is_refused(es, embedder, fresh_indices):
    from hybrid_es.encoders.embedder import E5Embedder

    _ingest(es, embedder, fresh_indices, travel_documents("D4-generic-brochure"))
    es.put_mapping(
        fresh_indices["chunks"],
        {"_meta": {"embedding_model": embedder.model_id, "embedding_dims": 384}},
    )
    with pytest.raises(ModelError, match="built with"):
        _searcher(es, E5Embedder(), fresh_indices).search(QUERY, AGENT, STAY, now=NOW)

    class Tiny:
        model_id = embedder.model_id
        dims = 8

        def embed_queries(self, texts):  # type: ignore[no-untyped-def]
            raise AssertionError("must be refused before embedding")

        embed_passages = embed_queries

    with pytest.raises(ModelError, match="384-dimensional"):
        _searcher(es, Tiny(), fresh_indices).search(QUERY, AGENT, STAY, now=NOW)


@pytest.mark.parametrize(
    ("pipeline", "method", "path"),
    [
        ("bm25", "rrf", "bm25-only"),
        ("dense", "rrf", "dense-only"),
        ("hybrid", "linear", "client-linear"),  # the default weight (spread): client-side
        ("hybrid", "linear", "auto-fixed"),
    ],
)
def test_evaluation_pipelines_keep_the_filter_and_report_their_path(
    es, embedder, fresh_indices, pipeline, method, path
):
    kw: dict[str, Any] = {}
    if path == "auto-fixed":  # a fixed weight runs natively where the engine can
        kw["alpha"] = 0.4
        path = "native-linear" if native_fusion_works(es, "linear")[0] else "client-linear"
    _ingest(es, embedder, fresh_indices, travel_documents(*SEED_FIXTURE))
    s = _searcher(es, embedder, fresh_indices, pipeline=pipeline, fusion_method=method, **kw)
    resp = s.search(QUERY, AGENT, STAY, now=NOW)
    assert resp.fusion_path == path
    if method == "linear":
        weight = resp.dense_weight
        assert weight is not None and 0.0 <= weight <= 1.0
        if kw:
            assert weight == 0.4  # the fixed weight, as configured
    else:
        assert resp.dense_weight is None
    docs = [h.doc_id for h in resp.hits]
    assert docs[0] == "D1-current-contract" and not set(docs) & set(FORBIDDEN)
    if pipeline == "bm25":
        assert resp.legs["dense"] == () and "embed" not in resp.timings_ms
        assert all(h.dense_rank is None and h.sparse_rank for h in resp.hits)
    if pipeline == "dense":
        assert resp.legs["sparse"] == () and all(h.sparse_rank is None for h in resp.hits)
    if method == "linear":
        assert resp.hits[0].fused_score <= 1.0 + 1e-9
