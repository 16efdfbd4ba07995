#!/usr/bin/env python
"""The sparse leg's body and variants of it, taking turns query by query on one index: which
clause costs what (docs/scale.md, "The BM25 leg at 1M").

    python scripts/bench_sparse_shapes.py --index hybrid-es-scale-int8-hnsw-1000000

The index is one ``scripts/bench_scale.py --keep`` left (its four tenants and reader); the
questions are SciFact's, each against one tenant in turn with the reader's policy filter. Every
body goes through the policy door. Reports the engine's ``took`` and the round trip, p50 / p95 ms,
after five unmeasured questions.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import print_rows
from benchmarks.scale_search import principal
from hybrid_es.cluster.engine import connect
from hybrid_es.ingest.beir import read_queries
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import clean_query, sparse_query
from hybrid_es.settings import Settings

DATASET = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets" / "scifact"


def shapes(text: str, policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The leg as sent and its variants, by name (each a whole search body)."""
    q = sparse_query(text, policy)
    should = q["bool"]["should"]

    def body(clauses: list[dict[str, Any]]) -> dict[str, Any]:
        query = copy.deepcopy(q)
        query["bool"]["should"] = copy.deepcopy(clauses)
        return {"query": query, "size": 50, "_source": False, "track_total_hits": False}

    mm = should[0]["multi_match"]
    best = dict(mm, type="best_fields")
    fields = [f.split("^") for f in mm["fields"]]
    split = [
        {"match": {f[0]: {"query": mm["query"], **({"boost": float(f[1])} if len(f) > 1 else {})}}}
        for f in fields
    ]
    return {
        "as sent": body(should),
        "best_fields": body([{"multi_match": best}, *should[1:]]),
        "best_fields, no identifier clauses": body([{"multi_match": best}, *should[1:2]]),
        "multi_match alone": body(should[:1]),
        "client terms alone": body(should[1:2]),
        "fields as separate match clauses": body([*split, *should[1:]]),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--index", default="hybrid-es-scale-int8-hnsw-1000000")
    p.add_argument("--dataset", type=Path, default=DATASET.resolve())
    p.add_argument("--queries", type=int, default=100)
    args = p.parse_args(argv)
    door = ChunksDoor(connect(Settings()))
    texts = [clean_query(t) for t in read_queries(args.dataset).values() if t.strip()]
    now = datetime.now(UTC)
    took: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    for i, text in enumerate(texts[: args.queries]):
        policy = policy_filter(principal(i % 4), RequestScope(), now)
        bodies = shapes(text, policy)
        names = list(bodies)
        for name in names[i % len(names) :] + names[: i % len(names)]:  # turns rotate
            t0 = time.perf_counter()
            resp = door.search(args.index, bodies[name], policy, what="searching (shapes)")
            if i >= 5:
                wall.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
                took.setdefault(name, []).append(float(resp["took"]))

    def pct(xs: list[float], q: float) -> float:
        return sorted(xs)[max(0, int(q * len(xs)) - 1)]

    rows = [
        {
            "body": n,
            "took p50 / p95": f"{statistics.median(took[n]):.0f} / {pct(took[n], 0.95):.0f}",
            "round trip p50 / p95": f"{statistics.median(wall[n]):.1f} / {pct(wall[n], 0.95):.1f}",
        }
        for n in took
    ]
    print_rows(f"sparse leg shapes on {args.index}", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
