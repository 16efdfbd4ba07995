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
``--json`` writes all of it. ``--loco`` prints instead the leave-one-collection-out selection of
the default among RRF and min-max linear fusion (``hybrid_es.evaluation.loco_report``): the
in-sample table, each held-out collection's pick and loss, and the paired tests (``ranx.compare``)
of the picked default against every rival on every collection. A collection in another script
than its embedder covers (MiniLM on Chinese) is the case the dense-leg script gate exists for:
the table shows both with and without.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import bench_client, bench_embedder, machine
from hybrid_es.evaluation import offline_fusion as O
from hybrid_es.evaluation.collection import EVAL_PRINCIPAL
from hybrid_es.evaluation.cookbook import is_cookbook, load_codebase
from hybrid_es.evaluation.loco_report import loco_report
from hybrid_es.ingest.beir import read_qrels, read_queries
from hybrid_es.models import RequestScope
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


CANDIDATES: dict[str, O.Fuser] = {
    "bm25": O.only(0),
    "dense": O.only(1),
    **{f"rrf k={k}": O.rrf(k) for k in (10, 20, 40, 60, 100)},
    **{
        f"rrf k=60 w={ws}/{wd}": O.rrf(60, ws, wd)
        for ws, wd in ((1.0, 0.5), (1.0, 0.7), (0.7, 1.0), (0.5, 1.0))
    },
    **{f"minmax a={a}": O.minmax(a) for a in (0.3, 0.4, 0.5, 0.6, 0.7)},
    "minmax a=spread": O.spread_weighted(),
    **{f"dbsf a={a}": O.dbsf(a) for a in (0.3, 0.4, 0.5, 0.6)},
}


def table(cols: Sequence[Mapping[str, Any]], *, gate: bool, metric: str) -> list[dict[str, Any]]:
    rows = []
    for name, fuse in CANDIDATES.items():
        per = {c["name"]: round(O.score(c, fuse, gate=gate, metric=metric), 4) for c in cols}
        rows.append({"fusion": name, **per})
    base = next(r for r in rows if r["fusion"] == "bm25")
    for r in rows:
        vals = [r[c["name"]] for c in cols]
        r["mean"] = round(sum(vals) / len(vals), 4)
        r["worst vs bm25"] = round(min(r[c["name"]] - base[c["name"]] for c in cols), 4)
    return rows


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def print_loco(rep: Mapping[str, Any]) -> None:
    """The LOCO report as Markdown tables (see ``hybrid_es.evaluation.loco_report``)."""
    names, t = rep["collections"], rep["table"]
    print(f"\n{rep['metric']}, in sample (loss: each collection's best candidate minus this)")
    print(_row(["fusion", *names, "mean", "worst loss", "worst vs bm25"]))
    print("|---" * (len(names) + 4) + "|")
    for n, row in t.items():
        loss = rep["in_sample_loss"].get(n)
        cells = [f"{row[c]:.4f}" for c in names] + [f"{sum(row.values()) / len(names):.4f}"]
        cells.append(f"{max(loss.values()):.4f}" if loss else "-")
        cells.append(f"{min(row[c] - t[O.FLOOR][c] for c in names):+.4f}")
        print(_row([n, *cells]))
    for key, crit in [(k, c) for k in ("folds", "folds_fixed") for c in rep[k]]:
        folds = rep[key][crit]
        among = "every candidate" if key == "folds" else "fixed settings only"
        print(f"\nleave one collection out, {among}, picked on the others by {crit}")
        print(_row(["held out", "picked on the others", "its score", "best there", "loss"]))
        print("|---" * 5 + "|")
        for f in folds:
            best = f"{f['best']} {f['best_score']:.4f}"
            print(
                _row(
                    [
                        f["held_out"],
                        f["picked"],
                        f"{f['picked_score']:.4f}",
                        best,
                        f"{f['loss']:.4f}",
                    ]
                )
            )
        print(f"worst held-out loss: {max(f['loss'] for f in folds):.4f}")
    print(f"\npicked on every collection: {rep['picked']}")
    for base, tests in rep["tests"].items():
        print(f"\npaired tests of {base} against each rival ({rep['metric']})")
        print(_row(["collection", "rival", "rival - base", "p t-test", "p Fisher", "W/T/L"]))
        print("|---" * 6 + "|")
        for c in names:
            st, fi = tests[c]["student"], tests[c]["fisher"]
            for rival, r in st.items():
                wtl = f"{r['W']}/{r['T']}/{r['L']}"
                p_f = fi[rival]["p"]
                print(_row([c, rival, f"{r['delta']:+.4f}", f"{r['p']:.4f}", f"{p_f:.4f}", wtl]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", required=True, help="name=dataset:embedder:index")
    ap.add_argument("--window", type=int, default=50, help="chunks per leg (rank_window_size)")
    ap.add_argument("--cache", type=Path, default=Path("reports/fusion-legs"))
    ap.add_argument("--metric", default="ndcg@10")
    ap.add_argument("--json", type=Path, help="write every table here")
    ap.add_argument("--loco", action="store_true", help="leave-one-collection-out and tests")
    args = ap.parse_args()
    cols = [fetch_legs(s, args.window, args.cache) for s in args.set]
    out: dict[str, Any] = {"machine": machine(), "metric": args.metric, "tables": {}}
    if args.loco:
        out["loco"] = loco_report(cols, metric=args.metric)
        print_loco(out["loco"])
    for gate in (False, True) if not args.loco else ():
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
