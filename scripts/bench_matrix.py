#!/usr/bin/env python
"""Every collection x pipeline, quality and latency, before and after, in one run.

For each collection two indices are searched, both built by ``hybrid-es eval`` and never
re-ingested here (a re-ingest would rewrite the "before" index with today's records):

- **before**: the index built before issue 15 (the ``standard`` analyzer keeping stop words, no
  ``code_terms`` field), searched with the previous default: RRF (k=60) over both legs for every
  query, the dense leg's script gate off;
- **after**: the index built with today's mappings (``-v2``), searched with today's defaults:
  min-max linear fusion (``fusion.DEFAULT_ALPHA``), the script gate on.

Pipelines: ``bm25`` and ``dense`` alone, ``rrf`` and ``linear`` (the default). The queries run one
at a time through the real searcher (one client, the runs of a collection interleaved side by
side); latency is the searcher's own ``total`` (query embedding, both legs, fusion)::

    D=../shared/datasets I=hybrid-es-chunks-eval
    python scripts/bench_matrix.py --json docs/eval/matrix.json \\
        --set scifact=$D/scifact:minilm:$I-scifact-minilm:$I-scifact-minilm-v2

A ``before`` index of ``-`` runs the after side only. Prints one table: nDCG@10 (and Pass@10,
chunk-level recall@10, for a collection judged by chunks), p50/p95 ms, per side and pipeline.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import bench_client, bench_embedder, engine_line, machine
from hybrid_es.evaluation.cookbook import is_cookbook, load_codebase
from hybrid_es.evaluation.runner import METRICS, PASS_AT_K, run_pipeline
from hybrid_es.ingest.beir import read_qrels, read_queries
from hybrid_es.retrieval import fusion as F
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher

# (label, searcher pipeline, fusion method)
PIPELINES = (
    ("bm25", "bm25", "rrf"),
    ("dense", "dense", "rrf"),
    ("rrf", "hybrid", "rrf"),
    ("linear", "hybrid", "linear"),
)
SIDES = ("before", "after")


def run_collection(spec: str, *, state_index: str) -> list[dict[str, Any]]:
    name, rest = spec.split("=", 1)
    dataset, embedder_name, before, after = rest.split(":")
    root = Path(dataset)
    if is_cookbook(root):
        queries, qrels = load_codebase(root, tenant="eval").as_judged()
        unit, metrics = "chunk", PASS_AT_K
    else:
        queries, qrels = read_queries(root), read_qrels(root, "test")
        unit, metrics = "doc", METRICS
    es = bench_client(install=False)
    emb = bench_embedder(embedder_name)
    gate = getattr(emb, "scripts", None)
    indices = {"before": before, "after": after}
    rows: list[dict[str, Any]] = []
    for label, pipeline, method in PIPELINES:
        for side in SIDES:
            index = indices[side]
            if index == "-":
                continue
            # the previous default had no script gate: every query used both legs
            emb.scripts = gate if side == "after" else None  # type: ignore[attr-defined]
            searcher = HybridSearcher(
                es,
                emb,
                index=index,
                corpus_state_index=state_index,
                pipeline=pipeline,  # type: ignore[arg-type]
                fusion_method=method,  # type: ignore[arg-type]
                alpha=F.DEFAULT_ALPHA,
                params=RetrievalParams(),
                query_cache_size=0,  # every query embedded: the table times the whole path
            )
            searcher.warm_up()
            t0 = time.perf_counter()
            r = run_pipeline(label, searcher, queries, qrels, unit=unit, metrics=metrics)  # type: ignore[arg-type]
            total = r.latency_ms.get("total", {})
            row = {
                "collection": name,
                "side": side,
                "pipeline": label,
                "index": index,
                "ndcg@10": round(r.metrics.get("ndcg@10", 0.0), 4),
                "recall@10": round(r.metrics.get("recall@10", 0.0), 4),
                "p50_ms": total.get("p50"),
                "p95_ms": total.get("p95"),
                "queries": r.queries,
                "failed": r.failed,
                "fusion_paths": r.fusion_paths,
                "seconds": round(time.perf_counter() - t0, 1),
                "unit": unit,
            }
            rows.append(row)
            print(
                f"{name:>12} {side:>6} {label:>7}: nDCG@10 {row['ndcg@10']:.4f}  "
                f"R@10 {row['recall@10']:.4f}  p50 {row['p50_ms']} ms  p95 {row['p95_ms']} ms",
                file=sys.stderr,
            )
    emb.scripts = gate  # type: ignore[attr-defined]
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| collection | pipeline | nDCG@10 before | nDCG@10 after | R@10 before | R@10 after "
        "| p50/p95 ms before | p50/p95 ms after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    by = {(r["collection"], r["pipeline"], r["side"]): r for r in rows}
    for coll in dict.fromkeys(r["collection"] for r in rows):
        for label, _, _ in PIPELINES:
            b, a = by.get((coll, label, "before")), by.get((coll, label, "after"))

            def cell(r: dict[str, Any] | None, key: str) -> str:
                return "-" if r is None else f"{r[key]:.4f}"

            def lat(r: dict[str, Any] | None) -> str:
                return "-" if r is None else f"{r['p50_ms']:.1f} / {r['p95_ms']:.1f}"

            out.append(
                f"| {coll} | {label}{' (default)' if label == F.DEFAULT_METHOD else ''} "
                f"| {cell(b, 'ndcg@10')} | {cell(a, 'ndcg@10')} "
                f"| {cell(b, 'recall@10')} | {cell(a, 'recall@10')} | {lat(b)} | {lat(a)} |"
            )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--set", action="append", required=True, help="name=dataset:embedder:before:after"
    )
    ap.add_argument("--state-index", default="hybrid-es-corpus-state-eval")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for spec in args.set:
        rows.extend(run_collection(spec, state_index=args.state_index))
    m = machine(bench_client(install=False))
    print(f"\n{engine_line(m)}\n")
    print(table(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"machine": m, "command": " ".join(sys.argv), "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
