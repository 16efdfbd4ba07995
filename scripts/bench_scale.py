#!/usr/bin/env python
"""Growth benchmark: how indexing, storage, memory, latency and kNN recall grow with the corpus.

For each size (``--sizes``) and vector quantisation (``--quantizations``) it builds one index
``hybrid-es-scale-<q>-<n>`` with the real chunk mapping and analysis (``es_templates``: the
``hybrid-es-chunks`` index template's mappings, the ``hybrid-es-settings`` and
``hybrid-es-analysis`` components' settings), only ``embedding.index_options.type`` replaced,
loads it with the bulk helper (refresh off), and measures:

- indexing rate (chunks/s of the bulk load; refresh and the optional force-merge apart);
- size on disk per chunk (``_stats`` store size / docs) and vector memory per chunk (the index
  stats' ``dense_vector.off_heap`` section: raw vectors ``vec``, quantised ``veq``, binarised
  ``veb``, HNSW graph ``vex``);
- p50/p95 of ``HybridSearcher.search`` for the BM25 leg, the kNN leg and the client-side fused
  hybrid (query vectors cached, no reranker: the cluster's part of a search);
- recall@10 of the approximate kNN leg against exact brute force (numpy, float32 dot products
  over exactly the vectors indexed, filtered to the query's tenant, which is what the policy
  filter admits here) at each ``--num-candidates``.

The data: real chunks of the shared datasets (SciFact abstracts, Cranfield, the Anthropic
codebase chunks), made by the real chunker and record builder (``hybrid_es.ingest.plan``) and
embedded once with MiniLM (cached under ``~/.cache/hybrid-es/bench-scale/``). A size up to the
pool's size uses real chunks and real vectors only; beyond it, chunk ``i`` is a copy of pool
chunk ``perm[i % pool]`` with ~10 % of its words dropped and its vector perturbed (Gaussian noise
of ``--noise`` per dimension, renormalised). Every chunk gets one of ``--tenants`` tenants at
random and an ACL that the benchmark's principal (group ``staff``) passes, so the policy filter
of a search admits exactly its tenant's chunks.

Run from the repository root with the project venv and the dev node up::

    source ~/.cache/hybrid-es/venv/bin/activate; export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    eval "$(scripts/es.sh env)"
    python scripts/bench_scale.py --sizes 10000,100000 --merge
    python scripts/bench_scale.py --sizes 1000000 --quantizations int8_hnsw --merge

``--merge`` keeps the rows of an earlier run in ``--json`` (another size or quantisation) and
replaces those rerun, so the table and the plot cover every run. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scale_options import (
    QUANTIZATIONS,
    ScaleOptions,
    fit_window,
    parse_floats,
    parse_ints,
    parse_names,
    unknown_quantizations,
)
from benchmarks.scale_run import run

REPO = Path(__file__).resolve().parents[1]
DATASETS = (REPO / ".." / "shared" / "datasets").resolve()


def parse(argv: list[str] | None) -> ScaleOptions:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--sizes", default="10000,100000,1000000", help="chunks per index")
    p.add_argument("--quantizations", default=",".join(QUANTIZATIONS))
    p.add_argument("--queries", type=int, default=100, help="SciFact queries timed and judged")
    p.add_argument("--num-candidates", default="50,100,200", help="kNN num_candidates settings")
    p.add_argument("--window", type=int, default=50, help="per-leg window (kNN k)")
    p.add_argument(
        "--oversample",
        default="0,1.5,3",
        help="rescore_vector.oversample settings tried on the quantised indices (0: none)",
    )
    p.add_argument("--tenants", type=int, default=4)
    p.add_argument(
        "--noise",
        type=float,
        default=0.04,
        help="Gaussian noise per dimension of a perturbed copy's vector",
    )
    p.add_argument("--seed", type=int, default=16)
    p.add_argument("--bulk-size", type=int, default=500, help="chunks per bulk request")
    p.add_argument("--bulk-threads", type=int, default=2)
    p.add_argument(
        "--force-merge",
        type=int,
        default=0,
        help="force-merge to this many segments after the refresh, searching before and after"
        " (0: no)",
    )
    p.add_argument("--keep", action="store_true", help="keep the indices")
    p.add_argument(
        "--reuse",
        action="store_true",
        help="search an index of the right size left by an earlier run (--keep, or a run stopped"
        " after its load) instead of loading it again (its row has no indexing rate)",
    )
    p.add_argument("--json", type=Path, default=REPO / "docs" / "scale" / "bench_scale.json")
    p.add_argument("--plot", type=Path, default=REPO / "docs" / "scale" / "scale.png")
    p.add_argument(
        "--merge", action="store_true", help="keep the rows of --json that this run does not redo"
    )
    args = p.parse_args(argv)
    args.sizes = parse_ints(args.sizes)
    args.num_candidates = parse_ints(args.num_candidates)
    args.oversample = parse_floats(args.oversample)
    args.quantizations = parse_names(args.quantizations)
    bad = unknown_quantizations(args.quantizations)
    if bad:
        p.error(f"unknown quantizations {bad}; use {QUANTIZATIONS}")
    args.window = fit_window(args.window, args.num_candidates)
    return ScaleOptions(**vars(args))


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    command = "python scripts/bench_scale.py " + shlex.join(sys.argv[1:])
    return run(options, datasets=DATASETS, command=command)


if __name__ == "__main__":
    raise SystemExit(main())
