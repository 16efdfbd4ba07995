#!/usr/bin/env python
"""Traditional and Simplified Chinese across each other: nDCG@10 with script folding on and off.

A BEIR-layout Chinese collection (XQuAD-zh: Simplified) is converted with OpenCC, the converter
the folding uses (``hybrid_es.text.folding``): its corpus to Traditional (``s2t``) and to
Taiwan's standard forms and vocabulary (``s2twp``), its questions likewise. Each corpus is
ingested into an index of its own, once with folding (today's ingest) and once without (the
fold replaced by the identity at ingest and at query time, as before issue 26), and each
question set is run over it through the real searcher::

    eval "$(scripts/es.sh env)"
    python scripts/bench_scripts_zh.py ../shared/datasets/xquad_zh_paragraph --json scripts-zh.json

Prints one table: corpus script, question script, pipeline, nDCG@10 and Recall@10 with folding
off and on. ``bm25`` is the BM25 leg alone; ``linear`` the default pipeline (with MiniLM, an
English model, the dense leg's script gate answers a Chinese question from BM25 alone: pass
``--embedder e5`` for a multilingual dense leg, which embeds the raw question in its script).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opencc import OpenCC

from benchmarks.bench import (
    bench_client,
    bench_embedder,
    engine_line,
    machine,
    print_rows,
)
from hybrid_es.evaluation.collection import EVAL_TENANT, Collection, ingest_collection
from hybrid_es.evaluation.runner import run_pipeline
from hybrid_es.ingest.beir import read_corpus, read_qrels, read_queries
from hybrid_es.text.analysis import ANALYSIS_VERSION

SCRIPTS = {"hans": None, "hant": "s2t", "twp": "s2twp"}
"""Script label -> the OpenCC configuration that makes it from the Simplified original."""
RUNS: tuple[tuple[str, str], ...] = (
    ("hans", "hans"),
    ("hans", "hant"),
    ("hans", "twp"),
    ("hant", "hans"),
    ("hant", "hant"),
    ("twp", "hans"),
    ("twp", "twp"),
)
"""(corpus script, question script) pairs measured."""
PIPELINES = {"bm25": ("bm25", "rrf"), "linear": ("hybrid", "linear")}


def converter(script: str) -> Callable[[str], str]:
    config = SCRIPTS[script]
    if config is None:
        return lambda text: text
    return OpenCC(config).convert


@contextlib.contextmanager
def folding(on: bool) -> Iterator[None]:
    """Folding as shipped, or replaced by the identity where the chunks and the BM25 leg call it
    (the matched copies then hold the text as written: the behaviour before issue 26)."""
    if on:
        yield
        return
    with (
        mock.patch("hybrid_es.ingest.plan.fold_for_matching", lambda t: t),
        mock.patch("hybrid_es.retrieval.queries.fold_for_matching", lambda t: t),
    ):
        yield


def ingest(es: Any, emb: Any, dataset: Path, script: str, fold: bool, prefix: str) -> Collection:
    convert = converter(script)
    docs = [
        d.model_copy(update={"title": convert(d.title), "body": convert(d.body)})
        for d in read_corpus(dataset, tenant=EVAL_TENANT)
    ]
    index = f"{prefix}-{script}-fold-{'on' if fold else 'off'}"
    with folding(fold):
        return ingest_collection(
            es,
            emb,
            dataset,
            index=index,
            state_index="hybrid-es-corpus-state-eval",
            url=es.url,
            docs=docs,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--pipelines", default="bm25,linear")
    ap.add_argument("--folding", default="off,on", help="off, on, or both (the default)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    es = bench_client()
    emb = bench_embedder(args.embedder)
    queries = read_queries(args.dataset)
    qrels = read_qrels(args.dataset, "test")
    asked = {s: {q: converter(s)(t) for q, t in queries.items()} for s in SCRIPTS}
    prefix = f"hybrid-es-chunks-eval-scripts-zh-{args.embedder}"
    rows: list[dict[str, Any]] = []
    folds = [f == "on" for f in args.folding.split(",")]
    for fold in folds:
        cols = {s: ingest(es, emb, args.dataset, s, fold, prefix) for s in SCRIPTS}
        for corpus, asking in RUNS:
            for label in args.pipelines.split(","):
                pipeline, method = PIPELINES[label]
                searcher = cols[corpus].searcher(pipeline=pipeline, fusion_method=method)
                with folding(fold):
                    r = run_pipeline(label, searcher, asked[asking], qrels)
                rows.append(
                    {
                        "corpus": corpus,
                        "questions": asking,
                        "pipeline": label,
                        "folding": "on" if fold else "off",
                        "ndcg@10": round(r.metrics["ndcg@10"], 4),
                        "recall@10": round(r.metrics["recall@10"], 4),
                        "queries": r.queries,
                        "fusion_paths": r.fusion_paths,
                    }
                )
                print(f"{rows[-1]}", file=sys.stderr)
    by = {(r["corpus"], r["questions"], r["pipeline"], r["folding"]): r for r in rows}
    table = [
        {
            "corpus": corpus,
            "questions": asking,
            "pipeline": label,
            **{
                f"{metric} {fold}": by[corpus, asking, label, fold][key]
                for metric, key in (("nDCG@10", "ndcg@10"), ("R@10", "recall@10"))
                for fold in args.folding.split(",")
            },
        }
        for corpus, asking in RUNS
        for label in args.pipelines.split(",")
    ]
    m = machine(es)
    print_rows(f"{args.dataset.name}, {engine_line(m)}, embedder {emb.model_id}", table)
    if args.json:
        out = {
            "command": " ".join(sys.argv),
            "machine": m,
            "embedder": emb.model_id,
            "analysis_version": ANALYSIS_VERSION,
            "rows": rows,
        }
        args.json.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
