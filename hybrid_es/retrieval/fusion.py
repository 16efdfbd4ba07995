"""Rank fusion as pure functions.

Reciprocal rank fusion (Cormack et al. 2009), as the brief specifies:
``RRF(d) = sum over lists containing d of 1 / (k + rank)``, ranks 1-based, ``k = 60`` by default,
documents absent from a list contribute 0. Ties are broken by id (ascending) so the output never
depends on input order or hash seeds. The same function fuses the client-side path and checks the
native path.

Min-max linear fusion (seed 002's alternative): each list's scores are scaled to [0, 1]
(``(s - min) / (max - min)``, a list whose scores are all equal maps to 1.0), the list's minimum
is raised to ``LIST_FLOOR`` (0.001) so that the last document of a list still beats one absent
from it, absent documents contribute 0, and the result is the weighted arithmetic mean. This is
OpenSearch's ``normalization-processor`` (``min_max`` + ``arithmetic_mean``) to the letter, so the
client path and the native one give the same scores (neural-search 2.19
``MinMaxScoreNormalizationTechnique``, ``ArithmeticMeanScoreCombinationTechnique``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

DEFAULT_RANK_CONSTANT = 60
DEFAULT_METHOD: Literal["rrf", "linear"] = "linear"
SPREAD: Final = "spread"
Alpha = float | Literal["spread"]
"""The dense leg's weight in linear fusion: a number in [0, 1], or ``"spread"``, a weight chosen
per query from the legs' own scores (:func:`spread_alpha`)."""
DEFAULT_ALPHA: Alpha = SPREAD
"""The default fusion: min-max linear with the dense leg's weight chosen per query by
:func:`spread_alpha`. Chosen by leave-one-collection-out over every collection in
../shared/datasets (``scripts/bench_fusion.py --loco``; docs/evaluation.md, "Defaults that
generalise"): it has the smallest worst-case loss against the best of RRF and fixed weights
0.3-0.7 (0.0056), the best mean, is never below BM25, and has no parameter tuned on a collection.
A fixed weight chosen on the other collections lost up to 0.035 on the one left out."""
FIXED_ALPHA = 0.4
"""The fixed weight where one must be fixed before the legs' scores are seen (engine-side fusion,
``verify``'s native-versus-client check): the fixed weight with the smallest in-sample worst loss
(0.0097) in the same table."""
MIN_SPREAD_HITS = 5
"""Hits a leg needs before the spread rule reads its margin: one hit has none (and a lone BM25
hit is a strong answer, not a flat one); two always have a margin of exactly 1.0, so two 2-hit
legs in opposite orders would tie; n hits can show at most sqrt(n - 1)."""
LIST_FLOOR = 0.001
"""The scaled score of a list's minimum in linear fusion (OpenSearch's ``MIN_SCORE``)."""


@dataclass(frozen=True)
class Fused:
    """A fused document: its id, fused score and its 1-based rank in each input list."""

    doc_id: str
    score: float
    ranks: tuple[int | None, ...]


def _check_unique(ids: Sequence[str], which: int) -> None:
    seen: set[str] = set()
    for doc in ids:
        if doc in seen:
            raise ValueError(
                f"list {which} contains {doc!r} more than once; a ranking lists each document once"
            )
        seen.add(doc)


def rrf(
    rankings: Sequence[Sequence[str]],
    k: float = DEFAULT_RANK_CONSTANT,
    weights: Sequence[float] | None = None,
) -> list[Fused]:
    """Fuse ranked id lists by reciprocal rank fusion; ``weights`` (one per list, default all
    1.0) make it weighted RRF: ``sum of w_i / (k + rank_i)``.

    >>> [(f.doc_id, round(f.score, 6)) for f in rrf([["a", "b"], ["b", "c"]])]
    [('b', 0.032522), ('a', 0.016393), ('c', 0.016129)]

    Raises ValueError for a negative or non-finite ``k``, bad weights, or a duplicate id within
    one list.
    """
    if not isinstance(k, int | float) or not math.isfinite(k) or k < 0:
        raise ValueError(f"rank constant k must be a finite number >= 0, got {k!r}")
    w = [1.0] * len(rankings) if weights is None else _check_weights(weights, len(rankings))
    ranks: dict[str, list[int | None]] = {}
    for i, ids in enumerate(rankings):
        _check_unique(ids, i)
        for rank, doc in enumerate(ids, start=1):
            ranks.setdefault(doc, [None] * len(rankings))[i] = rank
    fused = [
        # fsum is exactly rounded, so equal rank multisets give bit-equal scores in any list order
        Fused(
            doc,
            math.fsum(wi / (k + r) for wi, r in zip(w, rs, strict=True) if r is not None),
            tuple(rs),
        )
        for doc, rs in ranks.items()
    ]
    fused.sort(key=lambda f: (-f.score, f.doc_id))
    return fused


