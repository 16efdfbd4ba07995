#!/usr/bin/env python
"""Syncing an existing index (issue 38): SciFact loaded into a legacy index of its own field
names, synced with ``--from-index``'s code, against the same collection from its files (the
chunks compared, nDCG@10 of both), then 1 % changed and 1 % deleted, and the throughput of one
process and of slices against the encoder alone, with a projection to N machines.

Run from the repository root with the project venv::

    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1
    python scripts/bench_sync.py                # MiniLM, about 10 minutes on 2 cores
    python scripts/bench_sync.py --json > out.json

Connection settings come from ``HYBRID_ES_*`` (Elasticsearch or OpenSearch). Library code:
``benchmarks.sync`` and ``benchmarks.sync_run``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.sync_run import SyncBenchOptions, run

REPO_ROOT = Path(__file__).resolve().parents[1]
DATASETS = (REPO_ROOT / ".." / "shared" / "datasets").resolve()


def parse(argv: list[str] | None) -> SyncBenchOptions:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--dataset", type=Path, default=DATASETS / "scifact", help="BEIR folder")
    p.add_argument("--embedder", default="minilm", help="minilm | e5 | a model path | hash")
    p.add_argument("--docs", type=int, default=0, help="the collection's first N (0: all)")
    p.add_argument("--subset", type=int, default=600, help="documents of the throughput rows")
    p.add_argument("--slices", type=int, default=2, help="worker processes of the slices row")
    p.add_argument("--rounds", type=int, default=2, help="runs of each throughput variant")
    p.add_argument("--prefix", default="bench-sync", help="in the names of its indices")
    p.add_argument("--keep", action="store_true", help="keep the indices afterwards")
    p.add_argument("--json", action="store_true", help="print one JSON object, no table")
    args = p.parse_args(argv)
    if args.subset < 1 or args.slices < 2 or args.docs < 0 or args.rounds < 1:
        p.error("--subset and --rounds must be >= 1, --slices >= 2 and --docs >= 0")
    return SyncBenchOptions(**vars(args))


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    command = "python " + shlex.join(sys.argv if argv is None else ["scripts/bench_sync.py", *argv])
    return run(options, command)


if __name__ == "__main__":
    raise SystemExit(main())
