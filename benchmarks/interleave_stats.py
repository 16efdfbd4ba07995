"""Statistics of an interleaved run: percentiles and the paired bootstrap interval of their ratio.

A single ratio of two p50s says nothing about how far a second run may land from it. The
interval here answers that from one run: resample the *queries* with replacement (each carrying
all its rounds, for both systems at once: the pairing), recompute both systems' percentiles on
the resample and take their ratio; the 2.5th and 97.5th percentiles of those ratios bound the
95 % interval (the percentile bootstrap). Resampling queries, not single timings, keeps a query's
rounds together, and keeping the pair together cancels what a query costs both systems (a long
query is slow on both sides) from the ratio's spread.

Pure: numbers in, numbers out, a seeded generator, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

QUANTILES = (50.0, 95.0)


@dataclass(frozen=True)
class RatioInterval:
    """``ours / peer`` at one percentile of latency, with its bootstrap interval."""

    q: float
    """The percentile (50: the median)."""
    ours_ms: float
    peer_ms: float
    ratio: float
    """``ours_ms / peer_ms`` on all the queries (the point estimate)."""
    low: float
    high: float
    level: float = 0.95

    def as_dict(self) -> dict[str, float]:
        return {
            "q": self.q,
            "ours_ms": round(self.ours_ms, 2),
            "peer_ms": round(self.peer_ms, 2),
            "ratio": round(self.ratio, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "level": self.level,
        }


def as_matrix(times: Sequence[Sequence[float]]) -> NDArray[np.float64]:
    """Per-query times (one row per query, one column per round) as a 2-D array; every query
    must have the same number of rounds."""
    a = np.asarray(times, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"need a (queries x rounds) table of times, got shape {a.shape}")
    return a


def percentiles(times: Sequence[Sequence[float]], qs: Sequence[float] = QUANTILES) -> list[float]:
    """The ``qs`` percentiles of every timing (all queries, all rounds), linear between the
    closest ranks (numpy's default, and ``statistics.quantiles(method="inclusive")``)."""
    return [float(v) for v in np.percentile(as_matrix(times).ravel(), list(qs))]


def bootstrap_ratios(
    ours: Sequence[Sequence[float]],
    peer: Sequence[Sequence[float]],
    qs: Sequence[float] = QUANTILES,
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> NDArray[np.float64]:
    """``resamples`` bootstrap ratios per percentile, shape ``(len(qs), resamples)``: each
    resample draws query indices with replacement, one draw for both systems (paired), and
    divides ours' percentile over the drawn queries' rounds by the peer's."""
    a, b = as_matrix(ours), as_matrix(peer)
    if a.shape != b.shape:
        raise ValueError(f"paired tables differ in shape: ours {a.shape}, peer {b.shape}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    n = a.shape[0]
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    pa = np.percentile(a[idx].reshape(resamples, -1), list(qs), axis=1)
    pb = np.percentile(b[idx].reshape(resamples, -1), list(qs), axis=1)
    return np.asarray(pa / pb, dtype=np.float64)


def ratio_intervals(
    ours: Sequence[Sequence[float]],
    peer: Sequence[Sequence[float]],
    qs: Sequence[float] = QUANTILES,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[RatioInterval]:
    """``ours / peer`` at each percentile in ``qs``, with its paired percentile-bootstrap
    interval at ``level``."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    ratios = bootstrap_ratios(ours, peer, qs, resamples=resamples, seed=seed)
    tail = (1.0 - level) / 2 * 100
    lows, highs = np.percentile(ratios, [tail, 100 - tail], axis=1)
    out = []
    for i, (q, a, b) in enumerate(
        zip(qs, percentiles(ours, qs), percentiles(peer, qs), strict=True)
    ):
        out.append(RatioInterval(q, a, b, a / b, float(lows[i]), float(highs[i]), level))
    return out
