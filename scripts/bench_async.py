#!/usr/bin/env python
"""Concurrent searches: the async searcher against a thread per request (issue 24, item 5).

    python scripts/bench_async.py                                  # SciFact, 32 in flight
    python scripts/bench_async.py --dataset ../shared/datasets/cranfield --rounds 5 --json out.json

Ingests the collection for the evaluation tenant (skipped when the index holds it already),
then alternates rounds of the two paths over the collection's questions, the query-vector cache
off (each search embeds its question) and no reranking. Prints p50/p95 latency (of one search
with the others in flight) and searches/s, per round and over all rounds
(benchmarks/concurrency.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import bench_client, bench_embedder, machine, print_rows
from benchmarks.concurrency import Round, async_round, thread_round
from hybrid_es.evaluation.collection import EVAL_PRINCIPAL, default_index, ingest_collection
from hybrid_es.ingest.beir import read_queries
from hybrid_es.retrieval.async_searcher import AsyncHybridSearcher
from hybrid_es.settings import Settings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=SHARED / "scifact")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each path, alternating")
    ap.add_argument("--queries", type=int, default=300, help="questions per round")
    ap.add_argument("--json", type=Path, help="write the rounds and the machine here")
    args = ap.parse_args()

    settings = Settings()
    engine = bench_client(settings)
    embedder = bench_embedder(args.embedder, settings)
    index = default_index(args.dataset, args.embedder)
    state = index.replace("chunks", "corpus-state")
    coll = ingest_collection(
        engine, embedder, args.dataset, index=index, state_index=state, url=settings.url
    )
    searcher = coll.searcher(query_cache_size=0)
    questions = [q for q in read_queries(args.dataset).values() if q.strip()][: args.queries]
    search = {"rerank": False}
    searcher.search(questions[0], EVAL_PRINCIPAL, **search)  # connections and caches warm

    def make() -> AsyncHybridSearcher:
        return AsyncHybridSearcher.from_searcher(searcher, settings)

    rounds: list[Round] = []
    for _ in range(args.rounds):
        rounds.append(thread_round(searcher, questions, EVAL_PRINCIPAL, args.concurrency, **search))
        rounds.append(async_round(make, questions, EVAL_PRINCIPAL, args.concurrency, **search))
    print_rows(f"{args.dataset.name}: {len(questions)} searches a round", [r.row() for r in rounds])
    overall = {}
    for path in dict.fromkeys(r.path for r in rounds):
        mine = [r for r in rounds if r.path == path]
        merged = Round(path, args.concurrency, [x for r in mine for x in r.latencies_ms])
        merged.wall_s = sum(r.wall_s for r in mine)
        overall[path] = merged.row()
    print_rows("all rounds", overall.values())
    if args.json:
        out = {"machine": machine(engine), "rounds": [r.row() for r in rounds], "all": overall}
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
