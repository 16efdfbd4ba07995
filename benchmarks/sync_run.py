"""The measured run of ``scripts/bench_sync.py`` (the legacy index, the table and the projection
are in ``benchmarks.sync``).

Steps, on the configured cluster, each into indices of its own (deleted afterwards unless
``--keep``):

1. the whole collection in a legacy index; one full sync of it (one process, the real model);
2. the same collection ingested from its files; its embeddings are the sync's (the model is
   deterministic: the same text gives the same vector, so the text is not embedded twice), the
   chunks compared one by one, and nDCG@10 of both indices on the test queries;
3. a sync with nothing changed; 1 % of the records changed and 1 % deleted, then a changes pass
   and a full pass;
4. throughput on the first ``--subset`` documents: the encoder alone (on every core, and on
   one), the sync in one process, and in ``--slices`` worker processes (one core's threads each).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench import bench_client, bench_embedder, machine
from benchmarks.sync import (
    LEGACY_FIELD_MAP,
    READERS,
    START,
    Row,
    change_records,
    cores,
    delete_records,
    every_hundredth,
    load_legacy,
    projection,
    table,
)
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.source_connection import SourceSettings, connect_source
from hybrid_es.encoders.embedder import Embedder, torch_threads
from hybrid_es.evaluation.metrics import evaluate, ranking_to_run
from hybrid_es.ingest.beir import read_corpus, read_qrels, read_queries
from hybrid_es.ingest.contextual import ContextUsage, ExtractiveContextualizer
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor, IngestReport
from hybrid_es.ingest.plan import build_chunk_records
from hybrid_es.ingest.sync import IndexSource, SyncHow, SyncRun, sync_index
from hybrid_es.ingest.sync_workers import SliceJob, sync_workers
from hybrid_es.models import WRITER_ROLE, Principal
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout

TENANT = "scifact"
WRITER = Principal(tenant=TENANT, user_id="bench", roles=(WRITER_ROLE,))
READER = Principal(tenant=TENANT, user_id="reader", groups=(READERS[0],))


@dataclass
class SyncBenchOptions:
    """The parsed command line of ``scripts/bench_sync.py``."""

    dataset: Path
    embedder: str
    docs: int
    """The collection's first N documents (0: all of them)."""
    subset: int
    slices: int
    rounds: int
    prefix: str
    keep: bool
    json: bool


