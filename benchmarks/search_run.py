"""The search benchmark end to end: what ``scripts/bench_search.py`` runs.

It connects to the configured cluster (Elasticsearch or OpenSearch), loads the embedder (and the
reranker, when given), ingests the collection, runs the judged queries of the split, checks
quality with ranx, and prints the record as tables, or as one JSON object on stdout with
``--json`` (progress and tables then go to stderr).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.bench import machine
from benchmarks.search_measure import ingest, search, select_queries
from benchmarks.search_report import print_report
from benchmarks.search_results import evaluate, result_record
from hybrid_es.cluster.engine import connect
from hybrid_es.encoders.embedder import make_embedder
from hybrid_es.ingest.beir import read_qrels
from hybrid_es.settings import Settings

CONSOLE_WIDTH = 120
"""The least width of a console that is not a terminal (logs and pipes: keep lines whole)."""


@dataclass
class SearchOptions:
    """The parsed command line of ``scripts/bench_search.py`` (one field per flag)."""

    dataset: Path
    split: str
    index: str
    queries: int | None
    top_k: int
    eval_depth: int
    rerank_model: str | None
    rerank_depth: int
    embedder: str
    fusion: str
    torch_threads: int | None
    json: bool


def run(options: SearchOptions, command: str) -> int:
    """Ingest, search, check quality and report; ``command``: the command line recorded."""
    from rich.console import Console  # the cli extra (or eval): imported when a benchmark runs

    console = Console(stderr=options.json)
    if not console.is_terminal:
        console.width = max(console.width, CONSOLE_WIDTH)
    if not (options.dataset / "corpus.jsonl").is_file():
        raise SystemExit(f"no BEIR collection at {options.dataset} (corpus.jsonl missing)")
    settings = Settings()
    client = connect(settings)
    ran_on = machine(client)
    embedder = make_embedder(
        options.embedder, query_threads=options.torch_threads or settings.embed_threads
    )
    import torch  # loaded by the models anyway; the thread count shapes every model timing

    if options.torch_threads:
        torch.set_num_threads(options.torch_threads)
    ran_on["torch_threads"] = torch.get_num_threads()
    ran_on["embed_threads"] = getattr(embedder, "query_threads", None)

    qrels = read_qrels(options.dataset, options.split)
    queries = select_queries(options.dataset, qrels, options.queries)
    ing = ingest(client, embedder, options.dataset, options.index, console, options.json)
    if not options.json:
        console.print(f"ingest: {ing['seconds']:.1f} s", highlight=False)
    res = search(
        client,
        embedder,
        queries,
        console,
        index=options.index,
        rerank_model=options.rerank_model,
        rerank_depth=options.rerank_depth,
        eval_depth=options.eval_depth,
        fusion=options.fusion,
        quiet=options.json,
    )
    ran_on["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    judged = {q: qrels[q] for q, _ in queries}
    metrics = evaluate(judged, res.pop("_run"), options.top_k, options.eval_depth)
    out = result_record(
        command=command,
        machine=ran_on,
        run_on={"dataset": str(options.dataset), "split": options.split, "index": options.index},
        embedder=embedder.model_id,
        ingest=ing,
        search=res,
        metrics=metrics,
    )
    if options.json:
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        print_report(console, out)
    return 0
