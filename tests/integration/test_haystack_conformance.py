"""Haystack's own DocumentStore conformance suite (``haystack.testing.document_store``) run on
:class:`~hybrid_es.adapters.haystack_store.HybridEsDocumentStore`, against the real engine.

Each test gets its own chunks and corpus-state indices, with the metadata fields that
``FilterDocumentsTest`` filters on declared filterable (``meta.number``, ``name``, ``page``,
``chapter``, ``date``), and a store bound to one writer principal whose documents every user
of its tenant may read.

Where the store differs from Haystack's reference behaviour on purpose, the test is overridden
here, with the reason:

- ``assert_documents_are_equal`` ignores ``embedding`` and order: hybrid-es embeds every record
  with the index's own model and does not store (or return) the caller's vectors, and lists by
  document id. Everything else (id, content, meta, score None) must be equal.
- ``test_write_documents``: Haystack leaves the default policy to the store; here ``NONE`` is
  ``FAIL``, as in Haystack's own stores.
- the ``*_with_none`` comparisons are skipped: hybrid-es filters refuse a None value
  (FilterError) instead of reading ``== None`` as "the field is missing" (the neutral grammar has
  no ``$exists``) or ``> None`` as "matches nothing" (tests/unit/test_haystack_filters.py pins
  the refusal).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

# Haystack reports pipeline runs to its telemetry service unless told so before it is imported.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
pytest.importorskip("haystack", reason="the adapters extra is not installed (haystack)")

from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.testing.document_store import DocumentStoreBaseTests

from hybrid_es.adapters.haystack_store import HybridEsDocumentStore, whole_document
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.models import Principal
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.conftest import HashEmbedder
from tests.integration.test_filters import map_filter_fields

pytestmark = pytest.mark.integration

DECLARED = "number:number,name:keyword,page:keyword,chapter:keyword,date:date"
FIELDS = parse_filterable_fields(DECLARED)
WRITER = Principal(tenant="hs-conformance", user_id="indexer")
NONE_REFUSED = (
    "hybrid-es filters refuse a None value (FilterError): the neutral grammar cannot say 'the "
    "field is missing' (no $exists), and a comparison that would silently match nothing is "
    "refused rather than run"
)


@pytest.fixture
def scratch(es, bootstrapped, settings) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """A chunks index mapping the declared fields and a corpus-state index, deleted after."""
    tag = uuid.uuid4().hex[:10]
    chunks = f"{settings.chunks_index}-test-hsconf-{tag}"
    state = f"{settings.corpus_state_index}-test-hsconf-{tag}"
    es.create_index(chunks)
    es.create_index(state)
    try:
        map_filter_fields(es, chunks, FIELDS)
        yield chunks, state
    finally:
        es.delete_index(f"{chunks},{state}")


def make_store(
    es: Any, chunks: str, state: str, principal: Principal, fields: Any = FIELDS
) -> HybridEsDocumentStore:
    """A store over the scratch indices, with the model-free embedder (its subject is the
    protocol, not the model), declaring ``fields``."""
    searcher = HybridSearcher(
        es, HashEmbedder(), index=chunks, corpus_state_index=state, filterable_fields=fields
    )
    ingestor = Ingestor(
        es,
        HashEmbedder(),
        index=chunks,
        corpus_state=CorpusState(es, state),
        chunker=whole_document,
    )
    return HybridEsDocumentStore(principal, acl_groups=["*"], searcher=searcher, ingestor=ingestor)


class TestHybridEsDocumentStore(DocumentStoreBaseTests):
    @pytest.fixture
    def document_store(self, es, scratch) -> HybridEsDocumentStore:  # type: ignore[no-untyped-def]
        return make_store(es, *scratch, WRITER)

    @staticmethod
    def assert_documents_are_equal(received: list[Document], expected: list[Document]) -> None:
        # Order and the caller's embeddings aside (module docstring), the documents as written.
        def comparable(docs: list[Document]) -> list[dict[str, Any]]:
            return sorted(
                ({**d.to_dict(flatten=False), "embedding": None} for d in docs),
                key=lambda d: d["id"],
            )

        assert all(d.embedding is None and d.score is None for d in received)
        assert comparable(received) == comparable(expected)

    def test_write_documents(self, document_store):  # type: ignore[no-untyped-def]
        doc = Document(content="test doc", meta={"name": "first"})
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            document_store.write_documents([doc])  # NONE is FAIL
        assert document_store.write_documents([doc], policy=DuplicatePolicy.OVERWRITE) == 1
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])

    @pytest.mark.skip(reason=NONE_REFUSED)
    def test_comparison_equal_with_none(self, document_store, filterable_docs):  # type: ignore[no-untyped-def]
        pass

    @pytest.mark.skip(reason=NONE_REFUSED)
    def test_comparison_not_equal_with_none(self, document_store, filterable_docs):  # type: ignore[no-untyped-def]
        pass

    @pytest.mark.skip(reason=NONE_REFUSED)
    def test_comparison_greater_than_with_none(self, document_store, filterable_docs):  # type: ignore[no-untyped-def]
        pass

    @pytest.mark.skip(reason=NONE_REFUSED)
    def test_comparison_greater_than_equal_with_none(self, document_store, filterable_docs):  # type: ignore[no-untyped-def]
        pass

    @pytest.mark.skip(reason=NONE_REFUSED)
    def test_comparison_less_than_with_none(self, document_store, filterable_docs):  # type: ignore[no-untyped-def]
        pass

    @pytest.mark.skip(reason=NONE_REFUSED)
    def test_comparison_less_than_equal_with_none(self, document_store, filterable_docs):  # type: ignore[no-untyped-def]
        pass