def _check_weights(weights: Sequence[float], lists: int) -> list[float]:
    if len(weights) != lists:
        raise ValueError(f"{lists} score lists but {len(weights)} weights")
    if any(not math.isfinite(w) or w < 0 for w in weights) or not any(weights):
        raise ValueError(f"weights must be finite, >= 0 and not all zero, got {list(weights)}")
    return [float(w) for w in weights]


def dbsf(scores: Mapping[str, float], floor: float = 0.0) -> dict[str, float]:
    """Distribution-based score normalisation (Qdrant's DBSF): ``mean +- 3 sd`` of the list maps
    to [0, 1], clipped; a list of equal scores maps to 1.0. A flat list (a leg that cannot tell
    its results apart) stays bunched in the middle instead of being stretched to [0, 1] as
    min-max stretches it. Scores that clip to 0 become ``floor``."""
    if not scores:
        return {}
    vals = list(scores.values())
    mean = math.fsum(vals) / len(vals)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / len(vals))
    if sd == 0.0:
        return dict.fromkeys(scores, 1.0)
    lo = mean - 3 * sd
    return {d: min(1.0, max(0.0, (s - lo) / (6 * sd))) or floor for d, s in scores.items()}


def minmax(scores: Mapping[str, float], floor: float = 0.0) -> dict[str, float]:
    """Scale scores to [0, 1]; all-equal scores map to 1.0; an empty mapping stays empty. The
    minimum (the only score that scales to exactly 0) becomes ``floor``."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi == lo:
        return dict.fromkeys(scores, 1.0)
    return {d: ((s - lo) / (hi - lo)) or floor for d, s in scores.items()}


def linear(
    score_lists: Sequence[Mapping[str, float]],
    weights: Sequence[float],
    normalization: Literal["minmax", "dbsf"] = "minmax",
) -> list[Fused]:
    """Weighted mean of normalised scores (min-max by default, or :func:`dbsf`; each list's
    lowest at ``LIST_FLOOR``, absent documents at 0 with their weight counted); ``ranks`` are
    each list's 1-based ranks.

    Raises ValueError when weights and lists differ in number, or a weight is negative or
    non-finite, or all weights are zero.
    """
    _check_weights(weights, len(score_lists))
    scale = minmax if normalization == "minmax" else dbsf
    norm = [scale(s, LIST_FLOOR) for s in score_lists]
    total = math.fsum(weights)
    rank_of = [
        {d: r for r, (d, _) in enumerate(sorted(s.items(), key=lambda x: (-x[1], x[0])), 1)}
        for s in score_lists
    ]
    docs = sorted({d for s in score_lists for d in s})
    if len(norm) == 2:
        fused = _linear_two(docs, weights, norm, rank_of, total)
    else:
        fused = [
            Fused(
                d,
                math.fsum(w * n.get(d, 0.0) for w, n in zip(weights, norm, strict=True)) / total,
                tuple(r.get(d) for r in rank_of),
            )
            for d in docs
        ]
    fused.sort(key=lambda f: (-f.score, f.doc_id))
    return fused


def _linear_two(
    docs: Sequence[str],
    weights: Sequence[float],
    norm: Sequence[Mapping[str, float]],
    rank_of: Sequence[Mapping[str, int]],
    total: float,
) -> list[Fused]:
    """:func:`linear`'s scores for two lists (every search's case), written out: one IEEE
    addition of two terms is correctly rounded, as ``math.fsum`` of them is, so the scores are
    the general path's to the last bit, without a generator and an ``fsum`` per document."""
    (w0, w1), (n0, n1), (r0, r1) = weights, norm, rank_of
    return [
        Fused(d, (w0 * n0.get(d, 0.0) + w1 * n1.get(d, 0.0)) / total, (r0.get(d), r1.get(d)))
        for d in docs
    ]


