"""The LangChain adapters' checks that run before any request, without a cluster.

The searcher and the ingestor get a client for a closed port: any request would raise
EngineUnavailableError, so an error of another kind shows the call was refused before one was
sent. Stable ids are a pure function.
"""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core", reason="the adapters extra is not installed (langchain)")

from elasticsearch import Elasticsearch
from langchain_core.documents import Document as LcDocument

from hybrid_es.adapters.langchain import HybridEsRetriever
from hybrid_es.adapters.langchain_store import HybridEsVectorStore, stable_id
from hybrid_es.errors import (
    BadQueryError,
    BulkIndexError,
    ConfigurationError,
    FilterError,
    IngestError,
    PolicyViolationError,
)
from hybrid_es.evaluation.metering import HashEmbedder
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal
from hybrid_es.retrieval.searcher import HybridSearcher

CLOSED = "http://127.0.0.1:9"
ME = Principal(tenant="t1", user_id="u1")


def searcher(**kw: object) -> HybridSearcher:
    return HybridSearcher(
        Elasticsearch(CLOSED),
        HashEmbedder(),
        index="chunks",
        filterable_fields="team:keyword",
        **kw,
    )  # type: ignore[arg-type]


def store(**kw: object) -> HybridEsVectorStore:
    ingestor = Ingestor(Elasticsearch(CLOSED), HashEmbedder(), index="chunks")
    return HybridEsVectorStore(searcher(), ingestor, ME, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        {"tenant": "t2"},
        {"acl_users": "u2"},
        {"owner": "x"},
        {"team": {"$gt": "a"}},
        {"team": {"$regex": ".*"}},
        {"bool": {"should": [{"match_all": {}}]}},
        {"$or": []},
        "team = 'ops'",
    ],
    ids=str,
)
def test_a_bad_filter_is_refused_before_any_request(bad: object) -> None:
    with pytest.raises(FilterError):
        HybridEsRetriever(searcher=searcher(), filter=bad)  # type: ignore[arg-type]
    retriever = HybridEsRetriever(searcher=searcher())
    with pytest.raises(FilterError):
        retriever.invoke("q", principal=ME, filter=bad)
    with pytest.raises(FilterError):
        store().similarity_search("q", filter=bad)
    with pytest.raises(FilterError):
        store().as_retriever(search_kwargs={"filter": bad}).invoke("q")


def test_stable_ids_follow_the_text_and_metadata_only() -> None:
    one = stable_id("text", {"a": 1, "b": [1, 2]})
    assert one == stable_id("text", {"b": [1, 2], "a": 1})  # key order is not content
    assert one != stable_id("text", {"a": 2, "b": [1, 2]})
    assert one != stable_id("text ", {"a": 1, "b": [1, 2]})
    assert len(one) == 36 and one.count("-") == 4


def test_writes_that_cannot_be_written_are_refused_before_any_request() -> None:
    s = store()
    # Nothing writable: refused with each reason, and no request (the cluster here is closed).
    # With writable documents beside them, the rest is written first
    # (tests/integration/test_langchain_store.py).
    with pytest.raises(BulkIndexError, match="empty") as unwritable:
        s.add_documents([LcDocument(page_content=" ", id="empty")])
    assert [f["doc_id"] for f in unwritable.value.failed] == ["empty"]
    with pytest.raises(IngestError, match="2 ids for 1 documents"):
        s.add_documents([LcDocument(page_content="ok")], ids=["a", "b"])
    with pytest.raises(IngestError, match="metadatas"):
        s.add_texts(["a", "b"], [{}])
    with pytest.raises(TypeError, match="colour"):
        s.add_documents([LcDocument(page_content="ok")], colour="red")
    with pytest.raises(BadQueryError, match="ids"):
        s.delete()
    with pytest.raises(TypeError, match="where"):
        s.similarity_search("q", where={"team": "x"})


def test_a_store_is_bound_to_a_principal_and_one_deployment() -> None:
    ingestor = Ingestor(Elasticsearch(CLOSED), HashEmbedder(), index="chunks")
    with pytest.raises(PolicyViolationError, match="no principal"):
        HybridEsVectorStore(searcher(), ingestor, None)  # type: ignore[arg-type]
    elsewhere = Ingestor(Elasticsearch(CLOSED), HashEmbedder(), index="other-chunks")
    with pytest.raises(ConfigurationError, match="would not find what it writes"):
        HybridEsVectorStore(searcher(), elsewhere, ME)
    with pytest.raises(ConfigurationError, match="searcher=, ingestor= and principal="):
        HybridEsVectorStore.from_texts(["x"], searcher=searcher())
    with pytest.raises(ConfigurationError, match="embedding=None"):
        HybridEsVectorStore.from_texts(
            ["x"], object(), searcher=searcher(), ingestor=ingestor, principal=ME
        )  # type: ignore[arg-type]
    with pytest.raises(BadQueryError, match="relevance"):
        store().similarity_search_with_relevance_scores("q")
