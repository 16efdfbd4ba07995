#!/usr/bin/env python
"""Ingest rate against the encoder alone, with and without the bulk overlap (issue 28 item 5).

On the same texts, the first SciFact documents whose chunks reach ``--chunks`` (2,000 by
default), three variants, each run ``--rounds`` times, interleaved:

- encoder: ``embed_passages`` on the texts an ingest embeds, one call per ingest batch;
- ingest, overlap: ``Ingestor.ingest`` into a fresh index, a batch's bulk request sent while the
  next batch is embedded (the default);
- ingest, no overlap: the same with ``overlap_bulk=False``.

Reported in chunks per second (and the seconds, and the seconds spent embedding). Run from the
repository root with the project venv::

    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1
    python scripts/bench_ingest.py                    # MiniLM, about 5 minutes on 2 cores
    python scripts/bench_ingest.py --json > out.json

Connection settings come from ``HYBRID_ES_*`` (Elasticsearch or OpenSearch). The indices are
created fresh for each ingest and deleted after it. Library code:
``benchmarks.ingest_rate``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.ingest_rate import IngestRateOptions, run

REPO_ROOT = Path(__file__).resolve().parents[1]
DATASETS = (REPO_ROOT / ".." / "shared" / "datasets").resolve()


def parse(argv: list[str] | None) -> IngestRateOptions:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--dataset", type=Path, default=DATASETS / "scifact", help="BEIR folder")
    p.add_argument("--chunks", type=int, default=2000, help="chunks measured (whole documents)")
    p.add_argument("--batch-size", type=int, default=64, help="documents per ingest batch")
    p.add_argument("--embedder", default="minilm", help="minilm | e5 | a model path | hash")
    p.add_argument("--rounds", type=int, default=2, help="runs of each variant")
    p.add_argument("--index-prefix", default="hybrid-es-chunks-bench-ingest")
    p.add_argument("--json", action="store_true", help="print one JSON object, no table")
    args = p.parse_args(argv)
    if args.chunks < 1 or args.batch_size < 1 or args.rounds < 1:
        p.error("--chunks, --batch-size and --rounds must be >= 1")
    return IngestRateOptions(**vars(args))


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    command = "python " + shlex.join(
        sys.argv if argv is None else ["scripts/bench_ingest.py", *argv]
    )
    return run(options, command)


if __name__ == "__main__":
    raise SystemExit(main())
