"""An existing index as a source, kept in sync (issue 38), against the real engine: SciFact at
small scale in a legacy index with its own field names (``benchmarks.sync``) syncs to exactly the
chunks, and the nDCG@10, of the same documents ingested from their files; a changes pass embeds
only what changed and a full pass marks exactly what left; two processes with two slices write
what one does; an interrupted sync resumes and ends identical; another tenant's record is
refused and counted. The hashing embedder stands in for the model (the cluster is the subject);
``scripts/bench_sync.py`` runs the whole collection with the real one."""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from benchmarks.sync import (
    LEGACY_FIELD_MAP,
    READERS,
    change_records,
    delete_records,
    later,
    load_legacy,
)
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.source_connection import SourceSettings, connect_source
from hybrid_es.errors import ConfigurationError
from hybrid_es.evaluation.metrics import evaluate, ranking_to_run
from hybrid_es.ingest.beir import read_corpus, read_qrels, read_queries
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.ingest.sync import IndexSource, SyncHow, SyncRun, sync_index
from hybrid_es.ingest.sync_workers import SliceJob, run_slice
from hybrid_es.models import Principal
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout
from tests.conftest import HashEmbedder, owner, require_shared, unguarded

pytestmark = pytest.mark.integration
TENANT = "scifact"
DOCS = 120
"""SciFact's first documents: the small scale of the test (the benchmark runs all 5,183)."""
READER = Principal(tenant=TENANT, user_id="reader", groups=(READERS[0],))


@pytest.fixture(scope="module")
def scifact() -> Any:
    root = require_shared("scifact")
    return root, list(read_corpus(root, tenant=TENANT, acl_groups=READERS))[:DOCS]


@dataclass
class World:
    es: Any
    source: str
    layout: IndexLayout
    settings: Any

    def engine(self) -> Any:
        return connect_source(SourceSettings(), self.es, self.layout, self.source)

    def sync(self, how: SyncHow | None = None, **source: Any) -> SyncRun:
        src = IndexSource(self.source, **{"field_map": LEGACY_FIELD_MAP, **source})
        return sync_index(
            self.engine(),
            self.es,
            HashEmbedder(),
            src,
            owner(TENANT),
            layout=self.layout,
            how=how or SyncHow(),
        )

    @property
    def chunks(self) -> str:
        return self.layout.chunks_for(TENANT)

    def state(self) -> CorpusState:
        return CorpusState(self.es, self.layout.corpus_state)


def _layout(tag: str) -> IndexLayout:
    return IndexLayout(
        chunks=f"hybrid-es-chunks-sync-{tag}", corpus_state=f"hybrid-es-corpus-state-sync-{tag}"
    )


@pytest.fixture
def world(es, bootstrapped, settings, scifact) -> Iterator[World]:  # type: ignore[no-untyped-def]
    """A legacy index of SciFact's first documents (plus one record of another tenant), and a
    layout of its own to sync into; all deleted afterwards."""
    tag = uuid.uuid4().hex[:10]
    source = f"legacy-{tag}"
    _, docs = scifact
    other = ("rec-intruder", {"ref": "intruder", "abstract": "Another org's text.", "org": "globex",
                              "readers": "staff", "updated": later(0).isoformat()})  # fmt: skip
    load_legacy(es, source, docs, tenant=TENANT, extra=[other])
    layout = _layout(tag)
    es.create_index(layout.corpus_state)
    w = World(es, source, layout, settings)
    yield w
    es.delete_index(f"{source},{layout.chunks}*,{layout.corpus_state}")


def stored(es: Any, index: str) -> dict[str, tuple[Any, ...]]:
    """Every live chunk of ``index``: its key -> what a search reads of it (the vector is the
    embedder's of the search payload, and is not kept in ``_source``)."""
    raw = unguarded(es)
    raw.refresh(index)
    out = {}
    body = {"query": {"bool": {"must_not": [{"term": {"deleted": True}}]}}}
    for h in raw.scan(index, body):
        s = h["_source"]
        out[h["_id"]] = (
            s["search_payload"],
            s.get("text"),
            tuple(s.get("acl_groups") or ()),
            s.get("version"),
            s.get("chunk_hash"),
        )
    return out


