"""The LlamaIndex vector store (``adapters.llamaindex_store``) against the real engine (both).

LlamaIndex ships no conformance suite for vector stores (``llama_index.core`` has no test
utilities; each integration package tests its own store), so the behaviours LlamaIndex relies on
are checked here through its own entry points: ``VectorStoreIndex.from_vector_store`` and
``as_retriever`` with ``MetadataFilters`` (AND, OR, NOT, nested), an ``IngestionPipeline`` writing
into the store (and its upsert strategy deleting by ``ref_doc_id``), ``delete`` /
``delete_ref_doc``, ``get_nodes``, the async methods; and hybrid-es's own guarantees: another
tenant's store sees and deletes nothing of the first (exactly as a missing id), a bad filter
sends nothing, a node that cannot be written is reported, never dropped. Then the example
program runs as a user would run it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="the adapters extra is not installed (llamaindex)")

from llama_index.core import Document as LlamaDocument
from llama_index.core import VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import MetadataMode, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from hybrid_es.adapters.llamaindex_filters import LlamaIndexFilterError
from hybrid_es.adapters.llamaindex_nodes import stored_node_id
from hybrid_es.adapters.llamaindex_store import HybridEsVectorStore, StoreEmbedding
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.errors import (
    BadQueryError,
    BulkIndexError,
    ConfigurationError,
    PolicyViolationError,
)
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.models import Principal
from hybrid_es.retrieval.door import control_reads
from hybrid_es.retrieval.searcher import HybridSearcher
from tests import namespaces
from tests.conftest import HashEmbedder
from tests.integration.test_filters import map_filter_fields

pytestmark = pytest.mark.integration

DECLARED = "team:keyword,year:number,ref_doc_id:keyword"
FIELDS = parse_filterable_fields(DECLARED)
WRITER_A = Principal(tenant="demo-A", user_id="docs-bot", groups=("staff",))
WRITER_B = Principal(tenant="demo-B", user_id="docs-bot", groups=("staff",))
QUERY = "Kyoto hotel"
DOCS = {
    "rates": ("ops", 2026, "The Kyoto hotel April room rate is JPY 31,500 a night."),
    "pools": ("facilities", 2025, "The Kyoto hotel pool opens at 7:00 in summer."),
    "visa": ("legal", 2024, "Guests of the Kyoto hotel need a passport valid six months."),
    "menu": ("ops", 2023, "The Kyoto hotel breakfast menu changes every season."),
}
"""LlamaIndex documents by id: team, year, text (each short: one node, one chunk)."""


def documents() -> list[LlamaDocument]:
    return [
        LlamaDocument(
            text=text, doc_id=doc_id, metadata={"team": team, "year": year, "path": f"{doc_id}.md"}
        )
        for doc_id, (team, year, text) in DOCS.items()
    ]


@pytest.fixture
def indices(es, bootstrapped) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """A chunks index that maps the declared fields, and its corpus-state index."""
    tag = uuid.uuid4().hex[:10]
    index, state = f"hybrid-es-chunks-llamaindex-{tag}", f"hybrid-es-corpus-state-llamaindex-{tag}"
    es.create_index(index)
    es.create_index(state)
    map_filter_fields(es, index, FIELDS)
    yield index, state
    es.delete_index(f"{index},{state}")


def make_store(engine: Any, indices: tuple[str, str], principal: Principal) -> HybridEsVectorStore:
    index, state = indices
    searcher = HybridSearcher(
        engine,
        HashEmbedder(),
        index=index,
        corpus_state_index=state,
        filterable_fields=DECLARED,
        fusion="client",
    )
    ingestor = Ingestor(
        engine, HashEmbedder(), index=index, corpus_state=CorpusState(engine, state)
    )
    return HybridEsVectorStore(searcher, ingestor, principal, acl_groups=("staff",), rerank=False)


@pytest.fixture
def store_a(es, indices) -> HybridEsVectorStore:  # type: ignore[no-untyped-def]
    """Tenant demo-A's store holding :data:`DOCS`, written through a VectorStoreIndex."""
    store = make_store(es, indices, WRITER_A)
    index = VectorStoreIndex.from_vector_store(store, embed_model=StoreEmbedding())
    for doc in documents():
        index.insert(doc)
    return store


