"""Leave-one-collection-out (LOCO) selection of a default, and the paired tests behind it.

A default tuned on every collection looks best on those collections; what it is worth on the next
one shows only when the collection it is scored on had no say in choosing it. So, for each
collection in turn: pick a candidate on the others, score it on the held-out one, and record its
*loss* there (the best candidate's score on that collection minus the picked one's). The rule to
ship is the one whose worst held-out loss is smallest.

Everything here but :func:`paired_tests` is a pure function of a score table
``{candidate: {collection: score}}`` (mean nDCG@10 per collection, say).

Selection criteria (``criterion``):

- ``"mean"``: the highest mean score over the selection collections;
- ``"minimax"``: the smallest worst-case loss over them (each collection's best minus the
  candidate's score, the largest of those).

Ties (within ``TIE``) go to ``incumbent`` when it is among the tied, else to the candidate listed
first: a default changes only when a rival is strictly better on the evidence.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Table = Mapping[str, Mapping[str, float]]
"""{candidate: {collection: score}}."""
Criterion = Literal["mean", "minimax"]

TIE = 1e-9
"""Scores this close count as equal (float sums of the same values in another order)."""


@dataclass(frozen=True)
class Fold:
    """One held-out collection: what the others picked, and what it cost there."""

    held_out: str
    picked: str
    picked_score: float
    best: str
    best_score: float

    @property
    def loss(self) -> float:
        """The best candidate's score on the held-out collection minus the picked one's (>= 0)."""
        return self.best_score - self.picked_score


def losses(table: Table, collections: Sequence[str]) -> dict[str, dict[str, float]]:
    """``{candidate: {collection: best score there - candidate's score}}`` (in-sample regret)."""
    best = {c: max(row[c] for row in table.values()) for c in collections}
    return {name: {c: best[c] - row[c] for c in collections} for name, row in table.items()}


def worst_loss(table: Table, candidate: str, collections: Sequence[str]) -> float:
    """The largest loss of ``candidate`` against each collection's best, over ``collections``."""
    return max(losses(table, collections)[candidate].values())


def _merit(table: Table, collections: Sequence[str], criterion: Criterion) -> dict[str, float]:
    """Higher is better: the mean score, or minus the worst-case loss."""
    if criterion == "mean":
        return {n: sum(row[c] for c in collections) / len(collections) for n, row in table.items()}
    regret = losses(table, collections)
    return {n: -max(regret[n].values()) for n in table}


def pick(
    table: Table,
    collections: Sequence[str],
    *,
    criterion: Criterion = "mean",
    incumbent: str | None = None,
) -> str:
    """The candidate ``criterion`` prefers over ``collections`` (ties: see the module doc).

    >>> pick({"a": {"x": 0.5, "y": 0.7}, "b": {"x": 0.6, "y": 0.5}}, ["x", "y"])
    'a'

    Raises ValueError for an empty table or no collections.
    """
    if not table or not collections:
        raise ValueError("need at least one candidate and one collection to pick on")
    merit = _merit(table, collections, criterion)
    top = max(merit.values())
    tied = [n for n in table if merit[n] >= top - TIE]
    return incumbent if incumbent in tied else tied[0]


def loco(
    table: Table,
    collections: Sequence[str],
    *,
    criterion: Criterion = "mean",
    incumbent: str | None = None,
) -> list[Fold]:
    """One :class:`Fold` per collection: the candidate picked on all the others (by
    ``criterion``), scored on the held-out one. Raises ValueError for fewer than two
    collections."""
    if len(collections) < 2:
        raise ValueError("leave-one-out needs at least two collections")
    folds = []
    for held in collections:
        rest = [c for c in collections if c != held]
        chosen = pick(table, rest, criterion=criterion, incumbent=incumbent)
        best = pick(table, [held], incumbent=chosen)
        folds.append(Fold(held, chosen, table[chosen][held], best, table[best][held]))
    return folds


def worst_fold(folds: Sequence[Fold]) -> Fold:
    """The fold with the largest held-out loss (the first such)."""
    return max(folds, key=lambda f: f.loss)


def paired_tests(
    qrels: Mapping[str, Mapping[str, int]],
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    baseline: str,
    *,
    metric: str = "ndcg@10",
    stat_test: str = "student",
    n_permutations: int = 1000,
) -> dict[str, dict[str, Any]]:
    """``baseline`` against every other run on the same queries, through ``ranx.compare``:
    ``{other: {"delta": other - baseline, "p": p-value, "W"/"T"/"L": per-query wins, ties and
    losses of other}}``. ``stat_test``: ``student`` (paired t-test) or ``fisher`` (randomisation,
    ``n_permutations``, seed 42). Two runs equal on every query get p = 1.0 (the test itself
    answers nan there). Queries without a relevant document are left out, as
    :func:`~hybrid_es.evaluation.metrics.evaluate` leaves them."""
    from ranx import Qrels, Run, compare

    judged = {q: {d: int(g) for d, g in docs.items() if g > 0} for q, docs in qrels.items()}
    usable = {q: d for q, d in judged.items() if d}
    names = [baseline, *[n for n in runs if n != baseline]]
    ranx_runs = [
        Run({q: dict(runs[n].get(q, {})) or {"__none__": 0.0} for q in usable}, name=n)
        for n in names
    ]
    with warnings.catch_warnings():
        # runs equal on every query make the t statistic 0/0: scipy warns and answers nan
        warnings.simplefilter("ignore", RuntimeWarning)
        report = compare(
            Qrels(usable),
            ranx_runs,
            metrics=[metric],
            stat_test=stat_test,
            n_permutations=n_permutations,
            make_comparable=True,
            rounding_digits=6,
        ).to_dict()
    base = report[baseline]
    out: dict[str, dict[str, Any]] = {}
    for n in names[1:]:
        wtl = report[n]["win_tie_loss"][baseline][metric]
        p = float(base["comparisons"][n][metric])
        out[n] = {
            "delta": report[n]["scores"][metric] - base["scores"][metric],
            "p": 1.0 if math.isnan(p) else p,
            **{k: int(wtl[k]) for k in ("W", "T", "L")},
        }
    return out
