"""The leave-one-collection-out report over cached legs: in-sample table, folds, worst-case
losses and the paired tests of the comparisons that decide the default.

Built from :mod:`hybrid_es.evaluation.offline_fusion` (the runs) and
:mod:`hybrid_es.evaluation.loco` (the selection); ``scripts/bench_fusion.py --loco`` prints it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from hybrid_es.evaluation import offline_fusion as O
from hybrid_es.evaluation.loco import Criterion, loco, losses, paired_tests, pick
from hybrid_es.evaluation.metrics import evaluate

STAT_TESTS = ("student", "fisher")
"""Paired t-test and Fisher's randomisation test (ranx names)."""


def _folds(
    table: Mapping[str, Mapping[str, float]], names: Sequence[str], incumbent: str
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    criterion: Criterion
    for criterion in ("mean", "minimax"):
        folds = loco(table, names, criterion=criterion, incumbent=incumbent)
        out[criterion] = [{**asdict(f), "loss": f.loss} for f in folds]
    return out


def loco_report(
    cols: Sequence[Mapping[str, Any]],
    *,
    candidates: Mapping[str, O.Fuser] | None = None,
    metric: str = "ndcg@10",
    n_permutations: int = 1000,
    incumbent: str = O.INCUMBENT,
) -> dict[str, Any]:
    """Everything the LOCO section of the evaluation shows, as one JSON-ready dict:

    - ``table``: ``{candidate or "bm25": {collection: metric}}`` (the script gate on);
    - ``in_sample_loss``: each candidate's loss against each collection's best candidate;
    - ``folds``: per criterion (``mean``, ``minimax``), one fold per held-out collection;
      ``folds_fixed`` the same with the fixed settings only (no per-query rule);
    - ``picked``: the candidate each criterion picks on every collection at once;
    - ``tests``: per baseline (the candidate the mean picks on every collection, and
      ``incumbent``, today's default, which also keeps a tie), per collection and stat test: the
      baseline against every other candidate and BM25 (delta, p-value, wins/ties/losses).
    """
    candidates = candidates or O.LOCO_CANDIDATES
    names = [str(c["name"]) for c in cols]
    runs = {
        str(c["name"]): {
            n: O.fused_run(c, f) for n, f in {**candidates, O.FLOOR: O.only(0)}.items()
        }
        for c in cols
    }
    full = {
        n: {
            c: evaluate(col["qrels"], runs[c][n], (metric,)).scores[metric]
            for c, col in zip(names, cols, strict=True)
        }
        for n in (*candidates, O.FLOOR)
    }
    table = {n: full[n] for n in candidates}
    fixed = {n: row for n, row in table.items() if n not in O.PER_QUERY_RULES}
    picked = {
        crit: pick(table, names, criterion=crit, incumbent=incumbent)
        for crit in ("mean", "minimax")
    }
    tests = {
        base: {
            c: {
                t: paired_tests(
                    col["qrels"],
                    runs[c],
                    base,
                    metric=metric,
                    stat_test=t,
                    n_permutations=n_permutations,
                )
                for t in STAT_TESTS
            }
            for c, col in zip(names, cols, strict=True)
        }
        for base in dict.fromkeys(b for b in (picked["mean"], incumbent) if b in candidates)
    }
    return {
        "metric": metric,
        "collections": names,
        "queries": {c: len(col["legs"]) for c, col in zip(names, cols, strict=True)},
        "table": full,
        "in_sample_loss": losses(table, names),
        "folds": _folds(table, names, incumbent),
        "folds_fixed": _folds(fixed, names, incumbent) if fixed else {},
        "picked": picked,
        "incumbent": incumbent,
        "tests": tests,
    }
