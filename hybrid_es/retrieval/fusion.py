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

**Which fusion a search takes** (:func:`choose_path`): the path (``SearchResponse.fusion_path``)
follows from the evaluation pipeline, the configured mode (``auto``, ``native``, ``client``), the
method (``rrf``, ``linear``) and the dense weight (a number, or ``spread``, which is read from the
legs' scores and so always fuses client-side), and from whether the engine runs the method
natively. The reason says which of these decided, in words a response and a trace can carry;
:func:`fallback_kind` reads a reason back as the fallback it names, for the metrics. Pure: what
the engine can do comes in as a function.

**What a searcher finds out about its engine's fusion** (:class:`FusionFindings`, the one part
that is not pure): what the engine runs natively is found once per method (set by the caller,
or probed read-only on first use, ``cluster.capabilities.native_fusion_works``) and revised at
query time when the cluster refuses what the probe allowed; OpenSearch's ``hybrid`` query refused
for a user under document-level security turns on the suggest workaround (neural-search#1303)
from then on. The configured weight is checked when the searcher is made (:func:`checked_alpha`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from hybrid_es.cluster.capabilities import native_fusion_works
from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import BadQueryError, CapabilityMissingError, ConfigurationError
from hybrid_es.models import FusionPath

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


# -- which path a search takes ------------------------------------------------------------

NativeProbe = Callable[[str], tuple[bool, str]]
"""``method -> (runs natively, why not)``: the searcher's probe of the engine."""


def choose_path(
    pipeline: str, fusion: str, method: str, alpha: Alpha, native: NativeProbe
) -> tuple[FusionPath, str]:
    """The path and its reason; CapabilityMissingError for ``native`` on an engine without
    it. ``native`` is called only when the engine's answer matters."""
    if pipeline == "bm25":
        return "bm25-only", "BM25 leg only (evaluation pipeline)"
    if pipeline == "dense":
        return "dense-only", "kNN leg only (evaluation pipeline)"
    what = "rrf" if method == "rrf" else f"min-max linear fusion (dense weight {alpha})"
    client_path: FusionPath = "client-rrf" if method == "rrf" else "client-linear"
    native_path: FusionPath = "native-rrf" if method == "rrf" else "native-linear"
    if fusion == "client":
        return client_path, f"client-side {what} requested"
    if method == "linear" and alpha == SPREAD:
        # The weight is read from the legs' scores, which the engine's fusion cannot wait for:
        # spread fuses client-side on every engine (an explicit native is refused when the
        # searcher is made).
        return client_path, (
            "min-max linear fusion with a per-query dense weight (spread, from the legs' "
            "scores) runs client-side"
        )
    runs, why_not = native(method)
    if fusion == "native":
        if not runs:
            raise CapabilityMissingError(
                f"native {what} was requested but the cluster cannot run it: {why_not}",
                hint="use fusion='auto' or 'client' (a Basic licence, no rank-rrf module, "
                "or OpenSearch older than 2.19 or without neural-search)",
            )
        return native_path, f"native {what} requested"
    if runs:
        return native_path, f"auto: the cluster runs {what} natively"
    why = why_not.removeprefix(f"{method}: ").split("; fused client-side")[0]
    return client_path, f"auto: the cluster cannot run {what} natively ({why}), fused client-side"


def client_side(path: FusionPath) -> FusionPath:
    """The client-side path of the same method (``native-rrf`` -> ``client-rrf``)."""
    return "client-rrf" if path in ("native-rrf", "client-rrf") else "client-linear"


def per_shard(path: FusionPath, reason: str, shards: int, fusion: str) -> tuple[FusionPath, str]:
    """OpenSearch 2.19 fuses within each shard (RRF ranks and each leg's top list are per shard;
    neural-search#1718 makes them global in 3.5), so on a multi-shard index its result is not
    the fusion of the two legs. ``auto`` fuses the legs it already has client-side; an explicit
    ``native`` keeps the cluster's answer and says so."""
    if fusion == "native":
        return path, f"{reason}; fused per shard over {shards} shards (OpenSearch 2.19)"
    return client_side(path), (
        f"auto: the index has {shards} shards and OpenSearch 2.19 fuses per shard; "
        "fused client-side over the global legs"
    )


def fallback_kind(path: str, reason: str) -> str | None:
    """Why this search did not fuse as asked (one of ``telemetry.FALLBACKS``), from the reasons
    :func:`choose_path`, :func:`per_shard` and the searcher give; None when it did."""
    if path == "bm25-only" and "was not trained on" in reason:
        return "script-gate"
    if "refused at query time" in reason:
        return "native-refused"
    if "fuses per shard" in reason and path.startswith("client"):
        return "per-shard"
    if reason.startswith("auto: the cluster cannot run"):
        return "no-native"
    return None


# -- the configured fusion, and what the engine was found to run ----------------------------

FusionMode = Literal["auto", "native", "client"]
FusionMethod = Literal["rrf", "linear"]


def checked_alpha(alpha: Alpha, fusion: FusionMode, method: FusionMethod) -> Alpha:
    """``alpha``, the dense weight of linear fusion, once it is a weight (BadQueryError
    otherwise) that ``fusion`` can fuse with: an explicit native linear fusion takes a fixed
    weight, never the spread weight read from each query's legs (ConfigurationError)."""
    try:
        alpha = check_alpha(alpha)
    except ValueError as exc:
        raise BadQueryError(f"the dense weight of linear fusion: {exc}") from None
    if fusion == "native" and method == "linear" and alpha == SPREAD:
        raise ConfigurationError(
            "native linear fusion takes a fixed dense weight, and the spread weight is "
            "chosen per query from the legs' scores (client-side)",
            hint="set a number as the weight (HYBRID_ES_FUSION_ALPHA=0.4, the best fixed "
            "one) to fuse natively, or use fusion 'auto'",
        )
    return alpha


@dataclass
class FusionFindings:
    """What a searcher has found out about its engine's fusion."""

    native: dict[str, tuple[bool, str]] = field(default_factory=dict)
    """Per method (``rrf``, ``linear``): whether the engine runs it natively, and why (not)."""
    dls_suggest: bool = False
    """Set once OpenSearch refused a hybrid query for a DLS user (neural-search#1303)."""

    @classmethod
    def told(cls, native_rrf: bool | None) -> FusionFindings:
        """Nothing found yet, or (``native_rrf`` given) both methods as the caller says."""
        if native_rrf is None:
            return cls()
        return cls({m: (native_rrf, "set by the caller") for m in ("rrf", "linear")})

    def native_probe(self, client: Engine, method: str) -> tuple[bool, str]:
        """Whether ``client``'s engine runs ``method`` natively, and why (not): probed once,
        read-only (:data:`NativeProbe`)."""
        if method not in self.native:
            self.native[method] = native_fusion_works(client, method)
        return self.native[method]

    def refused(self, method: str) -> None:
        """The cluster refused ``method`` at query time: fuse it client-side from now on."""
        self.native[method] = (False, "refused at query time")
