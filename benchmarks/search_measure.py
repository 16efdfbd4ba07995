"""The search benchmark's two measurements: ingesting a BEIR collection, and searching it query by
query.

The collection goes into its own chunks index through ``Ingestor`` as tenant ``bench`` (everyone
may read); unchanged documents are skipped by content hash, so a second run reuses the index. The
searches run sequentially through ``HybridSearcher.search`` after an untimed warm-up (the
models loaded, the mapping read, native rrf probed, one search sent), each as
``Principal(tenant="bench", user_id="bench")`` with the default ``RequestScope``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.search_tally import SearchTally
from benchmarks.search_timing import TimedCorpusState, TookRecorder
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.reranker import CrossEncoderReranker
from hybrid_es.evaluation.metering import MeteredEmbedder
from hybrid_es.ingest.beir import CorpusReport, read_corpus, read_queries
from hybrid_es.ingest.indexer import Ingestor, IngestReport
from hybrid_es.models import WRITER_ROLE, Principal, RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

TENANT = "bench"
PRINCIPAL = Principal(tenant=TENANT, user_id="bench", roles=(WRITER_ROLE,))

if TYPE_CHECKING:
    from rich.console import Console


def ingest_summary(
    report: IngestReport,
    seconds: float,
    count: int,
    empty: int,
    timed: MeteredEmbedder,
    state: TimedCorpusState,
) -> dict[str, Any]:
    """The ingest's figures: documents, chunks, embedding and watermark time, reuse."""
    return {
        "seconds": round(seconds, 2),
        "documents": report.documents,
        "skipped_unchanged": report.skipped_unchanged,
        "chunks_written": report.chunks,
        "chunks_in_index": count,
        "empty_corpus_entries": empty,
        "embed_seconds": round(timed.seconds, 2),
        "passages_per_second": (
            round(timed.passages / timed.seconds, 1) if timed.seconds else None
        ),
        "watermark_seconds": round(state.seconds, 2),
        "watermark_bumps": state.bumps,
        "reused": report.chunks == 0 and report.skipped_unchanged == report.documents,
    }


def ingest(
    client: Engine, embedder: Embedder, dataset: Path, index: str, console: Console, quiet: bool
) -> dict[str, Any]:
    """Ingest the BEIR collection at ``dataset`` into ``index`` (a progress bar unless
    ``quiet``); its figures."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    corpus_report = CorpusReport()
    docs = list(read_corpus(dataset, tenant=TENANT, acl_groups=("*",), report=corpus_report))
    timed = MeteredEmbedder(embedder)
    state = TimedCorpusState(client, Settings().corpus_state_index)
    ingestor = Ingestor(client, timed, index=index, corpus_state=state)
    t0 = time.perf_counter()
    with Progress(
        TextColumn("ingest {task.fields[index]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=quiet,
    ) as bar:
        task = bar.add_task("docs", total=len(docs), index=index)
        report = ingestor.ingest(docs, PRINCIPAL, progress=lambda n: bar.advance(task, n))
    seconds = time.perf_counter() - t0
    count = client.count(index)
    return ingest_summary(report, seconds, count, len(corpus_report.empty), timed, state)


def warm_up(
    searcher: HybridSearcher,
    embedder: Embedder,
    reranker: CrossEncoderReranker | None,
    scope: RequestScope,
    top_k: int,
) -> float:
    """Untimed: load the embedder (and reranker), read the mapping, probe native rrf and run one
    search, so the first measured query pays no connection or first-call costs; the ms it took."""
    t = time.perf_counter()
    embedder.embed_queries(["warm-up"])
    if reranker is not None:
        reranker.score("warm-up", ["warm-up"])
    searcher.check_model(PRINCIPAL)
    searcher.native_rrf_available()
    searcher.search("warm up query", PRINCIPAL, scope, top_k=top_k, rerank_depth=1)
    return (time.perf_counter() - t) * 1000.0


def _run_queries(
    searcher: HybridSearcher,
    recorder: TookRecorder,
    queries: list[tuple[str, str]],
    scope: RequestScope,
    top_k: int,
    rerank_depth: int,
    console: Console,
    quiet: bool,
) -> SearchTally:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    tally = SearchTally()
    with Progress(
        TextColumn("search"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet,
    ) as bar:
        task = bar.add_task("queries", total=len(queries))
        for qid, text in queries:
            recorder.last = None
            resp = searcher.search(text, PRINCIPAL, scope, top_k=top_k, rerank_depth=rerank_depth)
            tally.add(qid, resp, recorder.last)
            bar.advance(task)
    return tally


def search(
    client: Engine,
    embedder: Embedder,
    queries: list[tuple[str, str]],
    console: Console,
    *,
    index: str,
    rerank_model: str | None,
    rerank_depth: int,
    eval_depth: int,
    fusion: Any,
    quiet: bool,
) -> dict[str, Any]:
    """Run ``queries`` (id, text) through ``HybridSearcher.search`` (top_k ``eval_depth``), one
    at a time; latency per stage, fusion paths, reranking, and the run under ``_run``."""
    recorder = TookRecorder(client)
    reranker = CrossEncoderReranker(rerank_model) if rerank_model else None
    searcher = HybridSearcher(
        recorder.engine, embedder, index=index, reranker=reranker, fusion=fusion, url=client.url
    )
    depth = min(rerank_depth, searcher.params.window)
    scope = RequestScope()
    warmup_ms = warm_up(searcher, embedder, reranker, scope, eval_depth)
    t_all = time.perf_counter()
    tally = _run_queries(searcher, recorder, queries, scope, eval_depth, depth, console, quiet)
    wall = time.perf_counter() - t_all
    return {
        "queries": len(queries),
        "wall_seconds": round(wall, 2),
        "warmup_ms": round(warmup_ms, 1),
        "fusion_paths": dict(tally.paths),
        "fusion_reasons": dict(tally.reasons),
        "reranked_queries": tally.reranked,
        "rerank_note": tally.rerank_note,
        "window": searcher.params.window,
        "num_candidates": searcher.params.num_candidates,
        "search_top_k": eval_depth,
        **tally.latency(),
        "_run": tally.run,
    }


def choose_queries(
    texts: dict[str, str], qrels: dict[str, dict[str, int]], limit: int | None
) -> list[tuple[str, str]]:
    """The judged queries, in file order, the first ``limit`` of them (all when None or 0)."""
    missing = sorted(q for q in qrels if q not in texts)
    if missing:
        raise SystemExit(f"{len(missing)} judged queries are not in queries.jsonl: {missing[:5]}")
    chosen = [(q, texts[q]) for q in texts if q in qrels]  # file order
    return chosen[:limit] if limit else chosen


def select_queries(
    dataset: Path, qrels: dict[str, dict[str, int]], limit: int | None
) -> list[tuple[str, str]]:
    return choose_queries(read_queries(dataset), qrels, limit)