def _ndcg(es: Any, layout: IndexLayout, root: Any, ids: set[str]) -> float:
    queries = read_queries(root)
    qrels = {
        q: {d: g for d, g in rel.items() if d in ids} for q, rel in read_qrels(root, "test").items()
    }
    qrels = {q: r for q, r in qrels.items() if r}
    searcher = HybridSearcher(es, HashEmbedder(), layout=layout, native_rrf=False)
    run = {
        q: ranking_to_run([h.doc_id for h in searcher.search(queries[q], READER, top_k=10).hits])
        for q in qrels
    }
    return evaluate(qrels, run, ["ndcg@10"]).scores["ndcg@10"]


def _read_order(es: Any, source: str) -> list[str]:
    """The document ids of the legacy index in the order a one-slice sync reads them."""
    from hybrid_es.cluster import source_read

    pit = source_read.open_pit(es, source, "1m")
    assert pit is not None
    try:
        pages = source_read.pit_pages(es, pit, query={"match_all": {}}, source=["ref"])
        return [h["_source"]["ref"] for page in pages for h in page.hits]
    finally:
        source_read.close_pit(es, pit)


def _built_alike(es: Any, *indices: str) -> None:
    """Each chunks index made now and refreshed only when the ingest asks: int8 HNSW quantises
    and links vectors per segment, so two indices of the same chunks rank the same only when
    they are built alike (the same order, the same segments). docs/sync.md, "Measured"."""
    for index in indices:
        es.create_index(index)
        es.put_settings(index, {"index": {"refresh_interval": "-1"}})


def test_a_legacy_index_syncs_to_exactly_the_chunks_and_ndcg_of_its_files(world, scifact):
    root, docs = scifact
    files = _layout(uuid.uuid4().hex[:10])
    world.es.create_index(files.corpus_state)
    try:
        _built_alike(world.es, files.chunks_for(TENANT), world.chunks)
        ingestor = Ingestor(
            world.es,
            HashEmbedder(),
            layout=files,
            corpus_state=CorpusState(world.es, files.corpus_state),
        )
        # The files' documents in the order the sync reads the records (the same collection).
        order = {doc_id: n for n, doc_id in enumerate(_read_order(world.es, world.source))}
        from_files = ingestor.ingest(sorted(docs, key=lambda d: order[d.id]), owner(TENANT))
        run = world.sync()
        assert run.kind == "full" and run.finished and run.checkpoint
        assert run.counts["read"] == DOCS + 1
        assert run.counts["refused"] == {"other-tenant": 1}  # refused and counted
        assert run.examples[0]["doc_id"] == "intruder"
        assert (run.counts["written"], run.counts["chunks"]) == (DOCS, from_files.chunks)
        assert run.deleted == 0 and not run.ok  # ok: nothing refused; here one record was
        a, b = stored(world.es, files.chunks_for(TENANT)), stored(world.es, world.chunks)
        assert a == b and len(a) == from_files.chunks
        ids = {d.id for d in docs}
        ndcg = _ndcg(world.es, world.layout, root, ids)
        assert ndcg == _ndcg(world.es, files, root, ids) and ndcg > 0
    finally:
        world.es.delete_index(f"{files.chunks}*,{files.corpus_state}")


def test_a_second_sync_reads_only_what_changed_and_a_full_pass_marks_exactly_what_left(
    world, scifact
):
    _, docs = scifact
    first = world.sync()
    mark = first.watermarks[TENANT]
    again = world.sync()
    assert again.kind == "changes" and again.counts["embedded"] == 0
    assert again.watermarks == {}  # nothing written: the watermark stays
    changed = change_records(world.es, world.source, docs[3:5], tenant=TENANT, at=later(10))
    gone = delete_records(world.es, world.source, [docs[7].id, docs[9].id])
    changes = world.sync()
    assert changes.kind == "changes" and changes.deleted is None
    assert changes.counts["written"] == len(changed)
    assert changes.counts["read"] <= len(changed) + 1  # at or after the checkpoint only
    written = {k.split("::")[1] for k in stored(world.es, world.chunks)}
    assert set(changed) <= written and set(gone) <= written  # a changes pass sees no deletion
    assert changes.watermarks[TENANT] > mark
    full = world.sync(SyncHow(full=True))
    assert full.kind == "full" and full.deleted == len(gone)
    assert (full.counts["written"], full.counts["embedded"]) == (0, 0)
    live = {k.split("::")[1] for k in stored(world.es, world.chunks)}
    assert live == {d.id for d in docs} - set(gone)
    assert world.state().watermark(TENANT) == full.watermarks[TENANT]


