"""The interleaving protocol (who runs first, what is recorded) and its statistics (percentiles,
the paired bootstrap interval of ours / peer), on hand-made numbers."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from benchmarks.interleave import (
    Answer,
    Step,
    interleave,
    pair_order,
    runs_first,
    schedule,
)
from benchmarks.interleave_stats import (
    bootstrap_ratios,
    percentiles,
    ratio_intervals,
)

PAIR = ("ours", "peer")


# --------------------------------------------------------------------------- alternation


def test_who_runs_first_alternates_along_the_list_and_flips_each_round() -> None:
    assert [[runs_first(q, r) for q in range(4)] for r in range(3)] == [
        [0, 1, 0, 1],
        [1, 0, 1, 0],
        [0, 1, 0, 1],
    ]


def test_an_even_list_still_flips_between_rounds() -> None:
    """A counter running on across rounds would give each query of an even-length list the same
    order every round; the flip is per round."""
    for q in range(6):
        assert pair_order(PAIR, q, 0) != pair_order(PAIR, q, 1)


def test_the_schedule_runs_warm_up_then_rounds_each_pair_back_to_back() -> None:
    steps = list(schedule(2, [PAIR], rounds=2, warmup=1))
    assert steps == [
        Step(-1, 0, "ours"),
        Step(-1, 0, "peer"),
        Step(0, 0, "ours"),
        Step(0, 0, "peer"),
        Step(0, 1, "peer"),
        Step(0, 1, "ours"),
        Step(1, 0, "peer"),
        Step(1, 0, "ours"),
        Step(1, 1, "ours"),
        Step(1, 1, "peer"),
    ]


def test_over_two_rounds_each_query_has_each_system_first_once() -> None:
    firsts: dict[int, list[str]] = {}
    steps = list(schedule(5, [PAIR], rounds=2, warmup=0))
    for i in range(0, len(steps), 2):
        firsts.setdefault(steps[i].query, []).append(steps[i].system)
    assert all(sorted(f) == ["ours", "peer"] for f in firsts.values())
    assert len(firsts) == 5


def test_two_pairs_run_in_turn_each_in_its_own_alternation() -> None:
    pairs = [PAIR, ("ours+rr", "peer+rr")]
    steps = [s.system for s in schedule(2, pairs, rounds=1, warmup=0)]
    assert steps == ["ours", "peer", "ours+rr", "peer+rr", "peer", "ours", "peer+rr", "ours+rr"]


def test_the_warm_up_is_cut_to_the_list_and_rounds_must_be_positive() -> None:
    assert len([s for s in schedule(2, [PAIR], rounds=1, warmup=10) if s.round < 0]) == 4
    with pytest.raises(ValueError, match="rounds"):
        list(schedule(2, [PAIR], rounds=0, warmup=0))


# --------------------------------------------------------------------------- the loop


def test_interleave_records_timed_rounds_only_and_counts_changed_rankings() -> None:
    calls: list[tuple[str, str]] = []

    def run(system: str, text: str) -> Answer:
        calls.append((system, text))
        n = sum(1 for c in calls if c == (system, text))
        ranked = ("d2", "d1") if system == "peer" and text == "b" and n == 4 else ("d1", "d2")
        return Answer(float(n), ranked, {"stage": 1.0})

    loads = iter(float(i) for i in range(100))
    seen: list[tuple[int, int]] = []
    t = interleave(
        ["a", "b"],
        [PAIR],
        run,
        rounds=3,
        warmup=2,
        load=lambda: next(loads),
        progress=lambda d, n: seen.append((d, n)),
    )
    # the warm-up answers (the first call of each query) are not recorded
    assert t.ms == {"ours": [[2.0, 3.0, 4.0]] * 2, "peer": [[2.0, 3.0, 4.0]] * 2}
    assert t.ranked["peer"] == [("d1", "d2"), ("d1", "d2")]
    assert t.changed == {"ours": 0, "peer": 1}
    assert len(t.stages["ours"]) == 6
    assert t.load == [float(i) for i in range(2 + 2 * 3)]  # once per query, warm-up included
    assert seen == [(i, 6) for i in range(1, 7)]


def test_a_system_may_sit_in_one_pair_only() -> None:
    with pytest.raises(ValueError, match="one pair"):
        interleave(["a"], [PAIR, ("ours", "x")], lambda s, t: Answer(1.0, ()))


# --------------------------------------------------------------------------- statistics


def test_percentiles_are_linear_between_closest_ranks() -> None:
    times = [[1.0, 7.0], [3.0, 20.0], [5.0, 2.0]]
    flat = [1.0, 7.0, 3.0, 20.0, 5.0, 2.0]
    q = statistics.quantiles(flat, n=100, method="inclusive")
    assert percentiles(times) == pytest.approx([q[49], q[94]])


def test_each_bootstrap_ratio_is_a_ratio_of_a_resample_of_whole_queries() -> None:
    """Two queries, one round: a resample is {q0, q0}, {q0, q1} or {q1, q1}; ours' p50 is then
    1, (1 + 4) / 2 or 4, the peer's always 2."""
    ratios = bootstrap_ratios([[1.0], [4.0]], [[2.0], [2.0]], (50.0,), resamples=400, seed=3)
    assert set(np.round(ratios[0], 9)) == {1 / 2, (1 + 4) / 2 / 2, 4 / 2}


