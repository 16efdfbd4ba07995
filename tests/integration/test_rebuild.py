"""A tenant's chunks index rebuilt online (``ingest.rebuild``, ``cluster.generations``), on the
real engine: to another embedding model, with writes made meanwhile, while a long-lived searcher
keeps searching, and back.

The answers after the switch are exactly those of a fresh ingest with the new model (the same
records, the same vectors); switching back restores the earlier answers exactly; writes made
during the rebuild reach the new generation; a searcher built before the switch answers from
the new generation with the new model, never failing; a packet built before the switch is still
``reuse``; and the tenant's writes wait while the switch holds them.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.generations import create, current
from hybrid_es.errors import ConfigurationError, PolicyViolationError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.ingest.rebuild import Rebuild
from hybrid_es.models import WRITER_ROLE, Principal, RequestScope
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout
from tests.conftest import HashEmbedder

pytestmark = pytest.mark.integration

TENANT = "rb"
WRITER = Principal(tenant=TENANT, user_id="loader", roles=(WRITER_ROLE,))
READER = Principal(tenant=TENANT, user_id="ana", groups=("staff",))
QUESTIONS = ["Kyoto hotel rate", "pool opening hours", "passport validity", "breakfast menu"]


class OtherModel(HashEmbedder):
    """Another model: hashed trigrams under another key (other vectors, the same size)."""

    model_id = "test/hashed-trigrams-b"

    def _one(self, text: str) -> list[float]:
        v = [0.0] * self.dims
        t = f"  {text.lower()}  "
        for i in range(len(t) - 2):
            h = hashlib.blake2b(t[i : i + 3].encode(), digest_size=4, person=b"other").digest()
            v[int.from_bytes(h, "big") % self.dims] += 1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]


def docs(n: int = 40) -> list[Document]:
    topics = ["Kyoto hotel room rate", "pool opening hours", "passport validity", "menu"]
    return [
        Document(
            id=f"doc-{i}",
            tenant=TENANT,
            title=f"{topics[i % 4]} note {i}",
            body=f"{topics[i % 4]} for season {i}: detail {i * 7} and remark {i % 5}.",
            acl_groups=("staff",),
        )
        for i in range(n)
    ]


@dataclass
class World:
    layout: IndexLayout
    state: CorpusState

    def ingestor(self, es: Any, embedder: Any) -> Ingestor:
        return Ingestor(es, embedder, layout=self.layout, corpus_state=self.state)

    def searcher(self, es: Any, embedder: Any) -> HybridSearcher:
        return HybridSearcher(es, embedder, layout=self.layout, fusion="client")

    def rebuild(self, es: Any, embedder: Any, recorded: Any = None) -> Rebuild:
        return Rebuild(es, self.layout, self.state, embedder=embedder, recorded=recorded)


def _layout(settings: Any, tag: str) -> IndexLayout:
    return IndexLayout(
        chunks=f"{settings.chunks_index}-test-rb-{tag}",
        packets=f"{settings.packets_index}-test-rb-{tag}",
        corpus_state=f"{settings.corpus_state_index}-test-rb-{tag}",
    )


@pytest.fixture
def world(es, bootstrapped, settings) -> Iterator[World]:  # type: ignore[no-untyped-def]
    layout = _layout(settings, uuid.uuid4().hex[:10])
    es.create_index(layout.corpus_state)
    es.create_index(layout.packets)
    create(es, layout.chunks_for(TENANT))  # generation 1 behind the tenant's alias
    try:
        yield World(layout, CorpusState(es, layout.corpus_state))
    finally:
        es.delete_index(f"{layout.chunks}*,{layout.packets},{layout.corpus_state}")


def answers(searcher: HybridSearcher) -> list[list[tuple[str, float]]]:
    """Each question's hits and fused scores."""
    return [
        [(h.chunk_id, round(h.fused_score, 9)) for h in searcher.search(q, READER).hits]
        for q in QUESTIONS
    ]


def ranked(searcher: HybridSearcher) -> list[list[str]]:
    """Each question's hits in order. Two indices of the same vectors rank alike, while their
    scores may differ in the fifth decimal: ``int8_hnsw`` quantises per segment, and two
    indices written in other batches hold other segments."""
    return [[chunk for chunk, _ in hits] for hits in answers(searcher)]