def test_a_source_without_a_last_modified_field_syncs_by_seq_no(world, scifact):
    _, docs = scifact
    no_modified = {k: v for k, v in LEGACY_FIELD_MAP.items() if v != "modified"}
    first = world.sync(field_map=no_modified)
    assert first.mode == "seq_no" and first.counts["written"] == DOCS
    change_records(world.es, world.source, docs[:1], tenant=TENANT, at=later(5))
    changes = world.sync(field_map=no_modified)
    assert (changes.kind, changes.read) == ("changes", "shards")
    assert changes.counts["read"] == 1 and changes.counts["written"] == 1


def _worker(job: SliceJob, out: Any) -> None:
    try:
        out.put(run_slice(job))
    except Exception as exc:  # the test's assertion shows it
        out.put(exc)


def test_two_processes_with_two_slices_write_what_one_process_does(world, settings, scifact):
    one = world.sync()
    assert one.counts["written"] == DOCS
    split = _layout(uuid.uuid4().hex[:10])
    world.es.create_index(split.corpus_state)
    try:
        s = settings.model_copy(
            update={"chunks_index": split.chunks, "corpus_state_index": split.corpus_state}
        )
        job = SliceJob(
            s,
            SourceSettings(),
            HashEmbedder(),
            IndexSource(world.source, field_map=LEGACY_FIELD_MAP, page_size=25),
            owner(TENANT),
            SyncHow(slices=2, batch_size=16),
        )
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        procs = [
            ctx.Process(target=_worker, args=(replace(job, how=replace(job.how, slice=k)), out))
            for k in (0, 1)
        ]
        for p in procs:
            p.start()
        results = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert all(isinstance(r, SyncRun) for r in results), results
        assert {r.run_id for r in results} == {results[0].run_id}  # one run, joined
        reads = sorted(r.counts["read"] for r in results)
        assert sum(reads) == DOCS + 1 and all(reads)  # every record once, both slices read
        assert sum(r.counts["written"] for r in results) == DOCS
        (finisher,) = [r for r in results if r.finished]
        assert finisher.run_counts["read"] == DOCS + 1 and finisher.deleted == 0
        assert stored(world.es, split.chunks_for(TENANT)) == stored(world.es, world.chunks)
        state = CorpusState(world.es, split.corpus_state)
        assert state.read(TENANT).pending == ()
        # Each process's run moved the watermark once (corpus_state: several writers).
        assert state.watermark(TENANT) == 2
        assert state.sync_state(TENANT, world.source)["run"] is None
    finally:
        world.es.delete_index(f"{split.chunks}*,{split.corpus_state}")


class Interrupted(Exception):
    pass


def test_an_interrupted_sync_resumes_and_ends_identical(world, scifact):
    seen = []

    def stop_midway(n: int) -> None:
        seen.append(n)
        if sum(seen) >= 40:
            raise Interrupted

    src = IndexSource(world.source, field_map=LEGACY_FIELD_MAP, page_size=10)
    how = SyncHow(batch_size=8)
    with pytest.raises(Interrupted):
        sync_index(
            world.engine(), world.es, HashEmbedder(), src, owner(TENANT),
            layout=world.layout, how=how, progress=stop_midway,
        )  # fmt: skip
    state = world.state()
    assert state.read(TENANT).pending == ()  # the interrupted ingest settled its bracket
    run = state.sync_state(TENANT, world.source)["run"]
    assert run["slice"]["0"]["after"] is not None and not run["slice"]["0"]["done"]
    resumed = sync_index(
        world.engine(), world.es, HashEmbedder(), src, owner(TENANT),
        layout=world.layout, how=how,
    )  # fmt: skip
    assert resumed.resumed and resumed.finished
    assert resumed.counts["read"] < DOCS + 1 - 30  # went on from where it stopped
    fresh = _layout(uuid.uuid4().hex[:10])
    world.es.create_index(fresh.corpus_state)
    try:
        sync_index(
            world.engine(), world.es, HashEmbedder(), src, owner(TENANT), layout=fresh, how=how
        )
        assert stored(world.es, world.chunks) == stored(world.es, fresh.chunks_for(TENANT))
    finally:
        world.es.delete_index(f"{fresh.chunks}*,{fresh.corpus_state}")