def ref_docs(store: HybridEsVectorStore, filters: MetadataFilters | None = None) -> set[str]:
    """The LlamaIndex document ids an index over ``store`` retrieves for :data:`QUERY`."""
    index = VectorStoreIndex.from_vector_store(store, embed_model=StoreEmbedding())
    found = index.as_retriever(similarity_top_k=10, filters=filters).retrieve(QUERY)
    return {str(n.node.ref_doc_id) for n in found}


def test_an_index_retrieves_what_it_wrote_with_metadata_and_provenance(store_a):
    index = VectorStoreIndex.from_vector_store(store_a, embed_model=StoreEmbedding())
    found = index.as_retriever(similarity_top_k=10).retrieve("April room rate JPY")
    assert {str(n.node.ref_doc_id) for n in found} == set(DOCS)
    top = found[0]
    assert top.node.ref_doc_id == "rates" and "JPY 31,500" in top.node.get_content()
    meta = top.node.metadata
    assert meta["path"] == "rates.md" and meta["team"] == "ops" and meta["year"] == 2026
    assert meta["hybrid_es"]["tenant"] == "demo-A" and top.score == meta["hybrid_es"]["score"]
    # The id is the chunk's; the node id given to add() is its document id in hybrid-es.
    assert top.node.node_id == meta["hybrid_es"]["chunk_id"]
    assert top.node.node_id.startswith(meta["hybrid_es"]["doc_id"] + "::v1::c")
    # Only the title goes to a model with the text: not the path, team or provenance.
    prompt = top.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "JPY 31,500" in prompt and not {"rates.md", "ops", "demo-A"} & set(prompt.split())


def test_metadata_filters_narrow_the_retrieval(store_a):
    def f(key: str, value: Any, op: FilterOperator = FilterOperator.EQ) -> MetadataFilter:
        return MetadataFilter(key=key, value=value, operator=op)

    assert ref_docs(store_a, MetadataFilters(filters=[f("team", "ops")])) == {"rates", "menu"}
    either = MetadataFilters(
        filters=[f("team", "legal"), f("year", 2026, FilterOperator.GTE)],
        condition=FilterCondition.OR,
    )
    assert ref_docs(store_a, either) == {"visa", "rates"}
    nested = MetadataFilters(
        filters=[
            f("team", "facilities", FilterOperator.NE),
            MetadataFilters(filters=[f("year", 2023)], condition=FilterCondition.NOT),
        ]
    )
    assert ref_docs(store_a, nested) == {"rates", "visa"}
    any_of = MetadataFilters(filters=[f("team", ["legal", "facilities"], FilterOperator.ANY)])
    assert ref_docs(store_a, any_of) == {"visa", "pools"}
    # A query's doc_ids narrow by LlamaIndex document.
    result = store_a.query(VectorStoreQuery(query_str=QUERY, similarity_top_k=10, doc_ids=["menu"]))
    assert {n.ref_doc_id for n in result.nodes or []} == {"menu"}
    assert (
        result.ids == [n.node_id for n in result.nodes or []]
        and len(result.similarities or []) == 1
    )


