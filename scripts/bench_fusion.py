#!/usr/bin/env python
"""Fusion robustness across collections: one set of defaults, chosen by the mean and the worst case.

Each collection's two legs (BM25 and kNN, the top ``--window`` chunks of each with their scores)
are fetched once per judged query through the real searcher, against indices that `hybrid-es
eval` built, and cached as JSON. Every fusion candidate is then scored offline on exactly the same
legs, with the functions the searcher uses (``hybrid_es.retrieval.fusion``), so the comparison
isolates the fusion:

    python scripts/bench_fusion.py \\
        --set scifact=../shared/datasets/scifact:minilm:hybrid-es-chunks-eval-scifact-minilm \\
        --set cranfield=../shared/datasets/cranfield:minilm:hybrid-es-chunks-eval-cranfield-minilm

Prints nDCG@10 per collection and fusion, the mean, and the worst difference from BM25 alone;
``--json`` writes all of it. A collection in another script than its embedder covers (MiniLM on
Chinese) is the case the dense-leg script gate exists for: the table shows both with and without.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hybrid_es.evaluation.bench import bench_client, bench_embedder, machine
from hybrid_es.evaluation.collection import EVAL_PRINCIPAL
from hybrid_es.evaluation.cookbook import is_cookbook, load_codebase
from hybrid_es.evaluation.metrics import evaluate
from hybrid_es.ingest.beir import read_qrels, read_queries
from hybrid_es.models import RequestScope
from hybrid_es.retrieval import fusion as F
from hybrid_es.retrieval.analysis import dominant_script
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher

Leg = list[tuple[str, str, float]]
"""(chunk id, document id, score) in rank order."""


def fetch_legs(spec: str, window: int, cache: Path) -> dict[str, Any]:
    """The legs of every judged query of one collection (cached)."""
    name, rest = spec.split("=", 1)
    dataset, embedder_name, index = rest.split(":")
    path = cache / f"{name}.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    root = Path(dataset)
    if is_cookbook(root):
        queries, qrels = load_codebase(root, tenant="eval").as_judged()
        unit = "chunk"
    else:
        queries, qrels = read_queries(root), read_qrels(root, "test")
        unit = "doc"
    es = bench_client(install=False)
    emb = bench_embedder(embedder_name)
    params = RetrievalParams(window=window, num_candidates=max(100, window))
    legs: dict[str, dict[str, Leg]] = {}
    for pipeline in ("bm25", "dense"):
        s = HybridSearcher(
            es,
            emb,
            index=index,
            corpus_state_index="hybrid-es-corpus-state-eval",
            pipeline=pipeline,  # type: ignore[arg-type]
            params=params,
        )
        for qid in qrels:
            text = queries.get(qid, "")
            if not text.strip():
                continue
            r = s.search(text, EVAL_PRINCIPAL, RequestScope(), top_k=window, rerank=False)
            score = "sparse_score" if pipeline == "bm25" else "dense_score"
            legs.setdefault(qid, {})[pipeline] = [
                (h.chunk_id, h.doc_id, float(getattr(h, score) or 0.0)) for h in r.hits
            ]
    out = {
        "name": name,
        "unit": unit,
        "embedder": emb.model_id,
        "queries": {q: queries[q] for q in legs},
        "qrels": {q: dict(qrels[q]) for q in legs},
        "legs": legs,
    }
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


# -- the fusion candidates: each takes the two legs and returns fused chunk ids ---------------

Fuser = Callable[[Leg, Leg], list[str]]


def _ids(leg: Leg) -> list[str]:
    return [c for c, _, _ in leg]


def _scores(leg: Leg) -> dict[str, float]:
    return {c: s for c, _, s in leg}


def rrf(k: int, ws: float = 1.0, wd: float = 1.0) -> Fuser:
    def fuse(sparse: Leg, dense: Leg) -> list[str]:
        return [f.doc_id for f in F.rrf([_ids(sparse), _ids(dense)], k=k, weights=(ws, wd))]

    return fuse


def minmax(alpha: float) -> Fuser:
    def fuse(sparse: Leg, dense: Leg) -> list[str]:
        return [f.doc_id for f in F.hybrid_linear(_scores(sparse), _scores(dense), alpha)]

    return fuse


def dbsf(alpha: float) -> Fuser:
    def fuse(sparse: Leg, dense: Leg) -> list[str]:
        return [
            f.doc_id
            for f in F.linear(
                [_scores(sparse), _scores(dense)], [1 - alpha, alpha], normalization="dbsf"
            )
        ]

    return fuse


def only(which: int) -> Fuser:
    return lambda sparse, dense: _ids((sparse, dense)[which])


CANDIDATES: dict[str, Fuser] = {
    "bm25": only(0),
    "dense": only(1),
    **{f"rrf k={k}": rrf(k) for k in (10, 20, 40, 60, 100)},
    **{
        f"rrf k=60 w={ws}/{wd}": rrf(60, ws, wd)
        for ws, wd in ((1.0, 0.5), (1.0, 0.7), (0.7, 1.0), (0.5, 1.0))
    },
    **{f"minmax a={a}": minmax(a) for a in (0.3, 0.4, 0.5, 0.6, 0.7)},
    **{f"dbsf a={a}": dbsf(a) for a in (0.3, 0.4, 0.5, 0.6)},
}


def score(col: Mapping[str, Any], fuse: Fuser, *, gate: bool, metric: str) -> float:
    """``metric`` of ``fuse`` over a collection; ``gate`` drops the dense leg for a query whose
    script the embedder does not cover (MiniLM is English-only)."""
    english_only = "MiniLM" in col["embedder"]
    run: dict[str, dict[str, float]] = {}
    for qid, legs in col["legs"].items():
        sparse, dense = legs.get("bm25", []), legs.get("dense", [])
        if gate and english_only and dominant_script(col["queries"][qid]) == "cjk":
            dense = []
        doc_of = {c: d for c, d, _ in (*sparse, *dense)}
        ranked: dict[str, float] = {}
        fused = fuse([tuple(x) for x in sparse], [tuple(x) for x in dense])  # type: ignore[misc]
        for i, c in enumerate(fused[:100]):
            key = c if col["unit"] == "chunk" else doc_of[c]
            ranked.setdefault(key, float(1000 - i))
        run[qid] = ranked
    return evaluate(col["qrels"], run, (metric,)).scores[metric]


def table(cols: Sequence[Mapping[str, Any]], *, gate: bool, metric: str) -> list[dict[str, Any]]:
    rows = []
    for name, fuse in CANDIDATES.items():
        per = {c["name"]: round(score(c, fuse, gate=gate, metric=metric), 4) for c in cols}
        rows.append({"fusion": name, **per})
    base = next(r for r in rows if r["fusion"] == "bm25")
    for r in rows:
        vals = [r[c["name"]] for c in cols]
        r["mean"] = round(sum(vals) / len(vals), 4)
        r["worst vs bm25"] = round(min(r[c["name"]] - base[c["name"]] for c in cols), 4)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", required=True, help="name=dataset:embedder:index")
    ap.add_argument("--window", type=int, default=50, help="chunks per leg (rank_window_size)")
    ap.add_argument("--cache", type=Path, default=Path("reports/fusion-legs"))
    ap.add_argument("--metric", default="ndcg@10")
    ap.add_argument("--json", type=Path, help="write every table here")
    args = ap.parse_args()
    cols = [fetch_legs(s, args.window, args.cache) for s in args.set]
    out: dict[str, Any] = {"machine": machine(), "metric": args.metric, "tables": {}}
    for gate in (False, True):
        rows = table(cols, gate=gate, metric=args.metric)
        title = "dense leg gated by script" if gate else "no script gate"
        out["tables"][title] = rows
        names = [c["name"] for c in cols]
        print(f"\n{args.metric}, {title}")
        print("| fusion | " + " | ".join(names) + " | mean | worst vs bm25 |")
        print("|---" * (len(names) + 3) + "|")
        for r in rows:
            cells = [f"{r[n]:.4f}" for n in names] + [
                f"{r['mean']:.4f}",
                f"{r['worst vs bm25']:+.4f}",
            ]
            print(f"| {r['fusion']} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