def test_a_rebuild_to_another_model_answers_as_a_fresh_ingest_and_back_as_before(
    es, world, bootstrapped, settings
):
    world.ingestor(es, HashEmbedder()).ingest(docs(), WRITER)
    before = answers(world.searcher(es, HashEmbedder()))
    report = world.rebuild(es, OtherModel()).run(WRITER)
    name = world.layout.chunks_for(TENANT)
    assert report.switched and report.copied == report.embedded == 40
    assert (report.source, report.target) == (f"{name}+g1", f"{name}+g2")
    assert current(es, name).index == f"{name}+g2"
    after = ranked(world.searcher(es, OtherModel()))
    # A fresh ingest of the same documents with the new model, in a deployment of its own.
    fresh = World(_layout(settings, uuid.uuid4().hex[:10]), world.state)
    fresh.state = CorpusState(es, fresh.layout.corpus_state)
    es.create_index(fresh.layout.corpus_state)
    try:
        create(es, fresh.layout.chunks_for(TENANT))
        fresh.ingestor(es, OtherModel()).ingest(docs(), WRITER)
        assert after == ranked(fresh.searcher(es, OtherModel()))
    finally:
        es.delete_index(f"{fresh.layout.chunks}*,{fresh.layout.corpus_state}")
    assert after != [[c for c, _ in hits] for hits in before]  # another model, other ranks
    back = world.rebuild(es, None, recorded=lambda model: HashEmbedder()).switch_back(WRITER)
    assert back.switched and current(es, name).index == f"{name}+g1"
    assert answers(world.searcher(es, HashEmbedder())) == before
    assert world.rebuild(es, None).drop(WRITER) == [f"{name}+g2"]


def test_writes_made_during_a_rebuild_reach_the_new_generation(es, world):
    ingestor = world.ingestor(es, HashEmbedder())
    ingestor.ingest(docs(), WRITER)
    work = world.rebuild(es, OtherModel())
    built = work.run(WRITER, switch_now=False)  # the main pass done, not switched
    assert not built.switched
    # Meanwhile: a new document, a correction that shortens one, a deletion.
    ingestor.ingest(
        [
            Document(id="late", tenant=TENANT, body="A late pool note.", acl_groups=("staff",)),
            Document(id="doc-1", tenant=TENANT, body="Pool corrected.", acl_groups=("staff",)),
        ],
        WRITER,
    )
    assert ingestor.delete_document(WRITER, "doc-2") == 1
    done = work.run(WRITER)  # resumes: catches up, checks, switches
    assert done.switched and sum(done.catch_up) >= 3
    name = world.layout.chunks_for(TENANT)
    es.refresh(name)

    old, new = _all(es, f"{name}+g1"), _all(es, f"{name}+g2")
    assert old == new  # every record, the late writes included, and nothing more
    assert new["rb::late::v1::c0000"][0] == "A late pool note."
    assert new["rb::doc-1::v1::c0000"][0] == "Pool corrected."
    assert new["rb::doc-2::v1::c0000"][1] is True


def _all(es: Any, index: str) -> dict[str, tuple[Any, ...]]:
    """Every record of ``index`` by key: (text, deleted), read past the door (the test's own
    control read of its own index)."""
    from hybrid_es.retrieval.door import control_reads

    with control_reads("the rebuild test compares two generations"):
        resp = es.search(
            index,
            {"size": 1000, "query": {"match_all": {}}, "_source": ["raw_chunk_text", "deleted"]},
            what="the test's read",
        )
    return {
        h["_id"]: (h["_source"].get("raw_chunk_text"), bool(h["_source"].get("deleted")))
        for h in resp["hits"]["hits"]
    }


def test_a_searcher_made_before_the_switch_answers_from_the_new_generation(es, world):
    from hybrid_es.encoders.embedder_choice import ENGLISH, Embedders

    world.ingestor(es, HashEmbedder()).ingest(docs(), WRITER)
    # One segment first: a merge between the two searches below would quantise the vectors
    # again (int8_hnsw's quantiles are per segment) and move the kNN scores in the last digits.
    name = world.layout.chunks_for(TENANT)
    es.request("POST", f"/{name}/_forcemerge", params={"max_num_segments": "1"}, what="merging")
    es.refresh(name)
    # auto: each index is embedded with the model it records (here the two test models).
    embedders = Embedders(make=lambda model: HashEmbedder() if model == ENGLISH else OtherModel())
    searcher = world.searcher(es, embedders)
    assert answers(searcher) == answers(world.searcher(es, HashEmbedder()))
    world.rebuild(es, OtherModel()).run(WRITER)
    # The searcher checked the index's model before the switch; its next search meets the new
    # generation, checks it again and answers with the new model, as a new searcher does.
    assert ranked(searcher) == ranked(world.searcher(es, OtherModel()))
    assert searcher.checks.physical_of[name] == frozenset({f"{name}+g2"})


