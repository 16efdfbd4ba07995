#!/usr/bin/env python
"""hybrid-es against OpenSearch's own hybrid query, interleaved query by query (issue 40).

The same OpenSearch node, the same chunks index and vectors, the same query embedder. Ours: the
default search (min-max linear fusion with the per-query ``spread`` weight, fused client-side, no
reranker) as the evaluation principal. The peer: one ``hybrid`` query (our BM25 query and a kNN
query on the same vector, the evaluation tenant's filter in both) through a search pipeline of
the benchmark's own, ``normalization-processor`` with ``min_max`` and ``arithmetic_mean`` at the
weights OpenSearch's hybrid search tutorial uses, [0.3, 0.7] (lexical, neural); the pipeline is
deleted afterwards. OpenSearch cannot embed here (no ml-commons model), so the peer embeds its
query client-side with our embedder and its time is counted. Every query runs through both back
to back, the one going first alternating; the list is repeated ``--rounds`` times after
``--warmup`` queries. Reported: per system nDCG@10 and p50 / p95 ms; ours / peer at p50 and p95
with a 95 % paired bootstrap interval over queries; the paired nDCG@10 difference with its p;
whether ours' p50 is at most 0.8x the peer's at equal or better nDCG@10::

    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    eval "$(scripts/opensearch.sh env)"
    python scripts/bench_native_peer.py ../shared/datasets/scifact --split test \\
        --out reports/native-scifact.json

The first run of a collection ingests it into the evaluation index (minutes); later runs reuse
it. Before measuring, the run waits for the 1-minute load average to fall under
``--quiet-load`` (checked every minute, at most ``--quiet-wait-minutes``) and records the load.

Library code: ``benchmarks`` (``native_run`` the flow, ``native_peer`` the peer,
``native_report`` the tables, ``interleave`` the protocol, ``interleave_stats`` the intervals).
Connection settings come from ``HYBRID_ES_*`` (``hybrid_es.settings.Settings``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.native_run import NativeOptions, run

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every model here is a local folder
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Known, harmless noise: ranx's numba cast.
warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")


def _parse_args(argv: list[str] | None) -> NativeOptions:
    p = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("dataset", type=Path, help="a BEIR-layout collection folder")
    p.add_argument("--split", default="test")
    p.add_argument("--max-queries", type=int, default=None, help="the first N judged queries")
    p.add_argument("--top-k", type=int, default=10, help="chunks asked of both (the default 10)")
    p.add_argument(
        "--lexical-weight",
        type=float,
        default=0.3,
        help="the peer's BM25 weight; kNN gets the rest (the tutorial's 0.3 / 0.7)",
    )
    p.add_argument(
        "--pagination-depth",
        type=int,
        default=None,
        help="the peer's results per sub-query and shard (default: the engine's, from + size)",
    )
    p.add_argument("--rounds", type=int, default=3, help="passes over the query list")
    p.add_argument("--warmup", type=int, default=20, help="warm-up queries (not timed)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--level", type=float, default=0.95, help="interval level")
    p.add_argument("--quiet-load", type=float, default=1.5, help="wait for a load under this")
    p.add_argument("--quiet-wait-minutes", type=float, default=45.0, help="at most this long")
    p.add_argument(
        "--peer-filter",
        choices=("tenant", "policy"),
        default="tenant",
        help="the peer's filter: the tenant's, or (a diagnostic) ours' whole policy filter",
    )
    p.add_argument("--pipeline", default=None, help="the peer's pipeline name (default: own)")
    p.add_argument("--json", action="store_true", help="print the record as JSON, no tables")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.warmup < 0 or args.resamples < 1:
        p.error("--rounds and --resamples must be >= 1, --warmup >= 0")
    if not 1 <= args.top_k <= 100:
        p.error("--top-k must lie in 1..100")
    if not 0 <= args.lexical_weight <= 1:
        p.error("--lexical-weight must lie in [0, 1]")
    if args.pagination_depth is not None and args.pagination_depth < args.top_k:
        p.error("--pagination-depth cannot be under --top-k")
    if not 0 < args.level < 1:
        p.error("--level must lie in (0, 1)")
    if not (args.dataset / "corpus.jsonl").is_file():
        p.error(f"no BEIR collection at {args.dataset} (corpus.jsonl missing)")
    return NativeOptions(**vars(args))


def main(argv: list[str] | None = None) -> int:
    options = _parse_args(argv)
    # A terminated run still deletes its search pipeline (the peer's context exits on the way).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    command = "python " + shlex.join(sys.argv if argv is None else ["bench_native_peer.py", *argv])
    return run(options, command)


if __name__ == "__main__":
    sys.exit(main())
