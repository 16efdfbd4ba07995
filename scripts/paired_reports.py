#!/usr/bin/env python
"""Two evaluation reports of one collection, paired query by query: for each pipeline both hold,
the metric of each, the difference, and the p-values of a paired t-test and of Fisher's
randomisation test (``evaluation.loco.paired_tests``, ranx underneath).

The reports are ``hybrid-es eval DATASET --report DIR`` folders (their ``runs.json``). An
example, int8 question and passage vectors against float32 on the same collection::

    hybrid-es eval ../shared/datasets/cranfield --report /tmp/cf-fp32
    HYBRID_ES_EMBED_RUNTIME=onnx-int8 hybrid-es eval ../shared/datasets/cranfield \\
        --report /tmp/cf-int8
    python scripts/paired_reports.py ../shared/datasets/cranfield /tmp/cf-fp32 /tmp/cf-int8

The judgements come from the collection (a BEIR folder, or the cookbook's: its golden chunks).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import print_rows
from hybrid_es.evaluation.loco import paired_tests
from hybrid_es.evaluation.loco_report import STAT_TESTS
from hybrid_es.evaluation.metrics import evaluate
from hybrid_es.evaluation.run import EvalRequest, read_judged


def _runs(folder: Path) -> tuple[str, dict[str, dict[str, dict[str, float]]]]:
    path = folder / "runs.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: write the report with `hybrid-es eval ... --report`")
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["split"], data["runs"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset", type=Path, help="the collection both reports evaluated")
    p.add_argument("base", type=Path, help="report folder of the baseline")
    p.add_argument("other", type=Path, help="report folder compared with it")
    p.add_argument(
        "--metric", default="ndcg@10", help="ranx metric (the cookbook's Pass@10 is recall@10)"
    )
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    split, base = _runs(args.base)
    other_split, other = _runs(args.other)
    if split != other_split:
        raise SystemExit(f"the reports judged different splits ({split} and {other_split})")
    metric = args.metric
    qrels = read_judged(EvalRequest(dataset=args.dataset, split=split)).qrels
    rows = []
    for name in [n for n in base if n in other]:
        tests = {
            t: paired_tests(
                qrels,
                {"base": base[name], "other": other[name]},
                "base",
                metric=metric,
                stat_test=t,
            )["other"]
            for t in STAT_TESTS
        }
        score = {
            side: evaluate(qrels, runs[name], (metric,)).scores[metric]
            for side, runs in (("base", base), ("other", other))
        }
        rows.append(
            {
                "pipeline": name,
                f"base {metric}": round(score["base"], 4),
                f"other {metric}": round(score["other"], 4),
                "delta": round(tests["student"]["delta"], 4),
                "p (t-test)": round(tests["student"]["p"], 3),
                "p (Fisher)": round(tests["fisher"]["p"], 3),
                "W/T/L": "/".join(str(tests["student"][k]) for k in ("W", "T", "L")),
            }
        )
    if not rows:
        raise SystemExit("the reports share no pipeline")
    if args.json:
        print(json.dumps({"dataset": str(args.dataset), "metric": metric, "rows": rows}, indent=2))
    else:
        print_rows(f"{args.dataset.name}: {args.other} against {args.base}", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
