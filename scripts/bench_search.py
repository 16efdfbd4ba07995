#!/usr/bin/env python
"""Benchmark hybrid search on a BEIR collection (SciFact by default).

1. Ingests the corpus into its own chunks index with ``Ingestor`` (tenant ``bench``, everyone may
   read). Unchanged documents are skipped by content hash, so a second run reuses the index.
2. Warms the embedder, then runs each query of the split through ``HybridSearcher.search`` as
   ``Principal(tenant="bench", user_id="bench")`` with the default ``RequestScope``.
3. Prints per-stage latency (p50 / p95 / mean / max over the queries) from
   ``SearchResponse.timings_ms``, next to the engine's own ``took`` of the msearch round trip,
   and nDCG / Recall computed with ``ranx`` as a sanity check of quality.

Run from the repository root with the project venv::

    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1
    python scripts/bench_search.py                 # all test queries, rich tables
    python scripts/bench_search.py --queries 50 --json

Connection settings come from ``HYBRID_ES_*`` (see ``hybrid_es.settings.Settings``); the
cluster may be Elasticsearch or OpenSearch (``hybrid_es.connect`` probes which).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.search_run import SearchOptions, run
from hybrid_es.retrieval.searcher import MAX_TOP_K

REPO_ROOT = Path(__file__).resolve().parents[1]


def _default_dataset() -> Path:
    return (REPO_ROOT / ".." / "shared" / "datasets" / "scifact").resolve()


def _parse_args(argv: list[str] | None) -> SearchOptions:
    p = argparse.ArgumentParser(
        description="Ingest a BEIR collection and benchmark HybridSearcher.search on its queries.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--dataset", type=Path, default=_default_dataset(), help="BEIR folder")
    p.add_argument("--split", default="test", help="qrels/<split>.tsv")
    p.add_argument("--index", default="hybrid-es-chunks-bench-scifact", help="chunks index")
    p.add_argument(
        "--queries", type=int, default=None, help="first N judged queries (None: all of the split)"
    )
    p.add_argument("--top-k", type=int, default=10, help="cut-off for nDCG/MRR/Recall@k")
    p.add_argument(
        "--eval-depth",
        type=int,
        default=100,
        help="top_k passed to search() so Recall@depth can be measured (max "
        f"{MAX_TOP_K}; the list is also capped by the fusion window); set it to --top-k to time "
        "exactly a top_k=10 call",
    )
    p.add_argument("--rerank-model", default=None, help="local CrossEncoder folder (else none)")
    p.add_argument("--rerank-depth", type=int, default=50, help="fused candidates reranked")
    p.add_argument("--embedder", default="minilm", help="minilm | e5 | a model path")
    p.add_argument("--fusion", choices=("auto", "native", "client"), default="auto")
    p.add_argument(
        "--torch-threads",
        type=int,
        default=None,
        help="torch.set_num_threads for the embedder and reranker (None: torch's choice; "
        "query embeddings: HYBRID_ES_EMBED_THREADS)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object, no tables")
    args = p.parse_args(argv)
    args.dataset = args.dataset.resolve()
    if not 1 <= args.top_k <= MAX_TOP_K:
        p.error(f"--top-k must be 1..{MAX_TOP_K}")
    if not args.top_k <= args.eval_depth <= MAX_TOP_K:
        p.error(f"--eval-depth must be --top-k..{MAX_TOP_K}")
    if args.queries is not None and args.queries < 1:
        p.error("--queries must be >= 1")
    if args.torch_threads is not None and args.torch_threads < 1:
        p.error("--torch-threads must be >= 1")
    return SearchOptions(**vars(args))


def main(argv: list[str] | None = None) -> int:
    options = _parse_args(argv)
    command = "python " + shlex.join(sys.argv if argv is None else ["bench_search.py", *argv])
    return run(options, command)


if __name__ == "__main__":
    sys.exit(main())
