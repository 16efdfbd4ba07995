#!/usr/bin/env python
"""MiniLM's runtimes side by side: query time on one thread, passages per second in the ingest's
batches, and each vector's cosine to torch's (benchmarks/encoder.py says how
the runs interleave).

    python scripts/bench_encoder.py ../shared/datasets/scifact --questions 300 --passages 640

Quality through the real searcher is `HYBRID_ES_EMBED_RUNTIME=<runtime> hybrid-es eval ...`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import print_rows
from benchmarks.encoder import BATCHED, measure
from hybrid_es.encoders.embedder import RUNTIMES
from hybrid_es.ingest.beir import read_corpus, read_queries


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset", type=Path)
    p.add_argument("--questions", type=int, default=300)
    p.add_argument("--passages", type=int, default=640)
    p.add_argument("--runtimes", default=",".join([*RUNTIMES, BATCHED]))
    p.add_argument("--threads", type=int, default=1, help="query threads (passages: all cores)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    questions = list(read_queries(args.dataset).values())[: args.questions]
    docs = []
    for d in read_corpus(args.dataset, tenant="bench"):
        docs.append(f"{d.title}\n{d.body}")
        if len(docs) >= args.passages:
            break
    rows = measure(questions, docs, runtimes=args.runtimes.split(","), threads=args.threads)
    out = {
        "dataset": args.dataset.name,
        "questions": len(questions),
        "passages": len(docs),
        "cores": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "rows": [r.as_dict() for r in rows],
    }
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
    else:
        title = f"{args.dataset.name}: {len(questions)} questions, {len(docs)} passages"
        print_rows(f"{title}, load {out['load_average']}", out["rows"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