def test_the_retriever_takes_metadata_filters_by_default_and_per_request(store_a):
    from hybrid_es.adapters.llamaindex import HybridEsRetriever

    searcher = store_a._searcher
    shared = HybridEsRetriever(searcher, top_k=10, rerank=False, filters=_team("ops"))

    def refs(nodes: list[Any]) -> set[str]:
        return {n.node.metadata["ref_doc_id"] for n in nodes}

    assert refs(shared.retrieve_for(WRITER_A, QUERY)) == {"rates", "menu"}
    assert refs(shared.retrieve_for(WRITER_A, QUERY, filters=_team("legal"))) == {"visa"}
    assert refs(shared.for_principal(WRITER_A, filters=_team("facilities")).retrieve(QUERY)) == {
        "pools"
    }
    with pytest.raises(LlamaIndexFilterError, match="policy field"):
        HybridEsRetriever(searcher, filters=MetadataFilters(filters=[_eq("tenant", "demo-A")]))
    with pytest.raises(LlamaIndexFilterError, match="TEXT_MATCH"):
        shared.for_principal(
            WRITER_A,
            filters=MetadataFilters(
                filters=[MetadataFilter(key="team", value="o", operator=FilterOperator.TEXT_MATCH)]
            ),
        )


def _eq(key: str, value: Any) -> MetadataFilter:
    return MetadataFilter(key=key, value=value)


def test_an_ingestion_pipeline_writes_into_the_store_and_upserts_by_ref_doc_id(es, indices):
    store = make_store(es, indices, WRITER_A)
    pipeline = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), StoreEmbedding()],
        vector_store=store,
        docstore=SimpleDocumentStore(),
    )
    pipeline.run(documents=documents())
    assert ref_docs(store) == set(DOCS)
    # A changed document: the pipeline's upsert strategy deletes its nodes by ref_doc_id (the
    # store's delete), then adds the new ones.
    changed = LlamaDocument(
        text="The Kyoto hotel May room rate is JPY 28,000 a night.",
        doc_id="rates",
        metadata={"team": "ops", "year": 2026, "path": "rates.md"},
    )
    pipeline.run(documents=[changed])
    by_rates = MetadataFilters(filters=[MetadataFilter(key="ref_doc_id", value="rates")])
    texts = [n.get_content() for n in store.get_nodes(filters=by_rates)]
    assert texts == [changed.text]


def test_the_same_ingestion_pipeline_run_twice_writes_nothing_the_second_time(es, indices):
    """LlamaIndex's splitter draws a random id for every node on every run; the store keys each
    node by its document and place instead, so a second run finds every node stored."""
    store = make_store(es, indices, WRITER_A)

    def run() -> list[str]:
        pipeline = IngestionPipeline(
            transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), StoreEmbedding()],
            vector_store=store,
        )
        pipeline.run(documents=documents())
        es.refresh(indices[0])
        with control_reads("every stored record of the test's index, audit copies included"):
            hits = es.search(indices[0], {"size": 100, "_source": ["chunk_id", "ingested_at"]})
        return sorted(
            f"{h['_source']['chunk_id']}@{h['_source']['ingested_at']}"
            for h in hits["hits"]["hits"]
        )

    first = run()
    assert len(first) == len(DOCS)
    assert run() == first  # the same records, none written again (their ingest times unchanged)
    assert ref_docs(store) == set(DOCS)


def test_a_node_given_an_id_keeps_it_and_a_random_one_is_derived():
    doc = LlamaDocument(text="One. Two.", doc_id="handbook")
    (a,) = SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents([doc])
    (b,) = SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents([doc])
    assert a.node_id != b.node_id  # LlamaIndex's own ids: random
    assert stored_node_id(a) == stored_node_id(b) != a.node_id
    assert stored_node_id(TextNode(id_="faq-12", text="x")) == "faq-12"
    loose = [TextNode(text="the same text") for _ in range(2)]  # no document, random ids
    assert stored_node_id(loose[0]) == stored_node_id(loose[1])


