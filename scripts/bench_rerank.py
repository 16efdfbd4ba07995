#!/usr/bin/env python
"""Rerank cost against quality: one first stage, then every reranker configuration on it.

For each (backend/precision, max_length, depth) the script scores the fused top ``depth`` of every
judged query with the cross-encoder, orders them as the searcher does (``fusion.blend`` with the
model's stored weight, tail kept), and reports nDCG@10 / Recall@10 and the rerank time per query
(p50 / p95), plus retrieval + rerank per query (the first stage's own measured time added).
The first stage runs once, so configurations differ only in the reranker.

    python scripts/bench_rerank.py ../shared/datasets/scifact --reranker MODEL \\
        --configs fp32:128,int8:128,int8:96@1,int8:96@2 --depths 20

``--reranker`` repeated compares models (a distilled student beside its teacher) on the same
first stage, every configuration for each.

A configuration is ``PRECISION:MAX_LENGTH``, optionally ``@THREADS``: the reranker's torch
threads (``HYBRID_ES_RERANKER_THREADS``; without it, torch's own count). The first stage embeds
queries on ``--embed-threads`` (default: ``HYBRID_ES_EMBED_THREADS``).

The whole search with rerank, as users get it, is measured by ``hybrid-es eval --pipelines
hybrid+rerank``; this script is for choosing the configuration.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from hybrid_es.cli.common import client, settings
from hybrid_es.encoders.embedder import make_embedder
from hybrid_es.encoders.reranker import PRECISIONS, CrossEncoderReranker
from hybrid_es.evaluation.collection import default_index, ingest_collection
from hybrid_es.evaluation.metrics import evaluate
from hybrid_es.evaluation.reranker_train import best_chunk_per_doc, reranked_run
from hybrid_es.evaluation.runner import percentile
from hybrid_es.ingest.beir import read_qrels, read_queries


def parse_configs(spec: str) -> list[tuple[str, int, int | None]]:
    out: list[tuple[str, int, int | None]] = []
    for part in spec.split(","):
        prec, _, rest = part.strip().partition(":")
        length, _, threads = rest.partition("@")
        if prec not in PRECISIONS or not length.isdigit() or (threads and not threads.isdigit()):
            raise SystemExit(
                f"bad config {part!r}: want PRECISION:MAX_LENGTH[@THREADS], e.g. int8:128@1"
            )
        out.append((prec, int(length), int(threads) if threads else None))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset", type=Path)
    p.add_argument(
        "--reranker",
        required=True,
        action="append",
        help="a local CrossEncoder folder; repeat it to compare models on the same first stage",
    )
    p.add_argument("--split", default="test")
    p.add_argument("--configs", default="fp32:128,int8:128,onnx:128,onnx-int8:128")
    p.add_argument("--depths", default="20", help="comma list of rerank depths")
    p.add_argument("--weight", type=float, default=None, help="blend weight (default: stored)")
    p.add_argument("--embedder", default="minilm")
    p.add_argument(
        "--embed-threads", type=int, default=None, help="default: HYBRID_ES_EMBED_THREADS"
    )
    p.add_argument("--max-queries", type=int, default=None)
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    configs = parse_configs(args.configs)
    many = len(args.reranker) > 1
    depths = [int(d) for d in args.depths.split(",")]

    s = settings()
    embed_threads = s.embed_threads if args.embed_threads is None else args.embed_threads
    emb = make_embedder(args.embedder, query_threads=embed_threads)
    col = ingest_collection(
        client(s),
        emb,
        args.dataset,
        index=default_index(args.dataset, args.embedder),
        state_index=f"{s.corpus_state_index}-eval",
        url=s.redacted_url(),
    )
    qrels = read_qrels(args.dataset, args.split)
    if args.max_queries:
        qrels = dict(list(qrels.items())[: args.max_queries])
    queries = read_queries(args.dataset)
    emb.embed_queries(["warm-up"])
    ranked, first_ms = col.first_stage(queries, qrels)
    judged = {q: qrels[q] for q in ranked}
    base_run = {
        q: {c.doc_id: float(50 - i) for i, c in enumerate(best_chunk_per_doc(r))}
        for q, r in ranked.items()
    }
    base = evaluate(judged, base_run, ["ndcg@10", "recall@10"]).scores
    rows: list[dict[str, Any]] = [
        {
            "config": "first stage (hybrid RRF)",
            "depth": 0,
            **base,
            "rerank_ms": {"p50": 0.0, "p95": 0.0},
            "total_ms": {
                "p50": round(percentile(list(first_ms.values()), 50), 1),
                "p95": round(percentile(list(first_ms.values()), 95), 1),
            },
        }
    ]
    for model, (prec, length, threads) in [(m, c) for m in args.reranker for c in configs]:
        ce = CrossEncoderReranker(
            model,
            precision=prec,  # type: ignore[arg-type]
            max_length=length,
            threads=threads,
        )
        weight = ce.weight if args.weight is None else args.weight
        layers = ce.metadata.get("layers")
        label = f"{Path(model).name}{f' ({layers} layers)' if layers else ''} " if many else ""
        ce.score("warm-up", ["warm-up passage"] * 4)
        for depth in depths:
            run, rerank_ms, total_ms = {}, [], []
            for qid, cands in ranked.items():
                pool = cands[:depth]
                t = time.perf_counter()
                scores = ce.score(queries[qid], [c.text for c in pool])
                ms = (time.perf_counter() - t) * 1000
                rerank_ms.append(ms)
                total_ms.append(first_ms[qid] + ms)
                run[qid] = reranked_run(cands, scores, weight)
            q = evaluate(judged, run, ["ndcg@10", "recall@10"]).scores
            rows.append(
                {
                    "config": f"{label}{prec}:{length}{f'@{threads}' if threads else ''} "
                    f"(weight {weight:g})",
                    "depth": depth,
                    **q,
                    "rerank_ms": {
                        "p50": round(percentile(rerank_ms, 50), 1),
                        "p95": round(percentile(rerank_ms, 95), 1),
                    },
                    "total_ms": {
                        "p50": round(percentile(total_ms, 50), 1),
                        "p95": round(percentile(total_ms, 95), 1),
                    },
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    out = {
        "dataset": str(args.dataset),
        "split": args.split,
        "queries": len(ranked),
        "reranker": args.reranker if many else args.reranker[0],
        "embed_threads": embed_threads,
        "command": "python scripts/bench_rerank.py " + " ".join(sys.argv[1:]),
        "rows": rows,
    }
    if args.out:
        args.out.write_text(json.dumps(out, indent=2))
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    table = Table(
        title=f"rerank cost vs quality, {args.dataset.name} {args.split} ({len(ranked)} q)"
    )
    for c in ("config", "depth", "nDCG@10", "R@10", "rerank p50/p95 ms", "search p50/p95 ms"):
        table.add_column(c, justify="left" if c == "config" else "right")
    for r in rows:
        table.add_row(
            r["config"],
            str(r["depth"]),
            f"{r['ndcg@10']:.4f}",
            f"{r['recall@10']:.4f}",
            f"{r['rerank_ms']['p50']:.0f} / {r['rerank_ms']['p95']:.0f}",
            f"{r['total_ms']['p50']:.0f} / {r['total_ms']['p95']:.0f}",
        )
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