class Remembering:
    """An embedder that remembers each passage's vector: a second ingest of the same texts
    reuses the first one's (the model is deterministic), so it costs no model time."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dims = inner.dims
        self.memory: dict[str, Any] = {}
        self.computed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_queries(self, texts: list[str]) -> Any:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: list[str]) -> Any:
        todo = [t for t in dict.fromkeys(texts) if t not in self.memory]
        if todo:
            self.computed += len(todo)
            for t, v in zip(todo, self.inner.embed_passages(todo), strict=True):
                self.memory[t] = v
        return np.stack([self.memory[t] for t in texts]) if texts else self.inner.embed_passages([])


def _layout(prefix: str, name: str) -> IndexLayout:
    return IndexLayout(
        chunks=f"hybrid-es-chunks-{prefix}-{name}",
        corpus_state=f"hybrid-es-corpus-state-{prefix}-{name}",
    )


def _row(step: str, run: SyncRun, note: str = "") -> Row:
    c = run.run_counts or run.counts
    return Row(
        step,
        run.seconds,
        read=c["read"],
        written=c["written"],
        unchanged=c["unchanged"],
        deleted=run.deleted or 0,
        chunks=c["chunks"],
        embedded=c["embedded"],
        note=note,
    )


def _sync(
    engine: Engine, source: str, layout: IndexLayout, embedder: Any, how: SyncHow | None = None
) -> SyncRun:
    reader = connect_source(SourceSettings(), engine, layout, source)
    return sync_index(
        reader,
        engine,
        embedder,
        IndexSource(source, field_map=LEGACY_FIELD_MAP),
        WRITER,
        layout=layout,
        how=how or SyncHow(),
    )


def _chunks(engine: Engine, index: str) -> dict[str, tuple[Any, ...]]:
    from hybrid_es.cluster.engine import as_engine

    raw = as_engine(engine.raw)  # the benchmark's own read of what was written
    raw.refresh(index)
    body = {"query": {"bool": {"must_not": [{"term": {"deleted": True}}]}}}
    return {
        h["_id"]: (h["_source"]["search_payload"], tuple(h["_source"].get("acl_groups") or ()))
        for h in raw.scan(index, body)
    }


EXHAUSTIVE = 10_000
"""``num_candidates`` of the kNN leg that makes it search (nearly) every vector: the most
Elasticsearch allows. The default, 100, is an approximate search whose graph (HNSW) depends on
the order the vectors were written in and on the index's segments, so two indices of the same
chunks written in another order can rank a few queries differently."""


def _rankings(
    engine: Engine, layout: IndexLayout, embedder: Embedder, root: Path, candidates: int
) -> dict[str, dict[str, float]]:
    """The top 10 of every test query of ``root`` (a ranx run), searched as a reader."""
    queries = read_queries(root)
    qrels = read_qrels(root, "test")
    params = RetrievalParams(num_candidates=candidates)
    searcher = HybridSearcher(engine, embedder, layout=layout, params=params)
    return {
        q: ranking_to_run([h.doc_id for h in searcher.search(queries[q], READER, top_k=10).hits])
        for q in qrels
    }


def _read_order(engine: Engine, source: str) -> list[str]:
    """The document ids of the legacy index in the order a one-slice sync reads them."""
    from hybrid_es.cluster import source_read

    pit = source_read.open_pit(engine, source, "2m")
    assert pit is not None
    try:
        pages = source_read.pit_pages(engine, pit, query={"match_all": {}}, source=["ref"])
        return [h["_source"]["ref"] for page in pages for h in page.hits]
    finally:
        source_read.close_pit(engine, pit)


def _ingest_files(
    engine: Engine, embedder: Any, layout: IndexLayout, docs: list[Document]
) -> IngestReport:
    """The collection from its files (the documents ``read_corpus`` gives) into ``layout``."""
    state = CorpusState(engine, layout.corpus_state)
    return Ingestor(engine, embedder, layout=layout, corpus_state=state).ingest(docs, WRITER)


def _encoder(embedder: Embedder, batches: list[list[str]], threads: int | None) -> Row:
    t = time.perf_counter()
    with torch_threads(threads):
        for texts in batches:
            embedder.embed_passages(texts)
    seconds = time.perf_counter() - t
    n = sum(len(b) for b in batches)
    label = "all" if threads is None else str(threads)
    return Row(f"encoder, torch threads {label}", seconds, chunks=n, embedded=n, note="alone")


# Stays whole: the steps in the order the module docstring gives them.
def run(options: SyncBenchOptions, command: str) -> int:
    """Measure, print the table and the projection (or one JSON object with ``--json``)."""
    settings = Settings()
    engine = bench_client(settings)
    at_start = machine(engine)
    embedder = bench_embedder(options.embedder, settings)
    docs = list(read_corpus(options.dataset, tenant=TENANT, acl_groups=READERS))
    docs = docs[: options.docs] if options.docs else docs
    source = f"legacy-{options.prefix}"
    sync_layout, files_layout = _layout(options.prefix, "sync"), _layout(options.prefix, "files")
    again_layout = _layout(options.prefix, "again")
    made = [source, f"{source}-subset"]
    layouts = [sync_layout, files_layout, again_layout]
    rows: list[Row] = []
    out: dict[str, Any] = {"command": command, "machine": at_start, "embedder": embedder.model_id}
    try:
        for layout in layouts:
            engine.create_index(layout.corpus_state)
        load_legacy(engine, source, docs, tenant=TENANT)
        remembering = Remembering(embedder)
        print("1. full sync of the legacy index", file=sys.stderr, flush=True)
        first = _sync(engine, source, sync_layout, remembering)
        rows.append(_row("1. first sync (full pass)", first, "every chunk embedded"))
        print("2. the files, same vectors; chunks and nDCG@10", file=sys.stderr, flush=True)
        computed = remembering.computed
        t = time.perf_counter()
        files = _ingest_files(engine, remembering, files_layout, docs)
        rows.append(
            Row(
                "2. same collection from its files",
                time.perf_counter() - t,
                read=len(docs),
                written=files.documents - files.skipped_unchanged,
                chunks=files.chunks,
                note="vectors reused (the same texts)",
            )
        )
        # A control: the files again, in the order the sync read the records (a point in time's
        # order): int8 HNSW quantises and links vectors in the order they are written.
        order = {doc_id: n for n, doc_id in enumerate(_read_order(engine, source))}
        in_sync_order = sorted(docs, key=lambda d: order[d.id])
        _ingest_files(engine, remembering, again_layout, in_sync_order)
        assert remembering.computed == computed, "the files' texts differ from the sync's"
        a = _chunks(engine, sync_layout.chunks_for(TENANT))
        b = _chunks(engine, files_layout.chunks_for(TENANT))
        out["chunks"] = {"sync": len(a), "files": len(b), "identical": a == b}
        indices = (
            ("sync", sync_layout),
            ("files", files_layout),
            ("files in the sync's order", again_layout),
        )
        out["ndcg@10"] = {}
        for n in (RetrievalParams().num_candidates, EXHAUSTIVE):
            runs = {
                name: _rankings(engine, lay, embedder, options.dataset, n) for name, lay in indices
            }
            qrels = read_qrels(options.dataset, "test")
            out["ndcg@10"][f"num_candidates {n}"] = {
                name: round(evaluate(qrels, run, ["ndcg@10"]).scores["ndcg@10"], 6)
                for name, run in runs.items()
            } | {
                f"queries ranked otherwise than the sync, {name}": sum(
                    run[q] != runs["sync"][q] for q in qrels
                )
                for name, run in runs.items()
                if name != "sync"
            }
        print("3. nothing changed; then 1 % changed, 1 % deleted", file=sys.stderr, flush=True)
        rows.append(_row("3a. sync, nothing changed", _sync(engine, source, sync_layout, embedder)))
        ids = [d.id for d in docs]
        changed = set(every_hundredth(ids, 0))
        # Changed after every record's own last-modified time (the n-th is START + n s).
        at = START + timedelta(seconds=len(docs), hours=1)
        change_records(engine, source, [d for d in docs if d.id in changed], tenant=TENANT, at=at)
        gone = delete_records(engine, source, every_hundredth(ids, 50))
        changes = _sync(engine, source, sync_layout, embedder)
        rows.append(_row("3b. sync after 1 % changed, 1 % deleted", changes, "changes pass"))
        full = _sync(engine, source, sync_layout, embedder, SyncHow(full=True))
        rows.append(_row("3c. sync --full", full, "finds the deletions"))
        out["changed"] = {
            "changed": len(changed),
            "deleted": len(gone),
            "changes pass wrote": changes.counts["written"],
            "full pass deleted": full.deleted,
        }
        print("4. throughput on the subset", file=sys.stderr, flush=True)
        rows += _throughput(engine, embedder, docs[: options.subset], options, settings, made)
    finally:
        if not options.keep:
            engine.delete_index(",".join(made))
            for layout in layouts + [_layout(options.prefix, n) for n in ("one", "workers")]:
                engine.delete_index(f"{layout.chunks}*,{layout.corpus_state}")
    out["rows"] = [r.__dict__ for r in rows]
    out["per_core_chunks_per_s"] = per_core = per_core_figures(rows, cores())
    chunks_per_record = first.counts["chunks"] / max(1, first.counts["written"])
    lines = [
        *table(rows),
        "",
        f"chunks: {out['chunks']}",
        f"nDCG@10 (test queries): {out['ndcg@10']}",
        f"changes: {out['changed']}",
        f"per core: {per_core}; chunks per record {chunks_per_record:.2f}",
        "",
        *projection_lines(per_core, chunks_per_record, cores()),
    ]
    out["markdown"] = "\n".join(lines)
    if options.json:
        sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")
    else:
        print(f"{command}\n{json.dumps(at_start)}\n\n" + out["markdown"])
    return 0


def _throughput(
    engine: Engine,
    embedder: Embedder,
    docs: list[Document],
    options: SyncBenchOptions,
    settings: Settings,
    made: list[str],
) -> list[Row]:
    """The encoder alone, the sync in one process and in ``options.slices`` workers, on the
    same documents."""
    source = f"legacy-{options.prefix}-subset"
    load_legacy(engine, source, docs, tenant=TENANT)
    chunker = Ingestor(engine, embedder, index="unused").chunker_for(embedder)
    batches = payload_batches(docs, chunker, 64)
    variants = ("encoder, all cores", "encoder, 1 thread", "sync, 1 process", "sync, workers")
    # "1 thread" holds torch (the float32 runtime's passages) to one thread; ONNX Runtime (the
    # int8 runtime) takes one thread per core whatever torch is told.
    measured: list[tuple[int, int, Row]] = []
    for r in range(options.rounds):
        for variant in variants if r % 2 == 0 else variants[::-1]:
            print(f"   round {r + 1}: {variant}", file=sys.stderr, flush=True)
            row = _variant(variant, engine, embedder, batches, source, options, settings)
            note = f"round {r + 1}" + (f"; {row.note}" if row.note else "")
            measured.append((variants.index(variant), r, replace(row, note=note)))
    return [row for _, _, row in sorted(measured, key=lambda m: (m[0], m[1]))]


def _variant(
    variant: str,
    engine: Engine,
    embedder: Embedder,
    batches: list[list[str]],
    source: str,
    options: SyncBenchOptions,
    settings: Settings,
) -> Row:
    """One measured run of one throughput variant, into fresh indices."""
    if variant == "encoder, all cores":
        return _encoder(embedder, batches, None)
    if variant == "encoder, 1 thread":
        return _encoder(embedder, batches, 1)
    layout = _layout(options.prefix, "one" if variant == "sync, 1 process" else "workers")
    engine.delete_index(f"{layout.chunks}*,{layout.corpus_state}")
    engine.create_index(layout.corpus_state)
    if variant == "sync, 1 process":
        return _row("sync, 1 process", _sync(engine, source, layout, embedder), "subset")
    job = SliceJob(
        replace_layout(settings, layout),
        SourceSettings(),
        embedder if options.embedder == "hash" else options.embedder,  # a name loads in each
        IndexSource(source, field_map=LEGACY_FIELD_MAP),
        WRITER,
        SyncHow(slices=options.slices),
        threads=1,
    )
    merged = sync_workers(job, options.slices)
    note = f"subset; {options.slices} processes, model load included"
    return _row(f"sync, workers {options.slices}", merged, note)


def payload_batches(docs: list[Document], chunker: Any, size: int) -> list[list[str]]:
    """The texts an ingest of ``docs`` embeds (chunks with their extractive headers), grouped
    as its batches of ``size`` documents are."""
    out = []
    for at in range(0, len(docs), size):
        texts = []
        for doc in docs[at : at + size]:
            pieces = chunker(doc)
            headers = ExtractiveContextualizer().headers(doc, pieces, ContextUsage())
            records = build_chunk_records(
                doc, now=datetime.now(UTC), embedding_model="-", chunks=pieces, headers=headers
            )
            texts += [r["search_payload"] for r in records]
        out.append(texts)
    return out


def replace_layout(settings: Settings, layout: IndexLayout) -> Settings:
    return settings.model_copy(
        update={"chunks_index": layout.chunks, "corpus_state_index": layout.corpus_state}
    )


def per_core_figures(rows: list[Row], cores: int) -> dict[str, float]:
    """The measured per-core figures: chunks a second one core embeds in a sync (the best run of
    the workers, one slice per core, divided by the cores) and in the encoder alone (its best
    run, divided by the cores); records a second one core reads and checks where nothing is
    embedded (the full pass over a synced index, divided by the cores)."""

    def best(prefix: str, of: str = "chunks_per_second") -> float:
        found = [getattr(r, of) for r in rows if r.step.startswith(prefix)]
        return max(found) if found else 0.0

    return {
        "sync chunks/s per core": round(best("sync, workers") / cores, 1),
        "encoder chunks/s per core": round(best("encoder") / cores, 1),
        "read and check records/s per core": round(best("3c", "records_per_second") / cores, 1),
    }


def projection_lines(per_core: dict[str, float], chunks_per_record: float, cores: int) -> list[str]:
    """The projection tables (``benchmarks.sync.projection``) from the per-core figures: the
    measured sync rate, then the encoder-alone bound."""
    out = []
    for label, key in (
        ("From the sync's own per-core rate (on paper):", "sync chunks/s per core"),
        ("From the encoder alone's per-core rate (on paper):", "encoder chunks/s per core"),
    ):
        out += [label, ""]
        out += projection(
            per_core_chunks=per_core[key],
            read_records_per_s=per_core["read and check records/s per core"],
            chunks_per_record=chunks_per_record,
            cores=cores,
        )
        out.append("")
    return out