def top_margin(scores: Sequence[float]) -> float:
    """How far a list's best score stands above the rest of it, in standard deviations:
    ``(max - mean) / sd``; 0 for fewer than two scores or all equal. Scale-free, so a BM25 leg
    (unbounded scores) and a cosine leg compare.

    >>> round(top_margin([3.0, 1.0, 1.0, 1.0]), 4)
    1.7321
    """
    if len(scores) < 2:
        return 0.0
    mean = math.fsum(scores) / len(scores)
    sd = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))
    return 0.0 if sd == 0.0 else (max(scores) - mean) / sd


def spread_alpha(sparse: Iterable[float], dense: Iterable[float]) -> float:
    """The per-query dense weight of the ``spread`` rule: each leg's :func:`top_margin` as a
    share of both, so the leg whose top hit stands further above its own list counts for more;
    0.5 when neither stands out. A leg of fewer than :data:`MIN_SPREAD_HITS` hits has too few
    scores for its spread to mean anything: :data:`FIXED_ALPHA` then. No leg of the shared
    collections' judged queries is that short (22 hits at least), so the leave-one-collection-out
    figures hold."""
    s, d = list(sparse), list(dense)
    if len(s) < MIN_SPREAD_HITS or len(d) < MIN_SPREAD_HITS:
        return FIXED_ALPHA
    ms, md = top_margin(s), top_margin(d)
    return 0.5 if ms + md == 0.0 else md / (ms + md)


def check_alpha(alpha: Alpha) -> Alpha:
    """``alpha`` itself when it is ``"spread"`` or a number in [0, 1]; ValueError otherwise."""
    if alpha == SPREAD:
        return alpha
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise ValueError(f"alpha must be a number in [0, 1] or {SPREAD!r}, got {alpha!r}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1] (or be {SPREAD!r}), got {alpha}")
    return float(alpha)


def parse_alpha(text: str) -> Alpha:
    """``"spread"`` or a number in [0, 1] from text (a command-line option); ValueError naming
    what is accepted otherwise."""
    if text.strip().lower() == SPREAD:
        return SPREAD
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"alpha must be {SPREAD!r} or a number in [0, 1], got {text!r}") from None
    return check_alpha(value)


def dense_weight(alpha: Alpha, sparse: Mapping[str, float], dense: Mapping[str, float]) -> float:
    """The dense weight one query is fused with: ``alpha`` itself, or :func:`spread_alpha` of
    the two legs' scores."""
    if check_alpha(alpha) == SPREAD:
        return spread_alpha(sparse.values(), dense.values())
    return float(alpha)


def fixed_alpha(alpha: Alpha) -> float:
    """A weight fixed before any scores are seen: ``alpha``, or :data:`FIXED_ALPHA` for spread."""
    return FIXED_ALPHA if check_alpha(alpha) == SPREAD else float(alpha)


def hybrid_linear(
    sparse: Mapping[str, float], dense: Mapping[str, float], alpha: Alpha = DEFAULT_ALPHA
) -> list[Fused]:
    """Seed 002's form: ``alpha * dense + (1 - alpha) * sparse``, alpha in [0, 1] or
    ``"spread"`` (:func:`dense_weight`).

    Seed 002 suggests alpha between 0.5 and 0.7; across every shared collection the per-query
    spread rule generalises best (:data:`DEFAULT_ALPHA`).
    """
    weight = dense_weight(alpha, sparse, dense)
    return linear([sparse, dense], [1.0 - weight, weight])


def blend(
    first_stage: Mapping[str, float], rerank: Mapping[str, float], weight: float
) -> list[str]:
    """The reranked order of a pool: ``weight * minmax(rerank) + (1 - weight) * minmax(first)``.

    Both mappings hold the same ids (the pool). ``weight`` 1.0 is the cross-encoder's order
    alone, 0.0 the first stage's. Ties fall back to the first stage's order, then the id.
    Raises ValueError for a weight outside [0, 1] or mappings over different ids.
    """
    if not 0.0 <= weight <= 1.0 or not math.isfinite(weight):
        raise ValueError(f"weight must lie in [0, 1], got {weight}")
    if set(first_stage) != set(rerank):
        raise ValueError("the first-stage and rerank scores must cover the same pool")
    a, b = minmax(first_stage), minmax(rerank)
    score = {d: weight * b[d] + (1.0 - weight) * a[d] for d in first_stage}
    return sorted(first_stage, key=lambda d: (-score[d], -first_stage[d], d))
