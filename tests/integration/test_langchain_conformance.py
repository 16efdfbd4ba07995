"""LangChain's own standard tests (``langchain-tests``) on :class:`HybridEsVectorStore`, on the
real engine (both engines): every test of ``VectorStoreIntegrationTests``, sync and async, none
overridden or skipped.

The store is built as the standard tests expect one: empty for each test (its own chunks and
corpus-state indices, deleted after), bound to one principal whose group is the documents' ACL,
and with ``provenance=False``, since the tests compare returned documents with ``==`` against
the metadata written (with the default, ``provenance=True``, each document also carries
``metadata["hybrid_es"]``, and those comparisons fail on that key only). The standard tests'
``get_embeddings()`` (a fake 6-dimensional model) is not used: the store embeds with its
searcher's embedder, the model the chunks index holds (here the hashing test embedder).

Not applicable: ``RetrieversIntegrationTests``. It calls ``invoke(query)`` with no principal, which
:class:`~hybrid_es.adapters.langchain.HybridEsRetriever` refuses by design (it never searches
without the caller's principal); the store's ``as_retriever()`` is LangChain's own
``VectorStoreRetriever``, which the vector-store tests and ``test_langchain_store`` exercise.

The async standard tests are plain ``async def`` (LangChain runs them with pytest-asyncio's auto
mode); here anyio's pytest plugin runs them, on asyncio, so the suite's pytest-asyncio settings
(strict) stay as they are. ``langchain-tests`` is a dev dependency; where it is absent the module
is skipped, by name.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

pytest.importorskip("langchain_tests", reason="langchain-tests is not installed (dev extra)")

from langchain_tests.integration_tests import VectorStoreIntegrationTests

from hybrid_es.adapters.langchain_store import HybridEsVectorStore
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.conftest import HashEmbedder

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CALLER = Principal(tenant="lc-standard", user_id="writer", groups=("standard",))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class TestHybridEsVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, es, bootstrapped, settings) -> Iterator[HybridEsVectorStore]:  # type: ignore[no-untyped-def, override]
        tag = uuid.uuid4().hex[:10]
        chunks = f"{settings.chunks_index}-test-lcstd-{tag}"
        state = f"{settings.corpus_state_index}-test-lcstd-{tag}"
        for name in (chunks, state):
            es.create_index(name)
        try:
            searcher = HybridSearcher(
                es, HashEmbedder(), index=chunks, corpus_state_index=state, fusion="client"
            )
            ingestor = Ingestor(
                es, HashEmbedder(), index=chunks, corpus_state=CorpusState(es, state)
            )
            yield HybridEsVectorStore(
                searcher, ingestor, CALLER, acl_groups=("standard",), provenance=False
            )
        finally:
            es.delete_index(f"{chunks},{state}")
