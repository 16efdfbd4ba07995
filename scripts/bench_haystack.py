#!/usr/bin/env python
"""hybrid-es against its Haystack peer, interleaved query by query (issue 6 item 5, issue 28).

The same node, the same chunks and vectors (the peer's index is filled from ours), the same
embedder and cross-encoder. Every query runs through both systems of a pair back to back, the one
going first alternating along the list and flipping each round; the list is repeated ``--rounds``
times after ``--warmup`` queries of warm-up. Reported: per system nDCG@10 and p50 / p95 ms; per
pair ours / peer at p50 and p95 with a 95 % paired bootstrap interval over queries, so one run
gives a figure a second run should land inside. Pairs: ``hybrid-es hybrid`` / ``haystack hybrid``,
and with ``--reranker`` ``hybrid-es hybrid+rerank`` / ``haystack hybrid+rerank``.

Runs with the project venv; the peer runs in its own (``scripts/setup_peer.sh``: Haystack's
Elasticsearch integration needs the 8.x client) as a worker process this script starts::

    scripts/setup_peer.sh                    # once: creates ~/.cache/hybrid-es/peer-venv
    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    eval "$(scripts/es.sh env)"
    python scripts/bench_haystack.py ../shared/datasets/scifact --split test \\
        --reranker ~/.cache/hybrid-es/models/scifact-ce --rerank-max-length 112 \\
        --out reports/haystack-scifact.json

Library code: ``benchmarks`` (``peer_run`` the flow, ``interleave`` the
protocol, ``interleave_stats`` the intervals, ``peer*`` the two sides). Connection settings come
from ``HYBRID_ES_*`` (``hybrid_es.settings.Settings``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.peer_run import PeerOptions, run
from hybrid_es.encoders.reranker import PRECISIONS

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every model here is a local folder
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Known, harmless noise: ranx's numba cast.
warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")


def _parse_args(argv: list[str] | None) -> PeerOptions:
    p = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("dataset", type=Path, help="a BEIR-layout collection folder")
    p.add_argument("--split", default="test")
    p.add_argument("--max-queries", type=int, default=None, help="the first N judged queries")
    p.add_argument("--reranker", default=None, help="a local CrossEncoder folder (both sides)")
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=None,
        help="ours' cross-encoder (default: encoders.reranker.default_precision)",
    )
    p.add_argument("--rerank-depth", type=int, default=20, help="fused top N reranked (both)")
    p.add_argument("--rerank-max-length", type=int, default=256, help="tokens per pair (both)")
    p.add_argument("--top-k-each", type=int, default=50, help="peer's top_k per leg (ours: 50)")
    p.add_argument("--num-candidates", type=int, default=100, help="peer's kNN num_candidates")
    p.add_argument("--fuzziness", default="0", help='peer BM25 fuzziness (stock Haystack: "AUTO")')
    p.add_argument("--fusion", choices=("rrf", "linear"), default="rrf", help="ours' fusion")
    p.add_argument("--rounds", type=int, default=3, help="passes over the query list")
    p.add_argument("--warmup", type=int, default=20, help="warm-up queries (not timed)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--level", type=float, default=0.95, help="interval level")
    p.add_argument("--index", default=None, help="peer index (default haystack-peer-<dataset>)")
    p.add_argument(
        "--peer-python",
        type=Path,
        default=None,
        help="the peer venv's python (default $HYBRID_ES_CACHE/peer-venv/bin/python)",
    )
    p.add_argument(
        "--peer-threads", type=int, default=None, help="peer's torch threads (default: torch's)"
    )
    p.add_argument("--json", action="store_true", help="print the record as JSON, no tables")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    if args.rerank_depth > args.top_k_each:
        p.error("--rerank-depth cannot exceed --top-k-each")
    if args.rounds < 1 or args.warmup < 0 or args.resamples < 1:
        p.error("--rounds and --resamples must be >= 1, --warmup >= 0")
    if not 0 < args.level < 1:
        p.error("--level must lie in (0, 1)")
    if not (args.dataset / "corpus.jsonl").is_file():
        p.error(f"no BEIR collection at {args.dataset} (corpus.jsonl missing)")
    return PeerOptions(**vars(args))


def main(argv: list[str] | None = None) -> int:
    options = _parse_args(argv)
    command = "python " + shlex.join(sys.argv if argv is None else ["bench_haystack.py", *argv])
    return run(options, command)


if __name__ == "__main__":
    sys.exit(main())
