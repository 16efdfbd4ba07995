"""Whether a native fused answer equals the client fusion of the same two legs. Pure.

Equal means: the same ids in the same order, every fused score within ``tolerance`` of the
client's, and every hit's per-leg ranks the same. Ties are declared, not hidden: ids whose client
fused scores are within the tolerance of each other form a group, compared as a set (an engine
orders a tie its own way: OpenSearch 2.19 by a hash map over Lucene doc ids), and the last group
may be cut by the window's end, so its members are not compared (its scores are). The same rule
as ``tests/integration/test_native_fusion.py``, as a function that reports instead of asserting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TOLERANCE = 1e-6
"""Native and client fused scores may differ by this much: both are at most 1 (min-max) or
2/(k+1) (RRF), and the engines' float32 sums stay well below it (docs/opensearch.md)."""

Ranked = tuple[str, float, int | None, int | None]
"""One fused hit: its id, fused score, and ranks in the sparse and dense legs (None: absent)."""

MAX_PROBLEMS = 5
"""Differences listed per comparison (the count says how many there were)."""


@dataclass(frozen=True)
class Comparison:
    """The outcome of one comparison: what differs (empty: equal), the tie groups met, and the
    largest score difference seen."""

    problems: tuple[str, ...]
    ties: int
    largest: float

    @property
    def equal(self) -> bool:
        return not self.problems


def compare_fusion(
    native: Sequence[Ranked], client: Sequence[Ranked], tolerance: float = TOLERANCE
) -> Comparison:
    """Compare a native fused list with the client fusion of the same legs (both in fused
    order)."""
    problems: list[str] = []
    if len(native) != len(client):
        problems.append(f"{len(native)} native hits, {len(client)} client hits")
    a, b = list(native), list(client[: len(native)])
    ties, largest, i = 0, 0.0, 0
    while i < len(b):
        j = i
        while j + 1 < len(b) and abs(b[j + 1][1] - b[i][1]) <= tolerance:
            j += 1
        group_a, group_b = a[i : j + 1], b[i : j + 1]
        for x in group_a:
            largest = max(largest, abs(x[1] - b[i][1]))
            if abs(x[1] - b[i][1]) > tolerance:
                problems.append(f"rank {i + 1}: {x[0]} scored {x[1]!r} natively, {b[i][1]!r} here")
        ties += j > i
        if j + 1 < len(b):  # a whole group, not cut by the window's end: the same members
            problems += _group_problems(i, group_a, group_b)
        i = j + 1
    shown = problems[:MAX_PROBLEMS]
    if len(problems) > MAX_PROBLEMS:
        shown.append(f"and {len(problems) - MAX_PROBLEMS} more")
    return Comparison(tuple(shown), ties, largest)


def _group_problems(start: int, group_a: list[Ranked], group_b: list[Ranked]) -> list[str]:
    """What differs within one group of equal scores: its members, then their per-leg ranks."""
    ids_a, ids_b = {x[0] for x in group_a}, {y[0] for y in group_b}
    if ids_a != ids_b:
        where = f"rank {start + 1}" + (f"-{start + len(group_b)}" if len(group_b) > 1 else "")
        return [
            f"{where}: native {sorted(ids_a - ids_b)} where the client fusion has "
            f"{sorted(ids_b - ids_a)}"
        ]
    legs_b = {y[0]: y[2:] for y in group_b}
    return [
        f"{x[0]}: per-leg ranks {x[2:]} natively, {legs_b[x[0]]} from the legs"
        for x in group_a
        if x[2:] != legs_b[x[0]]
    ]