def test_a_constant_factor_gives_a_degenerate_interval() -> None:
    rng = np.random.default_rng(1)
    peer = rng.uniform(10, 500, size=(50, 3))
    p50, p95 = ratio_intervals(0.5 * peer, peer, resamples=300)
    for r in (p50, p95):
        assert r.ratio == pytest.approx(0.5)
        assert r.low == pytest.approx(0.5) and r.high == pytest.approx(0.5)


def test_the_interval_is_the_bootstrap_ratios_central_share() -> None:
    rng = np.random.default_rng(2)
    ours, peer = rng.uniform(20, 60, size=(40, 3)), rng.uniform(30, 90, size=(40, 3))
    ratios = bootstrap_ratios(ours, peer, resamples=500, seed=7)
    p50, p95 = ratio_intervals(ours, peer, level=0.9, resamples=500, seed=7)
    assert (p50.low, p50.high) == pytest.approx(tuple(np.percentile(ratios[0], [5, 95])))
    assert (p95.low, p95.high) == pytest.approx(tuple(np.percentile(ratios[1], [5, 95])))
    assert p50.ratio == pytest.approx(float(np.median(ours)) / float(np.median(peer)))
    assert p50.low <= p50.ratio <= p50.high


def test_pairing_cancels_what_a_query_costs_both_systems() -> None:
    """Queries whose cost varies 100-fold, ours 0.8x the peer's on each up to 2 % noise: the
    paired interval is tight around 0.8; break the pairing (shuffle ours' queries) and the same
    numbers give a far wider one."""
    rng = np.random.default_rng(4)
    cost = rng.uniform(5, 500, size=(200, 1))
    peer = cost * rng.uniform(0.99, 1.01, size=(200, 3))
    ours = 0.8 * cost * rng.uniform(0.99, 1.01, size=(200, 3))
    paired, _ = ratio_intervals(ours, peer, resamples=1000)
    unpaired, _ = ratio_intervals(rng.permutation(ours), peer, resamples=1000)
    assert 0.78 < paired.low <= paired.ratio <= paired.high < 0.82
    assert (unpaired.high - unpaired.low) > 5 * (paired.high - paired.low)


def test_the_bootstrap_is_seeded_and_checks_its_input() -> None:
    ours, peer = [[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]], [[2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]
    assert ratio_intervals(ours, peer, seed=5) == ratio_intervals(ours, peer, seed=5)
    with pytest.raises(ValueError, match="shape"):
        bootstrap_ratios(ours, peer[:2])
    with pytest.raises(ValueError, match="queries x rounds"):
        percentiles([])
    with pytest.raises(ValueError, match="level"):
        ratio_intervals(ours, peer, level=1.0)
