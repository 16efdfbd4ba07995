"""Interleaved timing of paired systems over one query list: the protocol, not the statistics.

Why interleave: on a shared machine, running one system's queries and then the other's measures
the machine's moods as much as the systems (two back-to-back runs of the Haystack comparison gave
p50 ratios of 0.60x and 0.92x). Here every query runs through both systems of a pair back to back,
so a busy second hits both alike; which one goes first alternates from query to query and flips
from round to round (:func:`runs_first`), so neither always inherits the other's warm caches or
its leftover load; and the whole list is repeated ``rounds`` times. Warm-up steps (the first
``warmup`` queries, interleaved the same way) run first and are thrown away.

This module calls the systems through a :data:`Runner` and reads no clock itself: each system
times its own call (the peer in its own process), and the statistics live in
:mod:`~benchmarks.interleave_stats`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

Pair = tuple[str, str]
"""(ours, peer): the names of two systems compared with each other."""


@dataclass(frozen=True)
class Answer:
    """One system's answer to one query: its own measured time, its ranked document ids and,
    where the system reports them, its stages' times (ms by stage name)."""

    ms: float
    ranked: tuple[str, ...]
    stages: Mapping[str, float] = field(default_factory=dict)


Runner = Callable[[str, str], Answer]
"""``(system name, query text) -> Answer``: runs one query through one system."""


@dataclass(frozen=True)
class Step:
    """One call of the schedule: ``system`` answers query number ``query`` in ``round``
    (``round`` -1: warm-up)."""

    round: int
    query: int
    system: str


def runs_first(query: int, round_: int) -> int:
    """Which member of a pair goes first for query number ``query`` in round ``round_``: 0 (ours)
    or 1 (the peer). Alternates along the list and flips every round, so over an even number of
    rounds each query has each system first equally often, and within any round the two lead
    by turns (an even list length alone would give every query the same order each round)."""
    return (query + round_) % 2


def pair_order(pair: Pair, query: int, round_: int) -> Pair:
    """The pair in the order it runs for this query and round."""
    return pair if runs_first(query, round_) == 0 else (pair[1], pair[0])


def schedule(n_queries: int, pairs: Sequence[Pair], *, rounds: int, warmup: int) -> Iterator[Step]:
    """Every call, in order: the warm-up (round -1, the first ``warmup`` queries), then
    ``rounds`` passes over all ``n_queries``; per query, each pair in turn, its two systems back
    to back in :func:`pair_order`."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    passes = [(-1, range(min(warmup, n_queries)))] + [(r, range(n_queries)) for r in range(rounds)]
    for round_, queries in passes:
        for q in queries:
            for pair in pairs:
                for system in pair_order(pair, q, max(round_, 0)):
                    yield Step(round_, q, system)


@dataclass
class Timings:
    """What an interleaved run measured.

    ``ms[system][q]`` holds query ``q``'s times, one per round (the warm-up left out);
    ``ranked[system][q]`` its ranking from the first round; ``changed[system]`` counts queries
    whose ranking differed in a later round (approximate kNN can reorder a near tie);
    ``stages[system]``: each timed answer's stage times, in run order; ``load``: the machine's
    load average, sampled after each query's calls (warm-up included).
    """

    ms: dict[str, list[list[float]]]
    ranked: dict[str, list[tuple[str, ...]]]
    changed: dict[str, int]
    stages: dict[str, list[Mapping[str, float]]] = field(default_factory=dict)
    load: list[float] = field(default_factory=list)


def interleave(
    texts: Sequence[str],
    pairs: Sequence[Pair],
    run: Runner,
    *,
    rounds: int = 3,
    warmup: int = 20,
    load: Callable[[], float] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Timings:
    """Run ``texts`` through every system of ``pairs`` by :func:`schedule`; ``load`` (optional)
    is sampled after each query's calls (warm-up included), ``progress(done, total)`` after
    each timed query."""
    systems = [s for pair in pairs for s in pair]
    if len(set(systems)) != len(systems):
        raise ValueError(f"a system may appear in one pair only: {systems}")
    out = Timings(
        ms={s: [[] for _ in texts] for s in systems},
        ranked={s: [() for _ in texts] for s in systems},
        changed={s: 0 for s in systems},
        stages={s: [] for s in systems},
    )
    flagged: set[tuple[str, int]] = set()
    total, done = len(texts) * rounds, 0
    steps = schedule(len(texts), pairs, rounds=rounds, warmup=warmup)
    for (round_, _), group in groupby(steps, key=lambda s: (s.round, s.query)):
        for step in group:
            answer = run(step.system, texts[step.query])
            if round_ >= 0:
                _record(out, step, answer, flagged)
        if load is not None:
            out.load.append(load())
        if round_ >= 0:
            done += 1
            if progress is not None:
                progress(done, total)
    return out


def _record(out: Timings, step: Step, answer: Answer, flagged: set[tuple[str, int]]) -> None:
    out.ms[step.system][step.query].append(answer.ms)
    out.stages[step.system].append(answer.stages)
    if step.round == 0:
        out.ranked[step.system][step.query] = answer.ranked
    elif (
        answer.ranked != out.ranked[step.system][step.query]
        and (step.system, step.query) not in flagged
    ):
        flagged.add((step.system, step.query))
        out.changed[step.system] += 1
