"""Traditional and Simplified Chinese match each other in the BM25 leg (issue 26), at ingest and
at query time, on the engine the environment names: scripts/test.sh runs this module on
Elasticsearch (the ``standard`` analysis profile) and on OpenSearch (``full``, CJK bigrams).

Two indices hold the travel fixture's English records with its Chinese ones: in Simplified as
written (tests/fixtures/travel.jsonl), or in Traditional (tests/fixtures/travel-zh-hant.jsonl,
converted by OpenCC's ``s2t``). Each question is asked in Simplified, in OpenCC's Traditional
and in Taiwan's standard forms (床 and 為 where OpenCC writes 牀 and 爲): every form gets the same
hits in the same order with the same scores, over either index."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import date

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import RequestScope, SearchResponse
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.text.folding import fold_for_matching
from tests.conftest import FIXTURES, owner, travel_documents
from tests.constants import AGENT, NOW

pytestmark = pytest.mark.integration

STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
ENGLISH = ("D1-current-contract", "D2-accessibility-note", "D4-generic-brochure")
SIMPLIFIED = ("D1-current-contract-zh", "D2-accessibility-note-zh")
CONTRACT = "D1-current-contract-zh"

# (Simplified, OpenCC Traditional, Taiwan standard forms). Without folding, OpenCC's Traditional
# form shares 1 of its 9 character bigrams (每晚) with the Simplified contract, where the
# Simplified question shares 7.
PRICE = ("无障碍双床房每晚价格", "無障礙雙牀房每晚價格", "無障礙雙床房每晚價格")
WITH_ID = (
    "KYO-H12 四月 无障碍淋浴间 房价",
    "KYO-H12 四月 無障礙淋浴間 房價",
    "KYO-H12 四月 無障礙淋浴間 房價",
)


def _traditional() -> list[Document]:
    lines = (FIXTURES / "travel-zh-hant.jsonl").read_text(encoding="utf-8").splitlines()
    return [Document.model_validate(json.loads(line)) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def corpora(es, bootstrapped, settings, embedder) -> Iterator[dict[str, dict[str, str]]]:  # type: ignore[no-untyped-def]
    """Index names by script: ``hans`` holds the Chinese records in Simplified, ``hant`` in
    Traditional; both hold the same English records. Deleted afterwards."""
    out: dict[str, dict[str, str]] = {}
    docs = {
        "hans": travel_documents(*ENGLISH, *SIMPLIFIED),
        "hant": [*travel_documents(*ENGLISH), *_traditional()],
    }
    try:
        for script, group in docs.items():
            tag = uuid.uuid4().hex[:10]
            names = {
                "chunks": f"{settings.chunks_index}-test-zh-{script}-{tag}",
                "corpus_state": f"{settings.corpus_state_index}-test-zh-{script}-{tag}",
            }
            out[script] = names
            for n in names.values():
                es.create_index(n)
            ing = Ingestor(
                es,
                embedder,
                index=names["chunks"],
                corpus_state=CorpusState(es, names["corpus_state"]),
            )
            ing.ingest(group, owner("demo-A"), now=NOW)
        yield out
    finally:
        for names in out.values():
            es.delete_index(",".join(names.values()))


def _search(es, embedder, names, question, **kw) -> SearchResponse:  # type: ignore[no-untyped-def]
    searcher = HybridSearcher(
        es, embedder, index=names["chunks"], corpus_state_index=names["corpus_state"], **kw
    )
    return searcher.search(question, AGENT, STAY, now=NOW)


def _ranking(resp: SearchResponse) -> list[tuple[str, float | None]]:
    return [(h.doc_id, h.sparse_score) for h in resp.hits]


@pytest.mark.parametrize("questions", [PRICE, WITH_ID], ids=["price", "with-id"])
@pytest.mark.parametrize("script", ["hans", "hant"])
def test_every_script_of_a_question_gets_the_same_bm25_ranking(
    es, embedder, corpora, script, questions
):
    rankings = [
        _ranking(_search(es, embedder, corpora[script], q, pipeline="bm25")) for q in questions
    ]
    assert rankings[0], "no hit"
    assert rankings[1] == rankings[0] and rankings[2] == rankings[0]
    suffix = "-hant" if script == "hant" else ""
    assert rankings[0][0][0] == CONTRACT + suffix


def test_the_traditional_records_rank_as_their_simplified_originals(es, embedder, corpora):
    # t2s(s2t(text)) is the text: both indices hold the same folded text, so BM25 ranks and
    # scores them alike (the Chinese question matches no English record).
    hans = _ranking(_search(es, embedder, corpora["hans"], PRICE[1], pipeline="bm25"))
    hant = _ranking(_search(es, embedder, corpora["hant"], PRICE[0], pipeline="bm25"))
    assert [(d.removesuffix("-hant"), s) for d, s in hant] == hans
    assert [d for d, _ in hans] == [CONTRACT, "D2-accessibility-note-zh"]


@pytest.mark.parametrize("script", ["hans", "hant"])
def test_the_default_hybrid_search_finds_the_contract_in_either_script(
    es, embedder, corpora, script
):
    suffix = "-hant" if script == "hant" else ""
    for question in (*PRICE, *WITH_ID):
        resp = _search(es, embedder, corpora[script], question)
        assert resp.hits[0].doc_id == CONTRACT + suffix, question


def test_records_are_stored_and_shown_as_written(es, embedder, corpora):
    resp = _search(es, embedder, corpora["hant"], PRICE[0], pipeline="bm25")
    hit = resp.hits[0]
    (written,) = [d for d in _traditional() if d.id == hit.doc_id]
    assert hit.title == written.title and hit.title.startswith("供應商合約 KYO-H12")
    assert "價格爲每晚" in hit.text and "价格" not in hit.text
    assert hit.source["raw_chunk_text"] == written.body
    assert "價格爲每晚" in hit.source["search_payload"]
    key = chunk_key("demo-A", hit.chunk_id)
    stored = es.get(corpora["hant"]["chunks"], key)
    assert stored is not None
    assert "价格为每晚" in stored["_source"]["search_folded"]
    assert stored["_source"]["title_folded"] == fold_for_matching(written.title)
    assert stored["_source"]["title_folded"].startswith("供应商合约 KYO-H12")
