"""Search and traces as an attacker (issue 11: I, J, K, 12, 13)."""

from __future__ import annotations

import logging
import uuid

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.trace_storage import delete_data_stream
from hybrid_es.errors import (
    BadQueryError,
    PolicyViolationError,
    TraceNotFoundError,
    UnknownTenantError,
)
from hybrid_es.hashing import keyed_digest
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import OPERATOR_ROLE, Principal, RequestScope
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.retrieval.stages import REFUSED_ANSWER
from hybrid_es.traces.hooks import search_hook
from hybrid_es.traces.reader import TraceReader
from hybrid_es.traces.storage import trace_storage
from hybrid_es.traces.writer import TraceWriter
from tests.conftest import HashEmbedder, ingest_as_owners, owner, travel_documents
from tests.security.conftest import AGENT_A, AGENT_B, MANAGER, NOW, QUERY, SCOPE, World, make_world

pytestmark = pytest.mark.integration


@pytest.fixture
def traces(es, bootstrapped, settings):  # type: ignore[no-untyped-def]
    """An own trace storage of the kind the cluster has (a data stream, or dated indices)."""
    storage = trace_storage(
        es, settings, base=f"{settings.traces_index}-sec-{uuid.uuid4().hex[:10]}"
    )
    yield storage
    if storage.is_stream:
        delete_data_stream(es, storage.stream)
    es.delete_index(storage.pattern)


def test_trace_reads_are_scoped_to_the_caller_and_refused_requests_leave_no_trace(
    world: World, traces, es
):
    # I: `traces tail/show` showed every tenant's traces (--tenant was only a filter), searches
    # by unknown tenants wrote traces under arbitrary names, and the query hash was unsalted.
    key = b"a per-deployment secret"
    writer = TraceWriter(es, traces, flush_interval=0.05)
    hook = search_hook(writer, hash_key=key)
    searcher = HybridSearcher(
        es,
        HashEmbedder(),
        layout=world.layout,
        native_rrf=False,
        hash_key=key,
        on_response=hook,
        on_error=hook.on_error,
    )
    a = searcher.search(QUERY, MANAGER, SCOPE, now=NOW)
    searcher.search(QUERY, AGENT_B, SCOPE, now=NOW)
    with pytest.raises(UnknownTenantError):
        searcher.search(QUERY, Principal(tenant="made-up-corp", user_id="x"), SCOPE, now=NOW)
    with pytest.raises(BadQueryError):
        searcher.search("   ", MANAGER, SCOPE, now=NOW)
    stats = writer.close()
    assert stats.written == 2 and stats.refused == {"UnknownTenantError": 1, "BadQueryError": 1}
    es.refresh(traces.pattern)

    def tenants(docs: list[dict]) -> set[str]:  # type: ignore[type-arg]
        return {d["organization"]["id"] for d in docs}

    reader = TraceReader(es, traces)
    (mine,) = reader.tail(MANAGER)
    assert mine["organization"]["id"] == "demo-A" and mine["user"]["id"] == "manager"
    assert reader.tail(AGENT_A) == []  # same tenant, another user: none of the manager's
    (theirs,) = reader.tail(AGENT_B)
    assert theirs["organization"]["id"] == "demo-B"
    assert reader.tail(AGENT_B, tenant="demo-A") == []  # a filter cannot widen the scope
    ops = Principal(tenant="ops", user_id="o", roles=(OPERATOR_ROLE,))
    assert tenants(reader.tail(ops)) == {"demo-A", "demo-B"}  # no made-up tenant
    assert tenants(reader.tail(ops, tenant="demo-B")) == {"demo-B"}
    trace_id = mine["trace"]["id"]
    with pytest.raises(TraceNotFoundError) as other:
        reader.show(AGENT_B, trace_id)
    with pytest.raises(TraceNotFoundError) as none:
        reader.show(AGENT_B, "f" * 32)
    assert str(other.value).replace(trace_id, "?") == str(none.value).replace("f" * 32, "?")
    assert reader.show(MANAGER, trace_id[:12])["trace"]["id"] == trace_id
    with pytest.raises(TraceNotFoundError):  # a prefix matches only the caller's own traces
        reader.show(AGENT_B, trace_id[:12])
    # The query hash is keyed: it is not the plain SHA-256 anyone could recompute, and it is the
    # HMAC under this deployment's key.
    import hashlib

    assert mine["hybrid_es"]["query_hash"] != hashlib.sha256(QUERY.encode()).hexdigest()[:16]
    assert mine["hybrid_es"]["query_hash"] == a.query_hash == keyed_digest(key, QUERY)
    assert keyed_digest(b"another deployment", QUERY) != a.query_hash


def _bm25_score(searcher: HybridSearcher, principal: Principal, query: str) -> float:
    resp = searcher.search(query, principal, RequestScope(), now=NOW, rerank=False)
    (hit,) = [h for h in resp.hits if h.sparse_score is not None]
    return float(hit.sparse_score)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["index-per-tenant", "shared"])
