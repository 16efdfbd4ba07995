#!/usr/bin/env python
"""Where one default search's time goes, one client, nothing cached: the stages the response
times (embedding, retrieval, fusion), each round trip to the engine (wall time against the
engine's own ``took``), and a bare round trip (an ``_msearch`` of ``match_none``) for scale.

    python scripts/bench_stages.py                                   # SciFact, float32 queries
    HYBRID_ES_EMBED_RUNTIME=onnx-int8 python scripts/bench_stages.py \\
        --index hybrid-es-chunks-eval-scifact-minilm-onnx-int8-fused

The searches are SciFact's judged test queries through ``HybridSearcher.search`` (the query
vector cache off) over the evaluation's index of the collection, which must exist (``hybrid-es
eval`` ingests it). A round trip is classed by what it sent: the legs (two bodies: BM25 and kNN,
ids and scores only) or the read of the head's records (one body). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import bench_embedder, print_rows
from benchmarks.per_core_run import EVAL_PRINCIPAL, judged_queries
from hybrid_es.evaluation.collection import default_index
from hybrid_es.models import SearchRequest
from hybrid_es.retrieval import effects, search_run
from hybrid_es.retrieval.effects import Msearch
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

DATASET = (Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets" / "scifact").resolve()


def _p(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2) if values else 0.0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", type=Path, default=DATASET)
    p.add_argument("--index", default=None, help="chunks index (default: the evaluation's)")
    p.add_argument("--rounds", type=int, default=2, help="passes over the queries")
    a = p.parse_args(argv)
    settings = Settings()
    from hybrid_es.cluster.engine import connect

    engine = connect(settings)
    embedder = bench_embedder("minilm", settings)
    index = a.index or default_index(a.dataset, "minilm")
    searcher = HybridSearcher(
        engine,
        embedder,
        index=index,
        corpus_state_index=f"{settings.corpus_state_index}-eval",
        url=engine.url,
        query_cache_size=0,
    )
    searcher.warm_up()
    queries = judged_queries(a.dataset, "test")
    searcher.search(queries[0], EVAL_PRINCIPAL)

    trips: dict[str, list[tuple[float, float]]] = {"legs": [], "head read": []}

    def timed(effect: Msearch) -> tuple[list[dict[str, Any]], str]:
        t = time.perf_counter()
        out = ctx.answers.send(effect)
        took = max(float(r.get("took", 0)) for r in out[0])
        kind = "legs" if len(effect.searches) > 1 else "head read"
        trips[kind].append(((time.perf_counter() - t) * 1000, took))
        return out

    # The search as the searcher runs it (search_run over its context), each _msearch timed.
    ctx = searcher.context()
    stages: dict[str, list[float]] = {}
    for _ in range(a.rounds):
        for q in queries:
            steps = search_run.search_steps(ctx, SearchRequest(q, EVAL_PRINCIPAL))
            resp = effects.run(steps, timed)
            for k, v in resp.timings_ms.items():
                stages.setdefault(k, []).append(float(v))

    bare: list[float] = []
    body = [{"index": index}, {"size": 0, "query": {"match_none": {}}}]
    for i in range(330):
        t = time.perf_counter()
        engine.raw.msearch(searches=body)
        if i >= 30:
            bare.append((time.perf_counter() - t) * 1000)

    print(
        f"{len(queries) * a.rounds} searches, {index}, {embedder.model_id} "
        f"({settings.embed_runtime}), one client"
    )
    print_rows(
        "stages of a search (ms)",
        [{"stage": k, "p50": _p(v, 50), "p95": _p(v, 95)} for k, v in stages.items()],
    )
    rows = [
        {
            "round trip": kind,
            "n": len(v),
            "wall p50": _p([w for w, _ in v], 50),
            "wall p95": _p([w for w, _ in v], 95),
            "engine took p50": _p([t for _, t in v], 50),
        }
        for kind, v in trips.items()
    ]
    rows.append(
        {
            "round trip": "bare (match_none)",
            "n": len(bare),
            "wall p50": _p(bare, 50),
            "wall p95": _p(bare, 95),
            "engine took p50": 0.0,
        }
    )
    print_rows("round trips (ms)", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
