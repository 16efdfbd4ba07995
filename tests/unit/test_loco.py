"""Leave-one-collection-out selection (evaluation.loco): picks, ties, folds and their losses."""

from __future__ import annotations

import pytest

from hybrid_es.evaluation.loco import Fold, loco, losses, paired_tests, pick, worst_fold, worst_loss

# rrf wins x and y by a little, loses z by a lot; lin is steady.
TABLE = {
    "rrf": {"x": 0.60, "y": 0.50, "z": 0.30},
    "lin": {"x": 0.58, "y": 0.49, "z": 0.45},
    "bad": {"x": 0.10, "y": 0.10, "z": 0.10},
}
COLS = ["x", "y", "z"]


def test_pick_by_mean_and_by_minimax() -> None:
    assert pick(TABLE, ["x", "y"]) == "rrf"
    assert pick(TABLE, COLS) == "lin"  # mean (0.58 + 0.49 + 0.45) / 3 > (0.6 + 0.5 + 0.3) / 3
    # worst loss over x, y: rrf 0.0, lin 0.02
    assert pick(TABLE, ["x", "y"], criterion="minimax") == "rrf"
    # over all: rrf's worst is 0.45 - 0.30, lin's 0.60 - 0.58
    assert pick(TABLE, COLS, criterion="minimax") == "lin"


def test_ties_go_to_the_incumbent_then_to_the_first_listed() -> None:
    tied = {"a": {"x": 0.5}, "b": {"x": 0.5}, "c": {"x": 0.4}}
    assert pick(tied, ["x"]) == "a"
    assert pick(tied, ["x"], incumbent="b") == "b"
    assert pick(tied, ["x"], incumbent="c") == "a"  # the incumbent is not among the tied


def test_pick_refuses_an_empty_table_or_no_collections() -> None:
    with pytest.raises(ValueError):
        pick({}, ["x"])
    with pytest.raises(ValueError):
        pick(TABLE, [])


def test_losses_are_against_each_collections_best() -> None:
    got = losses(TABLE, COLS)
    assert got["rrf"] == pytest.approx({"x": 0.0, "y": 0.0, "z": 0.45 - 0.30})
    assert got["lin"] == pytest.approx({"x": 0.60 - 0.58, "y": 0.50 - 0.49, "z": 0.0})
    assert worst_loss(TABLE, "rrf", COLS) == pytest.approx(0.15)
    assert worst_loss(TABLE, "lin", COLS) == pytest.approx(0.02)


def test_loco_holds_each_collection_out_of_its_own_pick() -> None:
    folds = {f.held_out: f for f in loco(TABLE, COLS)}
    # z held out: picked on x and y, where rrf wins; it then loses 0.15 on z.
    assert folds["z"] == Fold("z", "rrf", 0.30, "lin", 0.45)
    assert folds["z"].loss == pytest.approx(0.45 - 0.30)
    # x held out: on y and z lin's mean (0.47) beats rrf's (0.40); on x it loses 0.02.
    assert folds["x"] == Fold("x", "lin", 0.58, "rrf", 0.60)
    assert folds["y"].picked == "lin"
    assert worst_fold(list(folds.values())).held_out == "z"


def test_loco_minimax_and_a_picked_candidate_that_is_also_best_loses_nothing() -> None:
    folds = {f.held_out: f for f in loco(TABLE, COLS, criterion="minimax")}
    assert folds["z"].picked == "rrf"  # on x and y rrf never loses
    assert folds["x"].picked == "lin"  # on y, z: rrf's worst 0.15, lin's 0.01
    same = {"a": {"x": 0.5, "y": 0.5}, "b": {"x": 0.5, "y": 0.4}}
    assert [f.loss for f in loco(same, ["x", "y"])] == [0.0, 0.0]
    # the best on a tied held-out collection is reported as the picked one
    assert loco(same, ["x", "y"], incumbent="b")[0] == Fold("x", "a", 0.5, "a", 0.5)


def test_loco_needs_two_collections() -> None:
    with pytest.raises(ValueError):
        loco(TABLE, ["x"])


def test_paired_tests_report_delta_p_and_wins() -> None:
    qrels = {f"q{i}": {"d1": 1} for i in range(8)}
    qrels["empty"] = {"d1": 0}  # no relevant document: left out
    good = {f"q{i}": {"d1": 2.0, "d2": 1.0} for i in range(8)}
    bad = {f"q{i}": {"d2": 2.0, "d1": 1.0} for i in range(8)}
    same = {q: dict(v) for q, v in good.items()}
    out = paired_tests(qrels, {"good": good, "bad": bad, "same": same}, "good")
    assert set(out) == {"bad", "same"}
    assert out["bad"]["delta"] == pytest.approx(1 / 1.5849625007211563 - 1.0, abs=1e-6)
    assert (out["bad"]["W"], out["bad"]["T"], out["bad"]["L"]) == (0, 0, 8)
    assert out["bad"]["p"] < 0.01
    assert out["same"]["delta"] == 0.0
    assert out["same"]["T"] == 8
    assert out["same"]["p"] == 1.0  # equal on every query: no difference, not nan
    fisher = paired_tests(qrels, {"good": good, "bad": bad}, "good", stat_test="fisher")
    assert fisher["bad"]["p"] < 0.05
