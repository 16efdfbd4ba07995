#!/usr/bin/env python
"""What a long query costs: search latency by query length, on an evaluation index.

Queries of each length (100 to 30,000 characters by default) are made from real text: each starts
at one SciFact abstract and runs on through the next ones until it is long enough (cut at a word),
so no two queries are alike and none is in the query vector cache. They run through
``HybridSearcher.search`` in turns (one of each length, then the next of each), so a busy moment
of the machine falls on every length alike. Per length it prints the embed, retrieval and total
p50 / p95 (``SearchResponse.timings_ms``), how many queries each leg read only the start of
(``SearchResponse.truncated``), and ``self@10``: the share of queries whose first abstract (the
one the query starts with) is in the top 10, a sanity check that a cut query still finds what it
is about.

The searcher accepts every length measured (``max_query_chars`` is raised to the longest), so the
cost past the default limit (``queries.MAX_QUERY_CHARS``) is measured too; ``--max-query-terms``
sets the BM25 leg's term cap.

The index must exist: ``hybrid-es eval`` creates it (``hybrid-es-chunks-eval-<name>-<embedder>``).
Run from the repository root with the project venv::

    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1
    python scripts/bench_long_query.py                    # a table
    python scripts/bench_long_query.py --queries 20 --json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import bench_embedder, engine_line, machine, summary
from hybrid_es.evaluation.collection import EVAL_PRINCIPAL, default_index
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.queries import MAX_QUERY_CHARS, MAX_QUERY_TERMS, RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
STAGES = ("embed", "retrieval", "total")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Search latency against query length, on an index built by `hybrid-es eval`.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--dataset",
        type=Path,
        default=(REPO_ROOT / ".." / "shared" / "datasets" / "scifact").resolve(),
        help="BEIR folder whose corpus.jsonl the queries are cut from",
    )
    p.add_argument("--embedder", default="minilm", help="minilm | e5 | a model path")
    p.add_argument("--index", default=None, help="chunks index (default: the eval index)")
    p.add_argument(
        "--lengths", default="100,500,2000,8000,30000", help="query lengths, in characters"
    )
    p.add_argument("--queries", type=int, default=30, help="queries of each length")
    p.add_argument(
        "--pipeline", choices=("hybrid", "bm25", "dense"), default="hybrid", help="legs to run"
    )
    p.add_argument(
        "--max-query-terms", type=int, default=MAX_QUERY_TERMS, help="the BM25 leg's term cap"
    )
    p.add_argument("--seed", type=int, default=15)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p.parse_args(argv)


def make_queries(
    corpus: Path, lengths: list[int], n: int, seed: int
) -> dict[int, list[tuple[str, str]]]:
    """For each length, ``n`` (first document id, text) pairs: the text of consecutive abstracts
    from a random start, cut at the last space before ``length`` characters."""
    docs: list[tuple[str, str]] = []
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            text = " ".join(str(d.get("text", "")).split())
            if text:
                docs.append((str(d["_id"]), text))
    rng = random.Random(seed)
    out: dict[int, list[tuple[str, str]]] = {}
    for length in lengths:
        out[length] = []
        for _ in range(n):
            start = rng.randrange(len(docs))
            first, size, i = docs[start][0], 0, start
            parts: list[str] = []
            while size < length:
                parts.append(docs[i % len(docs)][1])
                size += len(parts[-1]) + 1
                i += 1
            text = " ".join(parts)[:length]
            cut = text.rfind(" ", 0, length) if len(text) == length else -1
            out[length].append((first, text[:cut] if cut > length // 2 else text))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    s = Settings()
    from hybrid_es.cluster.engine import connect

    engine = connect(s)
    index = args.index or default_index(args.dataset, args.embedder)
    if not engine.index_exists(index):
        sys.exit(
            f"no index {index}: run `hybrid-es eval {args.dataset} --pipelines bm25` first "
            "(it ingests the collection)"
        )
    searcher = HybridSearcher(
        engine,
        bench_embedder(args.embedder, s),
        index=index,
        corpus_state_index=f"{s.corpus_state_index}-eval",
        url=s.redacted_url(),
        pipeline=args.pipeline,
        query_cache_size=0,
        params=RetrievalParams(
            max_query_chars=max(max(lengths), MAX_QUERY_CHARS),
            max_query_terms=args.max_query_terms,
        ),
    )
    queries = make_queries(args.dataset / "corpus.jsonl", lengths, args.queries, args.seed)
    for _, text in queries[lengths[0]][:3]:  # warm-up: models, caches, connections
        searcher.search(text, EVAL_PRINCIPAL, RequestScope(), rerank=False)
    took: dict[int, dict[str, list[float]]] = {n: {st: [] for st in STAGES} for n in lengths}
    found = {n: 0 for n in lengths}
    path = ""
    truncated: dict[int, dict[str, int]] = {n: {"sparse": 0, "dense": 0} for n in lengths}
    for i in range(args.queries):
        for n in lengths:
            first, text = queries[n][i]
            resp = searcher.search(text, EVAL_PRINCIPAL, RequestScope(), rerank=False)
            path = resp.fusion_path
            for st in STAGES:
                if st in resp.timings_ms:
                    took[n][st].append(resp.timings_ms[st])
            found[n] += first in {h.doc_id for h in resp.hits[:10]}
            for leg in resp.truncated:
                truncated[n][leg] += 1
    rows = []
    for n in lengths:
        row: dict[str, Any] = {"chars": n, "queries": args.queries}
        for st in STAGES:
            sm = summary(took[n][st])
            row[st] = {"p50": sm.get("p50"), "p95": sm.get("p95")} if sm["n"] else None
        row["truncated"] = truncated[n]
        row["self@10"] = round(found[n] / args.queries, 3)
        rows.append(row)
    return {
        "command": "python scripts/bench_long_query.py " + " ".join(sys.argv[1:]),
        "index": index,
        "pipeline": args.pipeline,
        "fusion_path": path,
        "max_query_terms": args.max_query_terms,
        "default_max_query_chars": MAX_QUERY_CHARS,
        "machine": machine(engine),
        "rows": rows,
    }


def print_table(out: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(
        title=f"{out['pipeline']} search latency by query length, ms "
        f"({out['index']}, BM25 term cap {out['max_query_terms']})"
    )
    t.add_column("chars", justify="right")
    t.add_column("n", justify="right")
    for st in STAGES:
        t.add_column(f"{st} p50 / p95", justify="right")
    t.add_column("cut: sparse / dense", justify="right")
    t.add_column("self@10", justify="right")
    for r in out["rows"]:
        cells = [f"{r[st]['p50']:.1f} / {r[st]['p95']:.1f}" if r[st] else "-" for st in STAGES]
        cut = f"{r['truncated']['sparse']} / {r['truncated']['dense']}"
        t.add_row(f"{r['chars']:,}", str(r["queries"]), *cells, cut, f"{r['self@10']:.2f}")
    console = Console(width=max(Console().width, 120))
    console.print(t)
    m = out["machine"]
    console.print(
        f"{m['nproc']} cores, {m['platform']}, {engine_line(m)}, load average at start "
        f"{m['load_average_at_start']}; fusion {out['fusion_path']}",
        highlight=False,
    )


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    out = run(args)
    if args.json:
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        print_table(out)


if __name__ == "__main__":
    main()