def test_scores_do_not_depend_on_another_tenants_documents_in_the_default_mode(
    es, bootstrapped, mode
):
    # J: measured before: tenant A's BM25 score for a word dropped from 5.75 to 3.64 when tenant
    # B ingested three deleted or embargoed documents that contain it.
    from hybrid_es.ingest.documents import Document

    w = make_world(es, mode)
    try:
        reader = Principal(tenant="demo-A", user_id="u")
        w.ingestor.ingest(
            [
                Document(id="A1", tenant="demo-A", body="the zanzibar tariff", acl_groups=("*",)),
                Document(id="A2", tenant="demo-A", body="an unrelated note", acl_groups=("*",)),
            ],
            owner("demo-A"),
            now=NOW,
        )
        searcher = HybridSearcher(es, HashEmbedder(), layout=w.layout, native_rrf=False)
        searcher.pipeline = "bm25"
        before = _bm25_score(searcher, reader, "zanzibar")
        w.ingestor.ingest(
            [
                Document(id=f"B{i}", tenant="demo-B", body="zanzibar zanzibar", deleted=True)
                for i in range(3)
            ],
            owner("demo-B"),
            now=NOW,
        )
        after = _bm25_score(searcher, reader, "zanzibar")
        if mode == "index-per-tenant":
            assert after == before
        else:  # the side channel the default mode closes, measured here so the docs stay true
            assert after < before
    finally:
        es.delete_index(w.indices)


def test_the_fail_closed_error_names_no_record(world: World, es, caplog):
    # K: a candidate failing the Python re-check raised with the restricted chunk's id, the
    # failed rule and the other tenant's name, into the on_error trace hook and the CLI.
    index = world.layout.chunks_for("demo-A")
    key = chunk_key("demo-A", "D1-current-contract::v3::c0000")
    # A record the cluster's filter admits ("false" is false to Elasticsearch) and the Python
    # rule refuses (a non-empty string is true): the two sides disagree.
    es.update(index, key, {"deleted": "false"}, refresh="true")
    seen: list[str] = []
    searcher = HybridSearcher(
        es,
        HashEmbedder(),
        layout=world.layout,
        native_rrf=False,
        on_error=lambda p, q, exc, t: seen.append(f"{exc} {getattr(exc, 'hint', '')}"),
    )
    with (
        caplog.at_level(logging.DEBUG, logger="hybrid_es.retrieval.stages"),
        pytest.raises(PolicyViolationError) as info,
    ):
        searcher.search(QUERY, MANAGER, SCOPE, now=NOW)
    told = [str(info.value), *seen]
    assert info.value.message == REFUSED_ANSWER
    for text in told:
        for secret in ("D1-current-contract", "deletion", "demo-A", "demo-B", key):
            assert secret not in text, (secret, text)
    assert any(key in r.getMessage() and r.levelno == logging.DEBUG for r in caplog.records)


def test_rank_constant_is_validated_as_the_engine_does():
    # 12: 0 and non-integers were accepted client-side; native RRF needs an integer >= 1.
    for bad in (0, -1, 1.5, float("inf"), float("nan"), True):
        with pytest.raises(BadQueryError, match="rank_constant"):
            RetrievalParams(rank_constant=bad)  # type: ignore[arg-type]
    assert RetrievalParams(rank_constant=1).rank_constant == 1


@pytest.mark.engine(
    "elasticsearch",
    reason="the file-realm reader users (rx-reader-demo-A/B) exist on the scripts/es.sh node "
    "only; OpenSearch's native document-level security is tested in "
    "tests/security/test_opensearch_dls.py",
)
def test_a_reader_who_may_not_read_mappings_is_still_checked_against_the_model(es, settings):
    # 13: check_model treated a 403 as "checked". A reader without view_index_metadata is now
    # checked against the embedding model stored on a chunk it may read. The readers' roles
    # name their own tenant's indices only: the reader layout of tests/security.
    from hybrid_es.cluster.engine import connect
    from hybrid_es.errors import AuthenticationError, ModelError
    from tests.security.test_reader_matrix import LAYOUT

    state = CorpusState(es, LAYOUT.corpus_state)
    es.delete_index(f"{LAYOUT.chunks_pattern()},{LAYOUT.corpus_state}")
    try:
        ingestor = Ingestor(es, HashEmbedder(), layout=LAYOUT, corpus_state=state)
        ingest_as_owners(ingestor, travel_documents(), now=NOW)
        reader = connect(
            settings.model_copy(
                update={"username": "rx-reader-demo-A", "password": settings.password}
            )
        )
        with pytest.raises(AuthenticationError) as refused:  # the file-realm reader may not
            reader.get_mapping(LAYOUT.chunks_for("demo-A"))
        assert refused.value.status == 403

        class OtherModel(HashEmbedder):
            model_id = "someone/else"

        ok = HybridSearcher(reader, HashEmbedder(), layout=LAYOUT, native_rrf=False)
        assert ok.search(QUERY, MANAGER, SCOPE, now=NOW).hits
        assert LAYOUT.chunks_for("demo-A") in ok.checks.model_checked
        wrong = HybridSearcher(reader, OtherModel(), layout=LAYOUT, native_rrf=False)
        with pytest.raises(ModelError, match="built with test/hashed-trigrams"):
            wrong.search(QUERY, MANAGER, SCOPE, now=NOW)
        # demo-B's reader may read no chunk of demo-A: nothing can be checked, so nothing is
        # taken as checked (and the cluster refuses its every search there).
        nobody = connect(
            settings.model_copy(
                update={"username": "rx-reader-demo-B", "password": settings.password}
            )
        )
        blind = HybridSearcher(nobody, OtherModel(), layout=LAYOUT, native_rrf=False)
        try:
            blind.check_model(MANAGER)
        except AuthenticationError as exc:
            assert exc.status == 403
        assert blind.checks.model_checked == set()
    finally:
        es.delete_index(f"{LAYOUT.chunks_pattern()},{LAYOUT.corpus_state}")