def test_a_dry_run_shows_the_first_documents_and_the_refusals_and_writes_nothing(world):
    run = world.sync(SyncHow(dry_run=True, preview=3))
    assert run.dry_run and run.kind == "full"
    assert run.counts["read"] == DOCS + 1 and run.counts["refused"] == {"other-tenant": 1}
    assert len(run.preview) == 3 and run.preview[0]["acl_groups"] == list(READERS)
    assert run.preview[0]["metadata"] == {"source_index": world.source}
    assert not world.es.index_exists(world.chunks)
    assert world.state().sync_state(TENANT, world.source) is None


def test_a_source_may_not_name_the_deployments_own_indices(world):
    for name in (world.chunks, f"{world.layout.chunks}*", "*", world.layout.corpus_state):
        with pytest.raises(ConfigurationError, match="own indices"):
            connect_source(SourceSettings(), world.es, world.layout, name)


def test_the_command_line_dry_run_prints_its_report_as_json(world):
    import json
    import os

    from tests.cli_in_process import run_cli

    env = {
        **os.environ,
        "HYBRID_ES_CHUNKS_INDEX": world.layout.chunks,
        "HYBRID_ES_CORPUS_STATE_INDEX": world.layout.corpus_state,
        "HYBRID_ES_TRACES": "false",
    }
    maps = [f"--map={k}={v}" for k, v in LEGACY_FIELD_MAP.items()]
    proc = run_cli(
        "ingest", "--from-index", world.source, "--tenant", TENANT, "--dry-run", "--json", *maps,
        env=env,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # a record was refused
    out = json.loads(proc.stdout)
    assert (out["pass"], out["read"], out["refused"]) == ("full", DOCS + 1, {"other-tenant": 1})
    assert len(out["preview"]) == 5 and out["refused_examples"][0]["reason"] == "other-tenant"
    assert not world.es.index_exists(world.chunks)


def test_several_writers_at_once_lose_no_watermark_move_and_no_sync_update(world):
    """What the corpus state guarantees with several writers at once (corpus_state's docstring):
    every run that wrote moves the watermark once, none is left pending, and concurrent
    compare-and-set updates of a source's sync state all land."""
    from concurrent.futures import ThreadPoolExecutor

    state = world.state()
    writers = 6

    def write(n: int) -> None:
        run_id = state.begin(TENANT)
        state.update_sync(TENANT, world.source, lambda s: {**s, "seen": [*s.get("seen", []), n]})
        state.finish(TENANT, run_id, "ingest")

    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(write, range(writers)))
    view = state.read(TENANT)
    assert (view.watermark, view.pending) == (writers, ())
    assert sorted(state.sync_state(TENANT, world.source)["seen"]) == list(range(writers))


def test_workers_read_every_slice_in_processes_of_their_own(world, settings):
    """``--workers 2``: two worker processes on this machine, one run, every record once."""
    from hybrid_es.ingest.sync_workers import sync_workers

    s = settings.model_copy(
        update={
            "chunks_index": world.layout.chunks,
            "corpus_state_index": world.layout.corpus_state,
        }
    )
    job = SliceJob(
        s,
        SourceSettings(),
        HashEmbedder(),
        IndexSource(world.source, field_map=LEGACY_FIELD_MAP, page_size=25),
        owner(TENANT),
        SyncHow(slices=2, batch_size=16),
    )
    totals: list[int] = []
    merged = sync_workers(job, 2, on_total=totals.append)
    assert merged.slice is None and merged.finished and merged.run_counts is not None
    assert merged.counts["read"] == merged.run_counts["read"] == DOCS + 1
    assert merged.counts["written"] == DOCS and merged.counts["refused"] == {"other-tenant": 1}
    assert totals and totals[-1] == DOCS + 1
    assert len({k.split("::")[1] for k in stored(world.es, world.chunks)}) == DOCS
