#!/usr/bin/env python
"""How close a query's exact neighbours lie in the growth benchmark's corpus, size by size: the
context for its kNN recall@10 (docs/scale.md, "Why this corpus cannot settle recall at 1M").

Recall@10 against exact counts whether an approximate search finds the same ten chunks as brute
force. When the 10th and 11th best cosines differ by less than the approximation's own error
(int8 quantisation, a graph that stops early), which ten it returns is a coin toss among
near-equals, however well it finds the neighbourhood. This script draws the benchmark's corpus
(``scale_synth.Synth``: the same pool, seed, tenants and noise as ``scripts/bench_scale.py``) at
each size and prints, over its queries (each filtered to its tenant, as the benchmark's are), the
median cosine of the 1st, 10th and 11th exact neighbours, the 1st-to-10th spread and the 10th-to-
11th margin::

    source ~/.cache/hybrid-es/venv/bin/activate; export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    python scripts/neighbour_gaps.py                        # 10,339 (real only), 100k, 1M

No cluster is needed: the pool and the query vectors come from the benchmark's cache (built
first, about 10 minutes, when missing). A measurement script, not a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import print_rows
from benchmarks.scale_corpus import load_pool, load_queries
from benchmarks.scale_synth import Synth
from hybrid_es.encoders.embedder import make_embedder

DATASETS = (Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets").resolve()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="0,100000,1000000", help="chunks (0: the real pool alone)")
    p.add_argument("--datasets", type=Path, default=DATASETS)
    # The defaults of scripts/bench_scale.py: the corpus it loads.
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--tenants", type=int, default=4)
    p.add_argument("--noise", type=float, default=0.04)
    p.add_argument("--seed", type=int, default=16)
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    embedder = make_embedder("minilm")
    pool = load_pool(embedder, lambda m: print(m, file=sys.stderr), args.datasets)
    _, qvecs, _ = load_queries(embedder, args.queries, args.datasets)
    qtenants = np.arange(len(qvecs)) % args.tenants
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        n = size or len(pool.records)
        _, scores = Synth(pool, n, args.tenants, args.noise, args.seed).exact_best(
            qvecs, qtenants, 11
        )
        rows.append(
            {
                "chunks": n,
                "1st": f"{np.median(scores[:, 0]):.3f}",
                "10th": f"{np.median(scores[:, 9]):.3f}",
                "11th": f"{np.median(scores[:, 10]):.3f}",
                "1st - 10th": f"{np.median(scores[:, 0] - scores[:, 9]):.4f}",
                "10th - 11th": f"{np.median(scores[:, 9] - scores[:, 10]):.5f}",
            }
        )
        print(f"{n} chunks done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    print_rows(f"exact neighbours, median over {len(qvecs)} queries (noise {args.noise})", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
