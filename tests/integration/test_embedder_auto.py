"""``HYBRID_ES_EMBEDDER=auto`` on a real engine (issue 26): a new chunks index takes its embedder
from the scripts of its first documents and records it (with why) in its mapping; searches embed
with the model the index records and say which (``SearchResponse.embedder``); the capability
report states it per index; a fixed embedder that differs from an index's is refused before
anything is written or searched, as before.

The two named models are stand-ins (hashed trigrams under the names ``test/minilm`` and
``test/e5``): the subject is which model serves which index, not what a model computes."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.errors import ModelError
from hybrid_es.evaluation.metering import HashEmbedder
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout
from tests.conftest import owner, travel_documents
from tests.constants import AGENT, NOW

pytestmark = pytest.mark.integration

STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
CHINESE = ("D1-current-contract-zh", "D2-accessibility-note-zh")
ENGLISH = ("D1-current-contract", "D2-accessibility-note", "D4-generic-brochure")


class Named(HashEmbedder):
    def __init__(self, name: str) -> None:
        self.model_id = f"test/{name}"


def _auto() -> Embedders:
    return Embedders(make=Named)


def _meta(es: Any, index: str) -> dict[str, Any]:
    (mapping,) = es.get_mapping(index).values()
    return dict(mapping.get("_meta", {}))


def _ingest(es: Any, names: dict[str, str], embedders: Any, ids: tuple[str, ...]) -> Any:
    ing = Ingestor(
        es,
        embedders,
        index=names["chunks"],
        corpus_state=CorpusState(es, names["corpus_state"]),
    )
    return ing.ingest(travel_documents(*ids), owner("demo-A"), now=NOW)


def _searcher(es: Any, names: dict[str, str], embedders: Any) -> HybridSearcher:
    return HybridSearcher(
        es, embedders, index=names["chunks"], corpus_state_index=names["corpus_state"]
    )


def test_a_chinese_index_takes_the_multilingual_model_and_searches_with_it(es, fresh_indices):
    assert "embedding_model" not in _meta(es, fresh_indices["chunks"])  # the template's: none
    report = _ingest(es, fresh_indices, _auto(), CHINESE)
    assert report.embedder == "test/e5" and report.embedded
    meta = _meta(es, fresh_indices["chunks"])
    assert meta["embedding_model"] == "test/e5"
    assert meta["embedding_choice"].startswith("auto: 2 of the first 2 documents")
    resp = _searcher(es, fresh_indices, _auto()).search(
        "无障碍双床房每晚价格", AGENT, STAY, now=NOW, rerank=False
    )
    assert resp.embedder == "test/e5" and resp.legs["dense"]
    assert resp.fusion_path == "client-linear" and resp.dense_weight is not None
    assert resp.hits and resp.hits[0].doc_id in CHINESE
    # A later ingest keeps the index's model, whatever its documents' script.
    assert _ingest(es, fresh_indices, _auto(), ENGLISH).embedder == "test/e5"


def test_an_english_index_takes_the_english_model(es, fresh_indices):
    assert _ingest(es, fresh_indices, _auto(), ENGLISH).embedder == "test/minilm"
    assert _meta(es, fresh_indices["chunks"])["embedding_model"] == "test/minilm"
    resp = _searcher(es, fresh_indices, _auto()).search(
        "KYO-H12 April roll-in shower rate", AGENT, STAY, now=NOW, rerank=False
    )
    assert resp.embedder == "test/minilm" and resp.hits


def test_a_fixed_embedder_other_than_the_index_is_refused(es, fresh_indices):
    _ingest(es, fresh_indices, _auto(), CHINESE)
    other = Named("minilm")
    with pytest.raises(ModelError, match="holds vectors from test/e5"):
        _ingest(es, fresh_indices, other, ENGLISH)
    with pytest.raises(ModelError, match="was built with test/e5"):
        _searcher(es, fresh_indices, other).search("价格", AGENT, STAY, now=NOW)
    # A model auto does not make is refused by name, with the setting that serves the index.
    es.put_mapping(fresh_indices["chunks"], {"_meta": {"embedding_model": "acme/other"}})
    with pytest.raises(ModelError, match="acme/other") as err:
        _searcher(es, fresh_indices, _auto()).search("价格", AGENT, STAY, now=NOW)
    assert "HYBRID_ES_EMBEDDER" in (err.value.hint or "")


def test_a_search_before_the_first_ingest_does_not_pin_the_model(es, fresh_indices):
    """A searcher that met the index empty reads its model again: the first ingest may choose
    the multilingual one after that search."""
    state = CorpusState(es, fresh_indices["corpus_state"])
    state.finish("demo-A", state.begin("demo-A"), None)  # the tenant exists, with no chunk
    searcher = _searcher(es, fresh_indices, _auto())
    assert not searcher.search("价格", AGENT, STAY, now=NOW).hits
    _ingest(es, fresh_indices, _auto(), CHINESE)
    resp = searcher.search("无障碍双床房每晚价格", AGENT, STAY, now=NOW, rerank=False)
    assert resp.embedder == "test/e5" and resp.hits


def test_the_capability_report_states_each_chunks_index_embedder(es, fresh_indices, settings):
    _ingest(es, fresh_indices, _auto(), CHINESE)
    layout = IndexLayout(
        chunks=fresh_indices["chunks"],
        packets=fresh_indices["packets"],
        traces=settings.traces_index,
        corpus_state=fresh_indices["corpus_state"],
    )
    caps = probe(es, layout=layout)
    rows = {i.index: i for i in caps.indices or ()}
    row = rows[fresh_indices["chunks"]]
    assert row.embedding_model == "test/e5" and "auto: 2 of the first 2" in (
        row.embedding_choice or ""
    )
    assert "embedder test/e5 (auto:" in row.describe()