def test_delete_by_ref_doc_id_and_get_nodes(store_a):
    index = VectorStoreIndex.from_vector_store(store_a, embed_model=StoreEmbedding())
    (pool,) = store_a.get_nodes(
        filters=MetadataFilters(filters=[MetadataFilter(key="ref_doc_id", value="pools")])
    )
    node_id = pool.metadata["hybrid_es"]["doc_id"]
    # By node id (what add() returned) and by chunk id (what a query returned): the same node.
    assert [n.node_id for n in store_a.get_nodes(node_ids=[node_id])] == [pool.node_id]
    assert [n.get_content() for n in store_a.get_nodes(node_ids=[pool.node_id])] == [
        DOCS["pools"][2]
    ]
    store_a.delete("pools")
    index.delete_ref_doc("visa")
    assert ref_docs(store_a) == {"rates", "menu"}
    assert store_a.get_nodes(node_ids=[node_id, pool.node_id]) == []
    store_a.delete_nodes(node_ids=[n.node_id for n in store_a.get_nodes(filters=_team("ops"))])
    assert ref_docs(store_a) == set() and store_a.get_nodes() == []


def test_a_node_deleted_and_added_again_is_back(es, indices):
    """LlamaIndex re-adds nodes under the same ids (a docstore's upsert, a re-run): a node
    deleted before must come back, though its content is unchanged."""
    store = make_store(es, indices, WRITER_A)
    node = TextNode(id_="lobby", text="The Kyoto hotel lobby opens at 6:00.")
    store.add([node])
    store.delete_nodes(node_ids=["lobby"])
    assert store.get_nodes() == []
    store.add([node])
    assert [n.metadata["hybrid_es"]["doc_id"] for n in store.get_nodes()] == ["lobby"]


def _team(team: str) -> MetadataFilters:
    return MetadataFilters(filters=[MetadataFilter(key="team", value=team)])


def test_the_async_methods(es, indices):
    store = make_store(es, indices, WRITER_A)
    nodes = [
        TextNode(id_=f"n-{k}", text=text, metadata={"team": team, "year": year})
        for k, (team, year, text) in DOCS.items()
    ]
    assert asyncio.run(store.async_add(nodes)) == [n.node_id for n in nodes]
    result = asyncio.run(store.aquery(VectorStoreQuery(query_str=QUERY, similarity_top_k=10)))
    assert {n.metadata["hybrid_es"]["doc_id"] for n in result.nodes or []} == {
        n.node_id for n in nodes
    }
    listed = asyncio.run(store.aget_nodes(filters=_team("ops")))
    assert {n.metadata["hybrid_es"]["doc_id"] for n in listed} == {"n-rates", "n-menu"}
    asyncio.run(store.adelete_nodes(node_ids=["n-rates"]))
    assert [n.metadata["hybrid_es"]["doc_id"] for n in store.get_nodes(filters=_team("ops"))] == [
        "n-menu"
    ]


def test_another_tenants_store_sees_and_deletes_nothing_of_the_first(es, indices, store_a):
    store_b = make_store(es, indices, WRITER_B)
    store_b.add([TextNode(id_="b-1", text="The Osaka hotel rate for tenant B.")])
    a_nodes = store_a.get_nodes()
    a_ids = [n.node_id for n in a_nodes] + [n.metadata["hybrid_es"]["doc_id"] for n in a_nodes]
    assert len(a_nodes) == len(DOCS)
    # Tenant B's view of A's ids is exactly its view of ids that do not exist.
    assert store_b.get_nodes(node_ids=a_ids) == store_b.get_nodes(node_ids=["missing"]) == []
    assert ref_docs(store_b) == {"b-1"}  # its own node only (no ref doc: its source is itself)
    assert ref_docs(store_b, _team("ops")) == set()
    by_ref = MetadataFilters(filters=[MetadataFilter(key="ref_doc_id", value="rates")])
    assert store_b.get_nodes(filters=by_ref) == []
    # B's deletes of A's documents do what deleting a missing one does: nothing, silently.
    for ref in (*DOCS, "missing"):
        store_b.delete(ref)
    store_b.delete_nodes(node_ids=a_ids)
    assert ref_docs(store_a) == set(DOCS)
    assert [n.node_id for n in store_a.get_nodes()] == [n.node_id for n in a_nodes]
    with pytest.raises(PolicyViolationError, match="clear"):
        store_b.clear()


