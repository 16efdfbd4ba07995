"""The search benchmark's result: the quality check through ranx, and the one record that the
tables and ``--json`` both show.

Quality is a sanity check, not the benchmark's subject: nDCG, MRR and Recall at ``--top-k`` and
Recall at the search depth, over the judged queries, with a query that found nothing scored 0
rather than dropped. ranx is imported when the check runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast


def quality_metrics(k: int, depth: int) -> list[str]:
    """The ranx metrics of the check, without repeats (``depth`` may equal ``k``)."""
    return list(dict.fromkeys([f"ndcg@{k}", f"mrr@{k}", f"recall@{k}", f"recall@{depth}"]))


def evaluate(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], k: int, depth: int
) -> dict[str, float]:
    """The metrics of ``run`` against ``qrels``, four decimals."""
    try:
        from ranx import Qrels, Run, evaluate
    except ImportError as exc:
        raise SystemExit("the quality check needs ranx: pip install ranx") from exc
    scores = evaluate(
        Qrels.from_dict(qrels),
        Run.from_dict({q: r for q, r in run.items() if r}),
        quality_metrics(k, depth),
        make_comparable=True,  # a query with no hits scores 0 instead of being dropped
    )
    return {m: round(float(v), 4) for m, v in cast(dict[str, float], scores).items()}


def evaluator_note(max_hits: float) -> str:
    return (
        f"chunks mapped to documents by doc_id, best rank kept; "
        f"lists hold at most {max_hits:.0f} documents"
    )


def result_record(
    *,
    command: str,
    machine: dict[str, Any],
    run_on: Mapping[str, Any],
    embedder: str,
    ingest: dict[str, Any],
    search: dict[str, Any],
    metrics: dict[str, float],
) -> dict[str, Any]:
    """The benchmark's record; ``run_on``: the dataset, split and index it ran on."""
    max_hits = search["hits_per_query"].get("max", 0)
    return {
        "command": command,
        "machine": machine,
        "dataset": run_on["dataset"],
        "split": run_on["split"],
        "index": run_on["index"],
        "embedder": embedder,
        "ingest": ingest,
        "search": search,
        "quality": {"metrics": metrics, "evaluator_note": evaluator_note(max_hits)},
    }
