"""The framework adapters against the real libraries and the real cluster (the travel fixture).

Each adapter (LangChain, Haystack, LlamaIndex) must: carry every hit's provenance, give tenant
demo-B's principal none of demo-A's records, refuse to search without a principal, and take the
principal from the caller only (query text naming another tenant, user or group changes nothing).
The same checks run on all three through ``ask``; the idioms of each framework (LangChain's
``bind`` and ``ainvoke``, a Haystack pipeline, LlamaIndex's ``QueryBundle`` and ``aretrieve``)
have their own tests. A framework whose library is absent is skipped by name (the ``adapters``
extra; CI installs it through ``dev``).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import pytest

from hybrid_es.adapters.provenance import PROVENANCE_KEYS
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.errors import PolicyViolationError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents
from tests.constants import AGENT, NOW, QUERY

pytestmark = pytest.mark.integration

# Haystack reports pipeline runs to its telemetry service unless told not to; tests send nothing.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

PARTNER = Principal(tenant="demo-B", user_id="partner-1", groups=("travel-agents",))
STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
DEMO_A = {d.id for d in travel_documents() if d.tenant == "demo-A"}
IMPERSONATION = (
    "tenant:demo-A tenant=demo-A user:agent-1 group:travel-agents principal=demo-A/agent-1 "
    "acl_groups:* D1-current-contract " + QUERY
)
FRAMEWORKS = ("langchain", "haystack", "llamaindex")
LIBRARIES = {
    "langchain": "langchain_core",
    "haystack": "haystack",
    "llamaindex": "llama_index.core",
}


CITED = Document(
    id="H-handbook-pools",
    tenant="demo-A",
    title="Agent handbook: pool hours",
    body="Kyoto partner hotels open their pools from 7:00 to 21:00 in summer.",
    acl_groups=("*",),
    metadata={
        "path": "handbook/pools.md",
        "url": "https://intranet.example/handbook/pools",
        "team": "partner-desk",
        "hybrid_es": {"tenant": "demo-B"},  # a document cannot set the provenance
    },
)
"""A demo-A record whose own metadata an answer cites (issue 24: it reached no framework)."""


@pytest.fixture(scope="module")
def searcher(es, bootstrapped, settings) -> Iterator[HybridSearcher]:  # type: ignore[no-untyped-def]
    """Both tenants' travel documents in this module's own indices, and a searcher over them."""
    tag = uuid.uuid4().hex[:10]
    chunks = f"{settings.chunks_index}-test-adapters-{tag}"
    state = f"{settings.corpus_state_index}-test-adapters-{tag}"
    for name in (chunks, state):
        es.create_index(name)
    try:
        ing = Ingestor(es, HashEmbedder(), index=chunks, corpus_state=CorpusState(es, state))
        ingest_as_owners(ing, [*travel_documents(), CITED], now=NOW)
        yield HybridSearcher(es, HashEmbedder(), index=chunks, corpus_state_index=state)
    finally:
        es.delete_index(f"{chunks},{state}")


def _library(framework: str) -> None:
    pytest.importorskip(
        LIBRARIES[framework], reason=f"the adapters extra is not installed ({framework})"
    )


Found = list[tuple[str, dict[str, Any], float | None]]
"""What a framework returned, made comparable: (text, metadata, score) per document."""


def ask(framework: str, searcher: HybridSearcher) -> Callable[..., Found]:
    """``ask(query, principal)`` through the framework's own entry point (principal may be
    None or anything else, to test the refusal)."""
    _library(framework)
    if framework == "langchain":
        from hybrid_es.adapters.langchain import HybridEsRetriever as LangChainRetriever

        lc = LangChainRetriever(searcher=searcher, scope=STAY, top_k=10)

        def via_langchain(query: str, principal: object) -> Found:
            docs = lc.invoke(query, principal=principal)
            return [(d.page_content, d.metadata, d.metadata["hybrid_es"]["score"]) for d in docs]

        return via_langchain
    if framework == "haystack":
        from hybrid_es.adapters.haystack import HybridEsRetriever as HaystackRetriever

        hs = HaystackRetriever(searcher, scope=STAY, top_k=10)

        def via_haystack(query: str, principal: object) -> Found:
            docs = hs.run(query=query, principal=principal)["documents"]  # type: ignore[arg-type]
            return [(d.content or "", d.meta, d.score) for d in docs]

        return via_haystack
    from hybrid_es.adapters.llamaindex import HybridEsRetriever as LlamaRetriever

    shared = LlamaRetriever(searcher, scope=STAY, top_k=10)

    def via_llamaindex(query: str, principal: object) -> Found:
        retriever = shared if principal is None else shared.for_principal(principal)  # type: ignore[arg-type]
        return [(n.node.get_content(), n.node.metadata, n.score) for n in retriever.retrieve(query)]

    return via_llamaindex


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_documents_carry_the_hits_provenance(framework, searcher):
    found = ask(framework, searcher)(QUERY, AGENT)
    direct = searcher.search(QUERY, AGENT, STAY, top_k=10)
    # The adapter adds and drops nothing: the searcher's hits, in its order.
    assert [m["hybrid_es"]["chunk_id"] for _, m, _ in found] == [h.chunk_id for h in direct.hits]
    assert found and "D1-current-contract" in {m["hybrid_es"]["doc_id"] for _, m, _ in found}
    for (text, meta, score), hit in zip(found, direct.hits, strict=True):
        assert set(PROVENANCE_KEYS) == set(meta["hybrid_es"])
        assert text == hit.text and text
        assert meta["hybrid_es"]["doc_id"] == hit.doc_id and meta["hybrid_es"][
            "chunk_id"
        ].startswith(hit.doc_id)
        assert (
            meta["hybrid_es"]["tenant"] == "demo-A"
            and meta["hybrid_es"]["source_version"] == hit.source_version >= 1
        )
        assert (
            meta["hybrid_es"]["sparse_rank"] == hit.sparse_rank
            and meta["hybrid_es"]["dense_rank"] == hit.dense_rank
        )
        assert (
            meta["hybrid_es"]["sparse_rank"] is not None
            or meta["hybrid_es"]["dense_rank"] is not None
        )
        assert (
            meta["hybrid_es"]["fused_score"] == pytest.approx(hit.fused_score)
            and meta["hybrid_es"]["fused_score"] > 0
        )
        assert meta["hybrid_es"]["rerank_score"] is None  # no reranker configured
        assert score == pytest.approx(hit.fused_score) == pytest.approx(meta["hybrid_es"]["score"])
        assert meta["hybrid_es"]["fusion_path"] == direct.fusion_path
        assert meta["hybrid_es"]["authorization_allowed"] is True
        assert (
            meta["hybrid_es"]["authorization"].startswith("allow: ")
            and meta["hybrid_es"]["policy_version"]
        )
        assert meta["hybrid_es"]["query_hash"] == direct.query_hash
    # The superseded contract is out of scope for the stay: no framework sees it.
    assert "D0-stale-contract" not in {m["hybrid_es"]["doc_id"] for _, m, _ in found}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_documents_carry_their_own_metadata_under_the_users_names(framework, searcher):
    found = ask(framework, searcher)("pool hours Kyoto summer", AGENT)
    (meta,) = [m for _, m, _ in found if m["hybrid_es"]["doc_id"] == CITED.id]
    assert meta["path"] == "handbook/pools.md" and meta["team"] == "partner-desk"
    assert meta["url"] == "https://intranet.example/handbook/pools"
    assert meta["title"] == CITED.title
    # The provenance is the product's, under one key no document can set.
    assert meta["hybrid_es"]["tenant"] == "demo-A"
    assert set(meta["hybrid_es"]) == set(PROVENANCE_KEYS)
    # A document's metadata is its data, as untrusted as its text: D6 claims tenant demo-B.
    review = ask(framework, searcher)("guest review of the accessible room", AGENT)
    (d6,) = [m for _, m, _ in review if m["hybrid_es"]["doc_id"] == "D6-guest-review"]
    assert d6["tenant"] == "demo-B" and d6["hybrid_es"]["tenant"] == "demo-A"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_tenant_b_sees_none_of_tenant_as_documents(framework, searcher):
    found = ask(framework, searcher)(QUERY, PARTNER)
    docs = {m["hybrid_es"]["doc_id"] for _, m, _ in found}
    assert docs == {"D5-other-tenant"}  # the search ran, and found B's own record only
    assert not docs & DEMO_A
    assert {m["hybrid_es"]["tenant"] for _, m, _ in found} == {"demo-B"}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_query_text_cannot_change_the_principal(framework, searcher):
    found = ask(framework, searcher)(IMPERSONATION, PARTNER)
    assert {m["hybrid_es"]["doc_id"] for _, m, _ in found} <= {"D5-other-tenant"}
    assert {m["hybrid_es"]["tenant"] for _, m, _ in found} <= {"demo-B"}
    assert not any("JPY 31,500" in text for text, _, _ in found)


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(
    "principal",
    [None, "demo-A", {"tenant": "demo-A", "user_id": "agent-1", "groups": ["travel-agents"]}],
    ids=["missing", "a-string", "a-dict"],
)
def test_a_search_without_a_principal_is_refused(framework, principal, searcher):
    with pytest.raises(PolicyViolationError, match="no principal") as refused:
        ask(framework, searcher)(QUERY, principal)
    assert "Principal" in str(refused.value) and "authenticated context" in str(refused.value)


# -- LangChain's idioms ----------------------------------------------------------------------


def test_langchain_bind_batch_and_ainvoke_take_the_principal_per_call(searcher):
    _library("langchain")
    from langchain_core.runnables import RunnableLambda

    from hybrid_es.adapters.langchain import HybridEsRetriever

    retriever = HybridEsRetriever(searcher=searcher, scope=STAY, top_k=5)
    doc_ids = RunnableLambda(lambda docs: sorted({d.metadata["hybrid_es"]["doc_id"] for d in docs}))
    # One request's chain: the principal bound for that request only.
    assert (retriever.bind(principal=PARTNER) | doc_ids).invoke(QUERY) == ["D5-other-tenant"]
    as_agent = (retriever.bind(principal=AGENT) | doc_ids).invoke(QUERY)
    assert "D1-current-contract" in as_agent and "D5-other-tenant" not in as_agent
    # batch passes the keyword to every call; ainvoke runs the searcher in a thread.
    batched = retriever.batch([QUERY, IMPERSONATION], principal=PARTNER)
    assert [{d.metadata["hybrid_es"]["tenant"] for d in docs} for docs in batched] == [
        {"demo-B"},
        {"demo-B"},
    ]
    docs = asyncio.run(retriever.ainvoke(QUERY, principal=PARTNER, top_k=1))
    assert [d.metadata["hybrid_es"]["doc_id"] for d in docs] == ["D5-other-tenant"]
    with pytest.raises(PolicyViolationError):
        asyncio.run(retriever.ainvoke(QUERY))
    # Per-call scope: a historical question about 2025 admits the superseded contract.
    old = RequestScope(as_of=date(2025, 6, 1), historical=True)
    assert "D0-stale-contract" in {
        d.metadata["hybrid_es"]["doc_id"]
        for d in retriever.invoke(QUERY, principal=AGENT, scope=old)
    }


def test_langchain_retriever_takes_no_principal_at_construction(searcher):
    _library("langchain")
    from pydantic import ValidationError

    from hybrid_es.adapters.langchain import HybridEsRetriever

    with pytest.raises(ValidationError, match="principal"):
        HybridEsRetriever(searcher=searcher, principal=AGENT)  # type: ignore[call-arg]


# -- Haystack's idioms -----------------------------------------------------------------------


def test_haystack_pipeline_passes_the_principal_per_run(searcher):
    _library("haystack")
    from haystack import Pipeline

    from hybrid_es.adapters.haystack import HybridEsRetriever

    pipeline = Pipeline()
    pipeline.add_component("retriever", HybridEsRetriever(searcher, scope=STAY, top_k=5))
    for principal, tenant in ((PARTNER, "demo-B"), (AGENT, "demo-A")):
        out = pipeline.run({"retriever": {"query": QUERY, "principal": principal}})
        docs = out["retriever"]["documents"]
        assert docs and {d.meta["hybrid_es"]["tenant"] for d in docs} == {tenant}
        assert all(d.id == d.meta["hybrid_es"]["chunk_id"] and d.score is not None for d in docs)
    # The principal is a mandatory input: a run without one never reaches the searcher.
    with pytest.raises(ValueError, match="principal"):
        pipeline.run({"retriever": {"query": QUERY}})


# -- LlamaIndex's idioms ---------------------------------------------------------------------


def test_llamaindex_binds_the_principal_per_request(searcher):
    _library("llamaindex")
    from llama_index.core.schema import MetadataMode, NodeRelationship, QueryBundle

    from hybrid_es.adapters.llamaindex import HybridEsRetriever

    shared = HybridEsRetriever(searcher, scope=STAY, top_k=5)
    with pytest.raises(PolicyViolationError):
        shared.retrieve(QUERY)
    with pytest.raises(PolicyViolationError):
        asyncio.run(shared.aretrieve(QUERY))
    bundle = QueryBundle(query_str=IMPERSONATION, custom_embedding_strs=["tenant demo-A"])
    partner = shared.retrieve_for(PARTNER, bundle)
    assert {n.node.metadata["hybrid_es"]["doc_id"] for n in partner} == {"D5-other-tenant"}
    nodes = asyncio.run(shared.for_principal(AGENT).aretrieve(QUERY))
    assert nodes and {n.node.metadata["hybrid_es"]["tenant"] for n in nodes} == {"demo-A"}
    top = nodes[0].node
    assert top.node_id == top.metadata["hybrid_es"]["chunk_id"]
    assert top.relationships[NodeRelationship.SOURCE].node_id == top.metadata["hybrid_es"]["doc_id"]
    # Scores and ids stay with the application: an LLM prompt gets the title and the text.
    prompt = top.get_content(metadata_mode=MetadataMode.LLM)
    assert top.metadata["title"] in prompt and "fused_score" not in prompt
    assert "authorization" not in prompt and top.get_content() in prompt
    # The shared retriever is unchanged: binding made a new one.
    assert shared.principal is None
