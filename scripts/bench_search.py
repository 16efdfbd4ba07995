#!/usr/bin/env python
"""Benchmark hybrid search on a BEIR collection (SciFact by default).

1. Ingests the corpus into its own chunks index with ``Ingestor`` (tenant ``bench``, everyone may
   read). Unchanged documents are skipped by content hash, so a second run reuses the index.
2. Warms the embedder, then runs each query of the split through ``HybridSearcher.search`` as
   ``Principal(tenant="bench", user_id="bench")`` with the default ``RequestScope``.
3. Prints per-stage latency (p50 / p95 / mean / max over the queries) from
   ``SearchResponse.timings_ms``, next to the engine's own ``took`` of the msearch round trip,
   and nDCG / Recall computed with ``ranx`` as a sanity check of quality.

Run from the repository root with the project venv::

    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1
    python scripts/bench_search.py                 # all test queries, rich tables
    python scripts/bench_search.py --queries 50 --json

Connection settings come from ``HYBRID_ES_*`` (see ``hybrid_es.settings.Settings``); the
cluster may be Elasticsearch or OpenSearch (``hybrid_es.connect`` probes which).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, cast

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.evaluation.bench import engine_line, machine, summary
from hybrid_es.evaluation.metering import MeteredEmbedder
from hybrid_es.ingest.beir import CorpusReport, read_corpus, read_qrels, read_queries
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.embedder import Embedder, make_embedder
from hybrid_es.retrieval.reranker import CrossEncoderReranker
from hybrid_es.retrieval.searcher import MAX_TOP_K, HybridSearcher
from hybrid_es.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
TENANT = "bench"
PRINCIPAL = Principal(tenant=TENANT, user_id="bench")
STAGES = ("embed", "retrieval", "fusion", "rerank", "total")


# -- instrumentation (wrappers only: the package code runs unchanged) -------------------------


class TimedCorpusState(CorpusState):
    """Adds up the seconds spent moving the tenant watermark (one move per ingest run that
    wrote something: ``finish``; or a direct ``bump``)."""

    def __init__(self, client: Engine, index: str) -> None:
        super().__init__(client, index, url=client.url)
        self.seconds = 0.0
        self.bumps = 0

    def bump(self, tenant: str, change: str) -> int:
        t = time.perf_counter()
        try:
            return super().bump(tenant, change)
        finally:
            self.seconds += time.perf_counter() - t
            self.bumps += 1

    def finish(self, tenant: str, run_id: str, change: str | None) -> int:
        t = time.perf_counter()
        try:
            return super().finish(tenant, run_id, change)
        finally:
            self.seconds += time.perf_counter() - t
            self.bumps += change is not None


class TookRecorder:
    """An engine for the searcher (``.engine``: a copy of the given one) that records the
    ``took`` of each ``_msearch`` it sends.

    ``took`` is the time the engine itself reports; the searcher's ``retrieval`` stage is the
    whole round trip (serialising the query vector, HTTP, parsing the hits with their _source).
    """

    def __init__(self, engine: Engine) -> None:
        self.last: dict[str, Any] | None = None
        self.engine = copy.copy(engine)
        send = engine.request

        def request(method: str, path: str, **kwargs: Any) -> Any:
            body = send(method, path, **kwargs)
            if path == "/_msearch" and isinstance(body, dict):
                self.last = {
                    "took": body.get("took"),
                    "items": [item.get("took") for item in body.get("responses", [])],
                }
            return body

        self.engine.request = request  # type: ignore[method-assign]


# -- helpers -----------------------------------------------------------------------------------


def _default_dataset() -> Path:
    return (REPO_ROOT / ".." / "shared" / "datasets" / "scifact").resolve()


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Ingest a BEIR collection and benchmark HybridSearcher.search on its queries.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--dataset", type=Path, default=_default_dataset(), help="BEIR folder")
    p.add_argument("--split", default="test", help="qrels/<split>.tsv")
    p.add_argument("--index", default="hybrid-es-chunks-bench-scifact", help="chunks index")
    p.add_argument(
        "--queries", type=int, default=None, help="first N judged queries (None: all of the split)"
    )
    p.add_argument("--top-k", type=int, default=10, help="cut-off for nDCG/MRR/Recall@k")
    p.add_argument(
        "--eval-depth",
        type=int,
        default=100,
        help="top_k passed to search() so Recall@depth can be measured (max "
        f"{MAX_TOP_K}; the list is also capped by the fusion window); set it to --top-k to time "
        "exactly a top_k=10 call",
    )
    p.add_argument("--rerank-model", default=None, help="local CrossEncoder folder (else none)")
    p.add_argument("--rerank-depth", type=int, default=50, help="fused candidates reranked")
    p.add_argument("--embedder", default="minilm", help="minilm | e5 | a model path")
    p.add_argument("--fusion", choices=("auto", "native", "client"), default="auto")
    p.add_argument(
        "--torch-threads",
        type=int,
        default=None,
        help="torch.set_num_threads for the embedder and reranker (None: torch's choice; "
        "query embeddings: HYBRID_ES_EMBED_THREADS)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object, no tables")
    args = p.parse_args(argv)
    args.dataset = args.dataset.resolve()
    if not 1 <= args.top_k <= MAX_TOP_K:
        p.error(f"--top-k must be 1..{MAX_TOP_K}")
    if not args.top_k <= args.eval_depth <= MAX_TOP_K:
        p.error(f"--eval-depth must be --top-k..{MAX_TOP_K}")
    if args.queries is not None and args.queries < 1:
        p.error("--queries must be >= 1")
    if args.torch_threads is not None and args.torch_threads < 1:
        p.error("--torch-threads must be >= 1")
    return args


def _stats(values: list[float]) -> dict[str, float | int]:
    return summary(values, digits=3)


def _evaluate(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], k: int, depth: int
) -> dict[str, float]:
    try:
        from ranx import Qrels, Run, evaluate
    except ImportError as exc:
        raise SystemExit("the quality check needs ranx: pip install ranx") from exc
    metrics = [f"ndcg@{k}", f"mrr@{k}", f"recall@{k}", f"recall@{depth}"]
    metrics = list(dict.fromkeys(metrics))
    scores = evaluate(
        Qrels.from_dict(qrels),
        Run.from_dict({q: r for q, r in run.items() if r}),
        metrics,
        make_comparable=True,  # a query with no hits scores 0 instead of being dropped
    )
    return {m: round(float(v), 4) for m, v in cast(dict[str, float], scores).items()}


# -- the benchmark -----------------------------------------------------------------------------


def ingest(
    args: argparse.Namespace, client: Engine, embedder: Embedder, console: Console
) -> dict[str, Any]:
    corpus_report = CorpusReport()
    docs = list(read_corpus(args.dataset, tenant=TENANT, acl_groups=("*",), report=corpus_report))
    timed = MeteredEmbedder(embedder)
    state = TimedCorpusState(client, Settings().corpus_state_index)
    ingestor = Ingestor(client, timed, index=args.index, corpus_state=state)
    t0 = time.perf_counter()
    with Progress(
        TextColumn("ingest {task.fields[index]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=args.json,
    ) as bar:
        task = bar.add_task("docs", total=len(docs), index=args.index)
        report = ingestor.ingest(docs, PRINCIPAL, progress=lambda n: bar.advance(task, n))
    seconds = time.perf_counter() - t0
    count = client.count(args.index)
    return {
        "seconds": round(seconds, 2),
        "documents": report.documents,
        "skipped_unchanged": report.skipped_unchanged,
        "chunks_written": report.chunks,
        "chunks_in_index": count,
        "empty_corpus_entries": len(corpus_report.empty),
        "embed_seconds": round(timed.seconds, 2),
        "passages_per_second": (
            round(timed.passages / timed.seconds, 1) if timed.seconds else None
        ),
        "watermark_seconds": round(state.seconds, 2),
        "watermark_bumps": state.bumps,
        "reused": report.chunks == 0 and report.skipped_unchanged == report.documents,
    }


def search(
    args: argparse.Namespace,
    client: Engine,
    embedder: Embedder,
    queries: list[tuple[str, str]],
    console: Console,
) -> dict[str, Any]:
    recorder = TookRecorder(client)
    reranker = CrossEncoderReranker(args.rerank_model) if args.rerank_model else None
    searcher = HybridSearcher(
        recorder.engine,
        embedder,
        index=args.index,
        reranker=reranker,
        fusion=args.fusion,
        url=client.url,
    )
    rerank_depth = min(args.rerank_depth, searcher.params.window)
    scope = RequestScope()

    # Warm-up, untimed: load the embedder (and reranker), read the mapping, probe native rrf and
    # run one search so the first measured query pays no connection or first-call costs.
    t = time.perf_counter()
    embedder.embed_queries(["warm-up"])
    if reranker is not None:
        reranker.score("warm-up", ["warm-up"])
    searcher.check_model(PRINCIPAL)
    searcher.native_rrf_available()
    searcher.search("warm up query", PRINCIPAL, scope, top_k=args.eval_depth, rerank_depth=1)
    warmup_ms = (time.perf_counter() - t) * 1000.0

    timings: dict[str, list[float]] = {s: [] for s in STAGES}
    took: dict[str, list[float]] = {}
    derived: dict[str, list[float]] = {"other": [], "client_side_msearch": []}
    paths: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    run: dict[str, dict[str, float]] = {}
    rerank_note = ""
    reranked = 0
    hits_returned: list[int] = []
    t_all = time.perf_counter()
    with Progress(
        TextColumn("search"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=args.json,
    ) as bar:
        task = bar.add_task("queries", total=len(queries))
        for qid, text in queries:
            recorder.last = None
            resp = searcher.search(
                text,
                PRINCIPAL,
                scope,
                top_k=args.eval_depth,
                rerank_depth=rerank_depth,
            )
            tm = resp.timings_ms
            for stage in STAGES:
                if stage in tm:
                    timings[stage].append(tm[stage])
            staged = sum(tm.get(s, 0.0) for s in ("embed", "retrieval", "fusion", "rerank"))
            derived["other"].append(tm["total"] - staged)
            if recorder.last is not None:
                rec = recorder.last
                if rec["took"] is not None:
                    took.setdefault("msearch", []).append(rec["took"])
                    derived["client_side_msearch"].append(tm["retrieval"] - rec["took"])
                names = (
                    ["rrf body", "bm25 leg", "knn leg"]
                    if len(rec["items"]) == 3
                    else ["bm25 leg", "knn leg"]
                )
                for name, ms in zip(names, rec["items"], strict=False):
                    if ms is not None:
                        took.setdefault(name, []).append(ms)
            paths[resp.fusion_path] += 1
            reasons[resp.fusion_reason] += 1
            reranked += int(resp.reranked)
            rerank_note = resp.rerank_note
            hits_returned.append(len(resp.hits))
            ranked: dict[str, float] = {}
            for h in resp.hits:  # chunk -> corpus document, keeping each document's best rank
                ranked.setdefault(h.doc_id, 1.0 / h.final_rank)
            run[qid] = ranked
            bar.advance(task)
    wall = time.perf_counter() - t_all

    return {
        "queries": len(queries),
        "wall_seconds": round(wall, 2),
        "warmup_ms": round(warmup_ms, 1),
        "fusion_paths": dict(paths),
        "fusion_reasons": dict(reasons),
        "reranked_queries": reranked,
        "rerank_note": rerank_note,
        "window": searcher.params.window,
        "num_candidates": searcher.params.num_candidates,
        "search_top_k": args.eval_depth,
        "hits_per_query": _stats([float(n) for n in hits_returned]),
        "stages_ms": {s: _stats(v) for s, v in timings.items()},
        "es_took_ms": {s: _stats(v) for s, v in took.items()},
        "derived_ms": {s: _stats(v) for s, v in derived.items()},
        "_run": run,
    }


def _select_queries(
    args: argparse.Namespace, qrels: dict[str, dict[str, int]]
) -> list[tuple[str, str]]:
    texts = read_queries(args.dataset)
    missing = sorted(q for q in qrels if q not in texts)
    if missing:
        raise SystemExit(f"{len(missing)} judged queries are not in queries.jsonl: {missing[:5]}")
    chosen = [(q, texts[q]) for q in texts if q in qrels]  # file order
    return chosen[: args.queries] if args.queries else chosen


# -- output ------------------------------------------------------------------------------------


def _fmt(st: dict[str, float | int], key: str) -> str:
    v = st.get(key)
    return "-" if v is None else f"{v:.1f}"


def _print_report(console: Console, out: dict[str, Any]) -> None:
    m, ing, s, q = out["machine"], out["ingest"], out["search"], out["quality"]
    console.print(
        f"[bold]command:[/bold] {out['command']}\n"
        f"[bold]machine:[/bold] nproc={m['nproc']}, {m['platform']}, python {m['python']}, "
        f"torch threads {m['torch_threads']}, "
        f"{engine_line(m)}; "
        f"load average {m['load_average_at_start'][0]:.2f} at start, "
        f"{m['load_average_at_end'][0]:.2f} at end\n"
        f"[bold]dataset:[/bold] {out['dataset']} split={out['split']}, "
        f"{s['queries']} queries; index {out['index']}; embedder {out['embedder']}",
        highlight=False,
        soft_wrap=True,
    )

    t = Table(title="ingest", title_justify="left")
    t.add_column("what")
    t.add_column("value", justify="right")
    rows = [
        ("wall time", f"{ing['seconds']:.1f} s" + ("  (reused index)" if ing["reused"] else "")),
        ("documents", ing["documents"]),
        ("skipped unchanged", ing["skipped_unchanged"]),
        ("chunks written", ing["chunks_written"]),
        ("chunks in index", ing["chunks_in_index"]),
        ("  of which embedding", f"{ing['embed_seconds']:.1f} s"),
        ("  passages / s", ing["passages_per_second"] or "-"),
        ("  watermark bumps", f"{ing['watermark_bumps']} ({ing['watermark_seconds']:.1f} s)"),
    ]
    if ing["empty_corpus_entries"]:
        rows.append(("empty corpus entries (skipped)", ing["empty_corpus_entries"]))
    for k, v in rows:
        t.add_row(k, str(v))
    console.print(t)

    console.print(
        f"search: {s['queries']} queries, sequential, search(top_k={s['search_top_k']}), "
        f"fusion window {s['window']}, knn num_candidates {s['num_candidates']}",
        highlight=False,
    )
    t = Table(title="latency per stage (ms)", title_justify="left")
    t.add_column("stage")
    for c in ("p50", "p95", "mean", "max", "n"):
        t.add_column(c, justify="right")

    def row(label: str, st: dict[str, float | int], style: str = "") -> None:
        cells = [_fmt(st, c) for c in ("p50", "p95", "mean", "max")]
        t.add_row(label, *cells, str(st.get("n", 0)), style=style)

    stages, took, der = s["stages_ms"], s["es_took_ms"], s["derived_ms"]
    row("embed (query)", stages["embed"])
    row("retrieval (msearch round trip)", stages["retrieval"])
    for name in ("msearch", "rrf body", "bm25 leg", "knn leg"):
        if name in took:
            row(f"  ES took: {name}", took[name], "dim")
    if der["client_side_msearch"].get("n"):
        row("  round trip - ES took", der["client_side_msearch"], "dim")
    row("fusion", stages["fusion"])
    if stages["rerank"].get("n"):
        row("rerank", stages["rerank"])
    else:
        t.add_row("rerank", "-", "-", "-", "-", "0", style="dim")
    row("other (policy re-check, hits)", der["other"], "dim")
    row("total", stages["total"], "bold")
    console.print(t)
    paths = ", ".join(f"{p} x{n}" for p, n in s["fusion_paths"].items())
    reasons = "; ".join(s["fusion_reasons"])
    console.print(f"fusion path: {paths} ({reasons})", highlight=False)
    console.print(f"rerank: {s['rerank_note']}", highlight=False)
    console.print(
        f"search wall time {s['wall_seconds']:.1f} s "
        f"({s['queries'] / max(s['wall_seconds'], 1e-9):.1f} queries/s, sequential); "
        f"warm-up {s['warmup_ms']:.0f} ms (untimed)",
        highlight=False,
    )

    t = Table(title="quality (ranx)", title_justify="left")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in q["metrics"].items():
        t.add_row(k, f"{v:.4f}")
    console.print(t)
    console.print(q["evaluator_note"], highlight=False)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    console = Console(stderr=args.json)
    if not console.is_terminal:
        console.width = max(console.width, 120)  # logs and pipes: keep lines whole
    command = "python " + shlex.join(sys.argv if argv is None else ["bench_search.py", *argv])

    if not (args.dataset / "corpus.jsonl").is_file():
        raise SystemExit(f"no BEIR collection at {args.dataset} (corpus.jsonl missing)")
    settings = Settings()
    client = connect(settings)
    ran_on = machine(client)
    embedder = make_embedder(
        args.embedder, query_threads=args.torch_threads or settings.embed_threads
    )
    import torch  # loaded by the models anyway; the thread count shapes every model timing

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    ran_on["torch_threads"] = torch.get_num_threads()
    ran_on["embed_threads"] = getattr(embedder, "query_threads", None)

    qrels = read_qrels(args.dataset, args.split)
    queries = _select_queries(args, qrels)

    ing = ingest(args, client, embedder, console)
    if not args.json:
        console.print(f"ingest: {ing['seconds']:.1f} s", highlight=False)
    res = search(args, client, embedder, queries, console)
    ran_on["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    run = res.pop("_run")
    judged = {q: qrels[q] for q, _ in queries}
    metrics = _evaluate(judged, run, args.top_k, args.eval_depth)
    max_hits = res["hits_per_query"].get("max", 0)
    out = {
        "command": command,
        "machine": ran_on,
        "dataset": str(args.dataset),
        "split": args.split,
        "index": args.index,
        "embedder": embedder.model_id,
        "ingest": ing,
        "search": res,
        "quality": {
            "metrics": metrics,
            "evaluator_note": (
                f"chunks mapped to documents by doc_id, best rank kept; "
                f"lists hold at most {max_hits:.0f} documents"
            ),
        },
    }
    if args.json:
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        _print_report(console, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