def test_a_bad_filter_is_refused_before_any_request(wire, indices, store_a):
    engine, log = wire
    store = make_store(engine, indices, WRITER_A)
    index = VectorStoreIndex.from_vector_store(store, embed_model=StoreEmbedding())
    bad = [
        MetadataFilters(filters=[MetadataFilter(key="team", value="o", operator="text_match")]),
        MetadataFilters(filters=[MetadataFilter(key="tenant", value="demo-B")]),
        MetadataFilters(
            filters=[
                MetadataFilter(key="team", value="ops"),
                MetadataFilter(key="acl_groups", value="*"),
            ],
            condition=FilterCondition.OR,
        ),
        MetadataFilters(filters=[MetadataFilter(key="undeclared", value="x")]),
        MetadataFilters(filters=[MetadataFilter(key="year", value="2026")]),  # a number field
    ]
    sent = len(log)
    for filters in bad:
        with pytest.raises(LlamaIndexFilterError):
            index.as_retriever(filters=filters).retrieve(QUERY)
        with pytest.raises(LlamaIndexFilterError):
            store.get_nodes(filters=filters)
        with pytest.raises(LlamaIndexFilterError):
            store.delete_nodes(filters=filters)
    assert len(log) == sent


def test_a_node_that_cannot_be_written_is_reported_and_the_others_are_written(es, indices):
    store = make_store(es, indices, WRITER_A)
    nodes = [
        TextNode(id_="good", text="The Kyoto hotel lobby opens at 6:00.", metadata={"team": "ops"}),
        TextNode(id_="bad::id", text="An id holding the key separator."),
        TextNode(id_="empty", text="   "),
        TextNode(id_="wrong-type", text="A year that is not a number.", metadata={"year": "soon"}),
    ]
    with pytest.raises(BulkIndexError, match="3 of 4 nodes") as refused:
        store.add(nodes)
    failed = {f["node_id"]: f["reason"] for f in refused.value.failed}
    assert set(failed) == {"bad::id", "empty", "wrong-type"}
    assert (
        "::" in failed["bad::id"] and "empty" in failed["empty"] and "year" in failed["wrong-type"]
    )
    assert [n.metadata["hybrid_es"]["doc_id"] for n in store.get_nodes()] == ["good"]


def test_a_store_refuses_what_it_cannot_serve(es, indices):
    store = make_store(es, indices, WRITER_A)
    index, state = indices
    undeclared = HybridSearcher(es, HashEmbedder(), index=index, corpus_state_index=state)
    with pytest.raises(ConfigurationError, match="ref_doc_id:keyword"):
        HybridEsVectorStore(undeclared, store._ingestor, WRITER_A)
    with pytest.raises(PolicyViolationError, match="no principal"):
        HybridEsVectorStore(store._searcher, store._ingestor, None)  # type: ignore[arg-type]
    with pytest.raises(BadQueryError, match="query_str"):
        store.query(VectorStoreQuery(query_embedding=[0.5], similarity_top_k=3))


def test_the_example_program(es):  # type: ignore[no-untyped-def]
    """examples/llamaindex_app.py as a user runs it. It bootstraps its own declared fields in
    its own namespace (no force: the session's templates are not touched), dropped after."""
    ns = namespaces.example_namespace("llamaindex_app.py")
    namespaces.drop(es, ns)
    try:
        run = namespaces.run_example("llamaindex_app.py", HYBRID_ES_TRACES="false")
    finally:
        namespaces.drop(es, ns)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 2, run.stdout  # the filter leaves the two ops documents
    assert lines[0].startswith("ops/rates.md ") and "JPY 31,500" in lines[0]
    assert lines[1].startswith("ops/check-in.md ")
