"""The LangChain vector store and the retriever's filters, on the real engine (both engines).

A store bound to tenant A's writer writes LangChain documents and reads them back (by id and by
hybrid search) with their metadata and provenance; filters in LangChain's language narrow the
store's search, its ``as_retriever`` and :class:`HybridEsRetriever`; a bad filter sends nothing;
deletes hide a document; tenant B's store sees, deletes and overwrites none of A's documents and
gets for A's ids exactly what it gets for ids that do not exist; a document the ingest refuses is
raised after the rest was written. The README's example program runs as a subprocess.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="the adapters extra is not installed (langchain)")

from langchain_core.documents import Document as LcDocument

from hybrid_es.adapters.langchain import HybridEsRetriever
from hybrid_es.adapters.langchain_store import HybridEsEmbeddings, HybridEsVectorStore, stable_id
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.errors import BulkIndexError, ConfigurationError, FilterError
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.models import Principal
from hybrid_es.retrieval.searcher import HybridSearcher
from tests import namespaces
from tests.conftest import HashEmbedder
from tests.integration.test_filters import map_filter_fields

pytestmark = pytest.mark.integration

DECLARED = "team:keyword,year:number"
ALICE = Principal(tenant="lc-a", user_id="alice", groups=("staff",))
BOB = Principal(tenant="lc-b", user_id="bob", groups=("staff",))
ROOT = Path(__file__).resolve().parents[2]

DOCS = [
    LcDocument(
        page_content="VPN access needs a hardware key from the IT desk.",
        metadata={"team": "it", "year": 2025, "path": "handbook/vpn.md"},
    ),
    LcDocument(
        page_content="Expense reports are due on the fifth of each month.",
        metadata={"team": "finance", "year": 2024, "path": "handbook/expenses.md"},
    ),
    LcDocument(
        page_content="Reset a forgotten VPN password at the self-service portal.",
        metadata={"team": "it", "year": 2023, "url": "https://intranet.example/pw"},
    ),
]
IDS = ["vpn", "expenses", "passwords"]


@pytest.fixture
def indices(es, bootstrapped, settings) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    chunks = f"{settings.chunks_index}-test-lc-{tag}"
    state = f"{settings.corpus_state_index}-test-lc-{tag}"
    for name in (chunks, state):
        es.create_index(name)
    map_filter_fields(es, chunks, parse_filterable_fields(DECLARED))
    yield chunks, state
    es.delete_index(f"{chunks},{state}")


def make_store(engine: Any, indices: tuple[str, str], principal: Principal, **kw: Any) -> Any:
    chunks, state = indices
    searcher = HybridSearcher(
        engine,
        HashEmbedder(),
        index=chunks,
        corpus_state_index=state,
        fusion="client",
        filterable_fields=DECLARED,
    )
    ingestor = Ingestor(
        engine, HashEmbedder(), index=chunks, corpus_state=CorpusState(engine, state)
    )
    kw.setdefault("acl_groups", ("staff",))
    return HybridEsVectorStore(searcher, ingestor, principal, **kw)


def _ids(docs: list[LcDocument]) -> list[str | None]:
    return [d.id for d in docs]


def test_written_documents_read_back_with_their_metadata_and_provenance(es, indices):
    store = make_store(es, indices, ALICE)
    assert store.add_documents(DOCS, ids=IDS, titles=["VPN", "Expenses", "Passwords"]) == IDS
    by_id = store.get_by_ids(["passwords", "vpn", "nope"])
    assert _ids(by_id) == ["passwords", "vpn"]  # in the order asked; a missing id left out
    for doc, original in zip(by_id, (DOCS[2], DOCS[0]), strict=True):
        assert doc.page_content == original.page_content
        assert {k: v for k, v in doc.metadata.items() if k != "hybrid_es"} == original.metadata
        assert doc.metadata["hybrid_es"]["tenant"] == "lc-a"
        assert doc.metadata["hybrid_es"]["doc_id"] == doc.id
    found = store.similarity_search_with_score("hardware key for the VPN", k=3)
    assert found[0][0].id == "vpn" and found[0][0].metadata["path"] == "handbook/vpn.md"
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert found[0][0].metadata["hybrid_es"]["authorization_allowed"] is True
    # Without provenance the metadata is exactly what was written (LangChain's round trip).
    plain = make_store(es, indices, ALICE, provenance=False)
    assert plain.get_by_ids(["expenses"]) == [
        LcDocument(id="expenses", page_content=DOCS[1].page_content, metadata=DOCS[1].metadata)
    ]
    # Ids given by nobody are stable: the same document added again is the same document.
    again = plain.add_texts(["Lunch is at noon."], [{"team": "it"}])
    assert again == plain.add_texts(["Lunch is at noon."], [{"team": "it"}])
    assert again == [stable_id("Lunch is at noon.", {"team": "it"})]
    assert len(plain.get_by_ids(again)) == 1


def test_filters_narrow_the_store_its_retriever_and_the_retriever(es, indices):
    store = make_store(es, indices, ALICE)
    store.add_documents(DOCS, ids=IDS)
    query = "VPN password expense"
    assert set(_ids(store.similarity_search(query, k=5))) == set(IDS)
    assert set(_ids(store.similarity_search(query, k=5, filter={"team": "it"}))) == {
        "vpn",
        "passwords",
    }
    newer = {"$and": [{"team": "it"}, {"year": {"$gte": 2024}}]}
    assert _ids(store.similarity_search(query, k=5, filter=newer)) == ["vpn"]
    retriever = store.as_retriever(search_kwargs={"k": 5, "filter": {"team": "finance"}})
    assert _ids(retriever.invoke(query)) == ["expenses"]
    assert _ids(retriever.invoke(query, filter={"year": {"$lt": 2024}})) == ["passwords"]
    # The per-call retriever: the principal per call, a default filter, replaced per call.
    lc = HybridEsRetriever(searcher=store.searcher, filter={"team": "it"}, top_k=5)
    docs = lc.invoke(query, principal=ALICE)
    assert {d.metadata["hybrid_es"]["doc_id"] for d in docs} == {"passwords", "vpn"}
    docs = lc.invoke(query, principal=ALICE, filter={"$not": {"team": "it"}})
    assert {d.metadata["hybrid_es"]["doc_id"] for d in docs} == {"expenses"}
    docs = asyncio.run(lc.ainvoke(query, principal=ALICE, filter={"year": 2023}))
    assert {d.metadata["hybrid_es"]["doc_id"] for d in docs} == {"passwords"}


BAD_FILTERS = [
    {"tenant": "lc-b"},
    {"acl_groups": "staff"},
    {"owner": "alice"},
    {"year": {"$gte": "recent"}},
    {"script": {"script": "true"}},
    {"$or": [{"team": "it"}, {"terms": {"tenant": ["lc-b"]}}]},
]


@pytest.mark.parametrize("bad", BAD_FILTERS, ids=lambda f: str(f)[:40])
def test_a_bad_filter_is_refused_before_any_request(es, indices, wire, bad):
    make_store(es, indices, ALICE).add_documents(DOCS, ids=IDS)
    engine, log = wire
    store = make_store(engine, indices, ALICE)
    retriever = HybridEsRetriever(searcher=store.searcher)
    log.clear()
    with pytest.raises(FilterError):
        store.similarity_search("VPN", filter=bad)
    with pytest.raises(FilterError):
        store.as_retriever(search_kwargs={"filter": bad}).invoke("VPN")
    with pytest.raises(FilterError):
        retriever.invoke("VPN", principal=ALICE, filter=bad)
    with pytest.raises(FilterError):
        HybridEsRetriever(searcher=store.searcher, filter=bad)
    assert log == []


def test_deleted_documents_are_gone_and_missing_ids_are_no_error(es, indices):
    store = make_store(es, indices, ALICE)
    store.add_documents(DOCS, ids=IDS)
    assert store.delete(["vpn", "passwords", "never-written"]) is True
    assert store.get_by_ids(IDS) == [d for d in store.get_by_ids(["expenses"])]
    assert _ids(store.similarity_search("VPN hardware key password", k=5)) == ["expenses"]


def test_a_deleted_document_added_again_is_found_again(es, indices):
    store = make_store(es, indices, ALICE)
    store.add_documents(DOCS[:1], ids=["vpn"])
    store.delete(["vpn"])
    store.add_documents(DOCS[:1], ids=["vpn"])
    assert _ids(store.get_by_ids(["vpn"])) == ["vpn"]


def test_another_tenants_store_cannot_see_delete_or_overwrite(es, indices):
    alice = make_store(es, indices, ALICE)
    alice.add_documents(DOCS, ids=IDS)
    bob = make_store(es, indices, BOB)
    # Bob's tenant has written nothing: an empty store, as for any id that does not exist.
    assert bob.similarity_search("VPN", k=5) == []
    assert bob.get_by_ids(IDS) == bob.get_by_ids(["no-such-id"]) == []
    assert bob.delete(IDS) == bob.delete(["no-such-id"]) is True
    # Bob writes his own document under one of Alice's ids: another document, his own.
    bob.add_documents(
        [LcDocument(page_content="Bob's VPN note.", metadata={"team": "it"})], ids=["vpn"]
    )
    assert [d.page_content for d in bob.get_by_ids(IDS)] == ["Bob's VPN note."]
    assert {d.metadata["hybrid_es"]["tenant"] for d in bob.similarity_search("VPN", k=5)} == {
        "lc-b"
    }
    # Alice's documents are all there, unchanged.
    mine = alice.get_by_ids(IDS)
    assert _ids(mine) == IDS and mine[0].page_content == DOCS[0].page_content
    assert "Bob" not in " ".join(d.page_content for d in alice.similarity_search("VPN note", k=5))


def test_refused_documents_are_raised_after_the_rest_was_written(es, indices):
    store = make_store(es, indices, ALICE)
    wrong_type = LcDocument(page_content="Year unknown.", metadata={"year": "soon"})
    with pytest.raises(BulkIndexError) as refused:
        store.add_documents([*DOCS, wrong_type], ids=[*IDS, "undated"])
    assert [f["doc_id"] for f in refused.value.failed] == ["undated"]
    assert "undated" in str(refused.value) and "year" in refused.value.failed[0]["reason"]
    assert _ids(store.get_by_ids([*IDS, "undated"])) == IDS
    # A document that cannot be a document at all (empty text, metadata that cannot be stored)
    # is refused with its reason, and the rest is written.
    with pytest.raises(BulkIndexError) as unwritable:
        store.add_documents(
            [
                LcDocument(page_content="New.", id="new"),
                LcDocument(page_content=" ", id="blank"),
                LcDocument(page_content="Binary.", id="bytes", metadata={"raw": b"\x00"}),
            ]
        )
    assert [f["doc_id"] for f in unwritable.value.failed] == ["blank", "bytes"]
    assert all(f["reason"] for f in unwritable.value.failed)
    assert _ids(store.get_by_ids(["new", "blank", "bytes"])) == ["new"]
    with pytest.raises(TypeError, match="colour"):
        store.add_documents(DOCS, colour="red")


def test_async_methods_and_from_texts(es, indices):
    store = make_store(es, indices, ALICE, provenance=False)

    async def flow() -> list[Any]:
        ids = await store.aadd_documents(DOCS, ids=IDS)
        found = await store.asimilarity_search("VPN", k=2, filter={"team": "it"})
        await store.adelete(["vpn"])
        return [ids, _ids(found), _ids(await store.aget_by_ids(IDS))]

    assert asyncio.run(flow()) == [IDS, ["vpn", "passwords"], ["expenses", "passwords"]]
    built = HybridEsVectorStore.from_texts(
        ["Parking permits come from reception."],
        metadatas=[{"team": "facilities"}],
        ids=["parking"],
        searcher=store.searcher,
        ingestor=store.ingestor,
        principal=ALICE,
        acl_groups=("staff",),
    )
    assert _ids(built.similarity_search("parking", k=1, filter={"team": "facilities"})) == [
        "parking"
    ]
    assert isinstance(built.embeddings, HybridEsEmbeddings)
    assert built.embeddings.embed_query("x") == [
        float(v) for v in HashEmbedder().embed_queries(["x"])[0]
    ]
    with pytest.raises(ConfigurationError, match="embedding=None"):
        HybridEsVectorStore.from_texts(
            ["x"],
            embedding=object(),
            searcher=store.searcher,
            ingestor=store.ingestor,
            principal=ALICE,  # type: ignore[arg-type]
        )


def test_the_example_program(es):
    """examples/langchain_app.py as a user runs it: its bootstrap declares ``team`` in its own
    namespace (no ``--force``: the session's templates are not touched), dropped afterwards."""
    ns = namespaces.example_namespace("langchain_app.py")
    namespaces.drop(es, ns)
    try:
        run = namespaces.run_example("langchain_app.py")
    finally:
        namespaces.drop(es, ns)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("handbook/") for line in lines), run.stdout
    assert {line.split(":")[0] for line in lines} == {"handbook/vpn.md", "handbook/passwords.md"}
