"""Retrieval quality metrics through ranx (a maintained IR-metrics library), not hand-written.

Conventions, stated once:
- Gains are **linear**: a document's graded relevance is its gain (the seed's D1=2, D2=1, D4=0),
  discounted by ``1 / log2(rank + 1)`` (ranx's ``ndcg``, Järvelin & Kekäläinen). ``ndcg_burges``
  would use ``2**rel - 1`` instead; we do not use it.
- Recall@k: the share of a query's relevant documents (gain > 0) found in the top k.
- MRR: the reciprocal rank of the first relevant document, 0 when none is retrieved.
- Failure rate (seed 002): ``1 - Recall@20``.
- **Zero-relevant queries** (no judged document with gain > 0) are excluded from every average and
  counted separately, since every metric above is undefined for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_METRICS = ("recall@3", "mrr", "ndcg@3")


@dataclass(frozen=True)
class Evaluation:
    scores: dict[str, float]
    queries: int
    zero_relevant: int


def ranking_to_run(ranked: Sequence[str]) -> dict[str, float]:
    """A ranked list as run scores (higher first), ranks preserved exactly."""
    n = len(ranked)
    return {doc: float(n - i) for i, doc in enumerate(ranked)}


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = DEFAULT_METRICS,
) -> Evaluation:
    """Mean of each metric over the queries that have at least one relevant document."""
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    judged = {q: {d: int(g) for d, g in docs.items() if g > 0} for q, docs in qrels.items()}
    usable = {q: d for q, d in judged.items() if d}
    zero = len(judged) - len(usable)
    if not usable:
        return Evaluation({m: 0.0 for m in metrics}, 0, zero)
    run_dict = {q: dict(run.get(q, {})) or {"__none__": 0.0} for q in usable}
    result = ranx_evaluate(Qrels(usable), Run(run_dict), list(metrics), make_comparable=True)
    scores = (
        {metrics[0]: float(result)}
        if len(metrics) == 1
        else {m: float(v) for m, v in dict(result).items()}
    )
    return Evaluation(scores, len(usable), zero)
