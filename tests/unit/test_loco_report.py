"""The leave-one-collection-out report over cached legs (evaluation.loco_report), end to end on
two tiny collections."""

from __future__ import annotations

from typing import Any

import pytest

from hybrid_es.evaluation import offline_fusion as O
from hybrid_es.evaluation.loco_report import loco_report

SPARSE = [["c1", "d1", 9.0], ["c2", "d2", 3.0], ["c3", "d3", 1.0]]
DENSE = [["c2", "d2", 0.9], ["c3", "d3", 0.5], ["c1", "d1", 0.4]]


def _col(name: str, relevant: str) -> dict[str, Any]:
    qids = [f"q{i}" for i in range(6)]
    return {
        "name": name,
        "unit": "doc",
        "embedder": "intfloat/multilingual-e5-small",
        "queries": dict.fromkeys(qids, "a question"),
        "qrels": {q: {relevant: 1} for q in qids},
        "legs": {q: {"bm25": SPARSE, "dense": DENSE} for q in qids},
    }


def test_report_scores_picks_and_tests_on_the_same_runs() -> None:
    # "sparse" is won by BM25's top (d1), "dense" by kNN's (d2).
    cands = {"bm25-ish": O.minmax(0.1), "dense-ish": O.minmax(0.9)}
    cols = [_col("sparse", "d1"), _col("dense", "d2")]
    rep = loco_report(cols, candidates=cands, incumbent="dense-ish")
    t = rep["table"]
    assert t["bm25-ish"]["sparse"] == pytest.approx(1.0)
    assert t["dense-ish"]["dense"] == pytest.approx(1.0)
    assert t[O.FLOOR]["dense"] == pytest.approx(1 / 1.5849625007211563)
    # each held-out collection gets the other one's winner, and loses by it
    folds = {f["held_out"]: f for f in rep["folds"]["mean"]}
    assert folds["sparse"]["picked"] == "dense-ish"
    assert folds["sparse"]["best"] == "bm25-ish"
    assert folds["sparse"]["loss"] == pytest.approx(1.0 - t["dense-ish"]["sparse"])
    assert rep["in_sample_loss"]["bm25-ish"]["sparse"] == 0.0
    assert rep["folds_fixed"] == rep["folds"]  # no per-query rule among these candidates
    default = rep["picked"]["mean"]
    # means: bm25-ish (1 + 1 / log2(3)) / 2, dense-ish (1 / 2 + 1) / 2, d1 third in its fusion
    assert default == "bm25-ish"
    assert t["dense-ish"]["sparse"] == pytest.approx(0.5)
    assert set(rep["tests"]) == {"bm25-ish", "dense-ish"}  # the pick and the incumbent
    other = loco_report(cols, candidates=cands, incumbent="bm25-ish")
    assert set(other["tests"]) == {"bm25-ish"}
    rivals = rep["tests"][default]["sparse"]["student"]
    assert default not in rivals
    assert set(rivals) == {*cands, O.FLOOR} - {default}
    assert set(rep["tests"][default]["dense"]) == {"student", "fisher"}