def test_a_writer_made_before_the_switch_writes_with_the_new_generations_model(es, world):
    """An ingestor that checked the index before the switch (its model cached) writes after
    it with the model the new generation records, never the one it checked."""
    from hybrid_es.encoders.embedder_choice import ENGLISH, Embedders

    embedders = Embedders(make=lambda name: HashEmbedder() if name == ENGLISH else OtherModel())
    ingestor = world.ingestor(es, embedders)
    ingestor.ingest(docs(8), WRITER)
    world.rebuild(es, OtherModel()).run(WRITER)
    late = Document(
        id="late", tenant=TENANT, body="Kyoto hotel rate after the switch", acl_groups=("staff",)
    )
    report = ingestor.ingest([late], WRITER)
    assert report.embedder == OtherModel.model_id
    name = world.layout.chunks_for(TENANT)
    from hybrid_es.retrieval.door import control_reads

    es.refresh(name)
    body: dict[str, Any] = {"query": {"term": {"doc_id": "late"}}}
    if es.flavor == "elasticsearch":  # 9.1 on leaves vectors out of _source unless asked
        body["_source"] = {"exclude_vectors": False}
    with control_reads("the test reads the late record's vector"):
        (hit,) = es.search(name, body, what="the test's read")["hits"]["hits"]
    assert hit["_index"] == f"{name}+g2"
    assert hit["_source"]["embedding_model"] == OtherModel.model_id
    expected = OtherModel().embed_passages([hit["_source"]["search_payload"]])[0]
    assert hit["_source"]["embedding"] == pytest.approx(expected, abs=1e-6)


def test_a_packet_built_before_the_switch_is_still_reused(es, world):
    world.ingestor(es, HashEmbedder()).ingest(docs(), WRITER)
    searcher = world.searcher(es, HashEmbedder())
    service = PacketService(
        searcher, PacketStore(es, world.layout.packets), ttl=timedelta(minutes=10)
    )
    pid = service.build("C-1", "Kyoto", "Kyoto hotel rate", READER, RequestScope())
    world.rebuild(es, HashEmbedder()).run(WRITER)  # same model: another analysis, say
    verdict = service.validate(pid.manifest.packet_id, READER, scope=RequestScope())
    assert verdict.kind == "reuse", verdict


def test_the_switch_holds_the_tenants_new_writes_until_it_is_done(es, world):
    ingestor = world.ingestor(es, HashEmbedder())
    ingestor.ingest(docs(4), WRITER)
    began: list[float] = []
    with world.state.writes_held(TENANT, wait=5):

        def begin() -> None:
            world.state.begin(TENANT)
            began.append(time.monotonic())

        writer = threading.Thread(target=begin)
        writer.start()
        time.sleep(1.0)
        assert not began  # waiting
        released = time.monotonic()
    writer.join(10)
    assert began and began[0] >= released


def test_a_member_may_not_rebuild_and_an_earlier_index_must_be_adopted_first(es, world):
    with pytest.raises(PolicyViolationError, match="may not rebuild"):
        world.rebuild(es, OtherModel()).run(READER)
    legacy = IndexLayout(
        chunks=f"{world.layout.chunks}-legacy", corpus_state=world.layout.corpus_state
    )
    es.create_index(legacy.chunks_for(TENANT))
    with pytest.raises(ConfigurationError, match="adopt"):
        Rebuild(es, legacy, world.state, embedder=OtherModel()).run(WRITER)
    live = current(es, legacy.chunks_for(TENANT))
    assert live is not None and not live.aliased


def test_a_rebuild_with_the_same_model_keeps_every_vector(es, world):
    """A change of analysis or mapping only: the records' vectors are copied, not made again,
    even where the engine leaves vectors out of ``_source`` (Elasticsearch 9.1 on)."""
    world.ingestor(es, HashEmbedder()).ingest(docs(), WRITER)
    before = ranked(world.searcher(es, HashEmbedder()))
    report = world.rebuild(es, HashEmbedder()).run(WRITER)
    assert report.switched and report.copied == 40 and report.embedded == 0
    name = world.layout.chunks_for(TENANT)
    from hybrid_es.retrieval.door import control_reads

    es.refresh(name)
    with control_reads("the test counts the new generation's vectors"):
        found = es.search(
            f"{name}+g2",
            {"size": 0, "track_total_hits": True, "query": {"exists": {"field": "embedding"}}},
            what="the test's read",
        )
    assert found["hits"]["total"]["value"] == 40
    assert ranked(world.searcher(es, HashEmbedder())) == before
