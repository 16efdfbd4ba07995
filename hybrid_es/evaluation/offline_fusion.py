"""Fusion scored offline on cached legs: every candidate on exactly the same two ranked lists.

A collection's legs (BM25 and kNN, the top chunks of each with their scores, fetched once per
judged query through the real searcher: ``scripts/bench_fusion.py``) are a plain mapping::

    {"name": "scifact", "unit": "doc" | "chunk", "embedder": "<model id>",
     "queries": {qid: text}, "qrels": {qid: {doc: gain}},
     "legs": {qid: {"bm25": [[chunk, doc, score], ...], "dense": [...]}}}

A *fuser* takes the two legs of one query and returns fused chunk ids, best first; every fuser
here calls the functions the searcher uses (``hybrid_es.retrieval.fusion``), so a table built
from them compares the fusions and nothing else. :func:`fused_run` turns a fuser into a ranx-ready
run (a document's best chunk stands for it unless the collection is judged by chunk).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hybrid_es.evaluation.metrics import evaluate
from hybrid_es.retrieval import fusion as F
from hybrid_es.text.analysis import dominant_script

Leg = Sequence[tuple[str, str, float]]
"""(chunk id, document id, score) in rank order."""
Fuser = Callable[[Leg, Leg], list[str]]
Run = dict[str, dict[str, float]]
"""query id -> {document (or chunk) id: score}, as ranx reads it."""

RUN_DEPTH = 100
"""Fused results kept per query (the legs hold at most 2 x 50 chunks)."""


def _ids(leg: Leg) -> list[str]:
    return [c for c, _, _ in leg]


def _scores(leg: Leg) -> dict[str, float]:
    return {c: s for c, _, s in leg}


def rrf(k: int = F.DEFAULT_RANK_CONSTANT, ws: float = 1.0, wd: float = 1.0) -> Fuser:
    """(Weighted) reciprocal rank fusion with rank constant ``k``."""

    def fuse(sparse: Leg, dense: Leg) -> list[str]:
        return [f.doc_id for f in F.rrf([_ids(sparse), _ids(dense)], k=k, weights=(ws, wd))]

    return fuse


def minmax(alpha: float) -> Fuser:
    """Min-max linear fusion with the dense leg at weight ``alpha`` (the searcher's default)."""

    def fuse(sparse: Leg, dense: Leg) -> list[str]:
        return [f.doc_id for f in F.hybrid_linear(_scores(sparse), _scores(dense), alpha)]

    return fuse


def dbsf(alpha: float) -> Fuser:
    """Linear fusion over DBSF-normalised scores (mean +- 3 sd), dense at weight ``alpha``."""

    def fuse(sparse: Leg, dense: Leg) -> list[str]:
        return [
            f.doc_id
            for f in F.linear(
                [_scores(sparse), _scores(dense)], [1 - alpha, alpha], normalization="dbsf"
            )
        ]

    return fuse


def only(which: int) -> Fuser:
    """One leg alone: 0 is BM25, 1 is kNN."""
    return lambda sparse, dense: _ids((sparse, dense)[which])


def spread_alpha(sparse: Leg, dense: Leg) -> float:
    """The per-query dense weight of :func:`spread_weighted` (``fusion.spread_alpha`` of the
    two legs' scores)."""
    return F.spread_alpha([s for _, _, s in sparse], [s for _, _, s in dense])


def spread_weighted() -> Fuser:
    """Min-max linear fusion whose dense weight is chosen per query by the spread rule (the
    searcher's default, ``fusion.DEFAULT_ALPHA``): the leg whose top hit stands further above
    its own list counts for more."""

    def fuse(sparse: Leg, dense: Leg) -> list[str]:
        return [f.doc_id for f in F.hybrid_linear(_scores(sparse), _scores(dense), F.SPREAD)]

    return fuse


def english_only(col: Mapping[str, Any]) -> bool:
    """Whether the collection's dense leg came from the English-only MiniLM."""
    return "MiniLM" in str(col["embedder"])


def fused_run(col: Mapping[str, Any], fuse: Fuser, *, gate: bool = True) -> Run:
    """The run of ``fuse`` over every query of ``col``; ``gate`` drops the dense leg of a
    query whose script the embedder does not cover (MiniLM on Chinese), as the searcher does."""
    run: Run = {}
    gated = gate and english_only(col)
    for qid, legs in col["legs"].items():
        sparse = [tuple(x) for x in legs.get("bm25", [])]
        dense = [tuple(x) for x in legs.get("dense", [])]
        if gated and dominant_script(col["queries"][qid]) == "cjk":
            dense = []
        doc_of = {c: d for c, d, _ in (*sparse, *dense)}
        ranked: dict[str, float] = {}
        for i, c in enumerate(fuse(sparse, dense)[:RUN_DEPTH]):
            key = c if col["unit"] == "chunk" else doc_of[c]
            ranked.setdefault(key, float(RUN_DEPTH * 10 - i))
        run[qid] = ranked
    return run


def score(col: Mapping[str, Any], fuse: Fuser, *, gate: bool = True, metric: str) -> float:
    """``metric`` (a ranx name such as ``ndcg@10``) of ``fuse`` over ``col``."""
    return evaluate(col["qrels"], fused_run(col, fuse, gate=gate), (metric,)).scores[metric]


def score_table(
    cols: Sequence[Mapping[str, Any]],
    candidates: Mapping[str, Fuser],
    *,
    gate: bool = True,
    metric: str = "ndcg@10",
) -> dict[str, dict[str, float]]:
    """``{candidate: {collection name: metric}}`` over every candidate and collection."""
    return {
        name: {str(c["name"]): score(c, fuse, gate=gate, metric=metric) for c in cols}
        for name, fuse in candidates.items()
    }


LOCO_CANDIDATES: dict[str, Fuser] = {
    f"rrf k={F.DEFAULT_RANK_CONSTANT}": rrf(F.DEFAULT_RANK_CONSTANT),
    **{f"minmax a={a}": minmax(a) for a in (0.3, 0.4, 0.5, 0.6, 0.7)},
    "minmax a=spread": spread_weighted(),
}
"""What the leave-one-collection-out selection chooses among: RRF at the searcher's rank
constant, min-max linear at five fixed dense weights, and the per-query spread rule."""
PER_QUERY_RULES = ("minmax a=spread",)
"""Candidates that set their weight per query; the rest are fixed settings."""
FLOOR = "bm25"
"""BM25 alone: reported beside every table, never a candidate."""
INCUMBENT = f"minmax a={F.DEFAULT_ALPHA}"
"""The default (the spread rule since issue 26; min-max 0.4 before): the candidate that keeps a
tie."""
