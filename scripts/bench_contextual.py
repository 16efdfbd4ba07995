#!/usr/bin/env python
"""Contextual retrieval on the data it was published with, and the cost of re-ingesting.

Part 1 (always): Anthropic's contextual-retrieval cookbook set (``anthropic_codebase``: 90 source
files cut into 737 chunks, 248 questions with their golden chunks). The corpus's own chunks are
used as they are (the ingest is handed a chunker that returns them), one tenant, two chunk
indices built by ``Ingestor``: one without headers, one with the extractive header. Pass@k is the
cookbook's metric: the share of a query's golden chunks found in the top k, averaged over
queries. Pipelines:

- dense only: kNN over the raw chunks (the same policy-filtered ``knn`` leaf the searcher sends);
- hybrid, no context: ``HybridSearcher`` (BM25 + kNN, RRF) over the raw chunks;
- contextual dense: kNN over header + chunk;
- contextual hybrid: ``HybridSearcher`` over header + chunk;
- contextual hybrid + rerank: the same with ``--rerank-model`` (a local CrossEncoder folder), the
  fused top 50 reranked.

The table is printed beside the cookbook's own numbers (``ANCHORS.md``: Voyage embeddings, Claude
3 Haiku headers, Cohere rerank); ours use all-MiniLM-L6-v2 (256-token window) and the extractive
header, offline.

Part 2 (``--scifact``): the SciFact corpus (5,183 abstracts) ingested into its own index three
times: from empty, again unchanged (everything must be skipped: no embedding, no header), and
with 1% of the documents edited (those regenerate all their chunks, the rest are skipped).

Run from the repository root with the project venv::

    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1
    python scripts/bench_contextual.py                     # part 1, about 3 minutes on 2 cores
    python scripts/bench_contextual.py --scifact           # and part 2, about 10 more
    python scripts/bench_contextual.py --json > out.json

Connection settings come from ``HYBRID_ES_*`` (Elasticsearch or OpenSearch: ``hybrid_es.connect``
probes which). The indices are created fresh (and deleted at the end unless ``--keep``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.contextual_run import ContextualOptions, run

REPO_ROOT = Path(__file__).resolve().parents[1]
DATASETS = (REPO_ROOT / ".." / "shared" / "datasets").resolve()


def parse(argv: list[str] | None) -> ContextualOptions:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--dataset", type=Path, default=DATASETS / "anthropic_codebase")
    p.add_argument("--queries", type=int, default=None, help="first N queries (default: all)")
    p.add_argument(
        "--rerank-model", default=None, help="local CrossEncoder folder (else no rerank row)"
    )
    p.add_argument("--embedder", default="minilm", help="minilm | e5 | a model path")
    p.add_argument("--index-prefix", default="hybrid-es-chunks-bench-ctx")
    p.add_argument("--scifact", action="store_true", help="also measure re-ingest on SciFact")
    p.add_argument("--scifact-dataset", type=Path, default=DATASETS / "scifact")
    p.add_argument("--scifact-docs", type=int, default=None, help="first N SciFact documents")
    p.add_argument("--keep", action="store_true", help="keep the benchmark indices")
    p.add_argument("--json", action="store_true", help="print one JSON object, no tables")
    return ContextualOptions(**vars(p.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    command = "python " + shlex.join(
        sys.argv if argv is None else ["scripts/bench_contextual.py", *argv]
    )
    return run(options, command)


if __name__ == "__main__":
    raise SystemExit(main())
