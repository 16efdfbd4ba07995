"""Evaluating pipelines on a BEIR-layout collection: quality (through ranx) and latency per stage.

The I/O is the searcher's; this module runs queries, turns hits into runs (a document's best
chunk rank), and summarises. Metric conventions are those of ``evaluation.metrics``: linear
gains, zero-relevant queries excluded and counted; failure rate = 1 - Recall@20 (seed 002).

One query never aborts a run: a search that fails for that query alone (the library's errors,
see :func:`fails_one_query`) is recorded with its query id, error class and message, and scored
as an empty ranking, so the metrics count it as a miss. Errors that would fail every query, or
that must never pass quietly (a policy violation), still end the run.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hybrid_es.errors import (
    AuthenticationError,
    CapabilityMissingError,
    ConfigurationError,
    EngineUnavailableError,
    HybridEsError,
    IndexMissingError,
    ModelError,
    PolicyViolationError,
    SearchTimeoutError,
    UnknownTenantError,
)
from hybrid_es.evaluation.collection import EVAL_PRINCIPAL
from hybrid_es.evaluation.metrics import evaluate
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher

METRICS = ("ndcg@10", "recall@10", "recall@20", "recall@100", "mrr@10")
PASS_AT_K = ("recall@5", "recall@10", "recall@20", "ndcg@10", "mrr@10")
"""The cookbook's Pass@k is chunk-level Recall@k."""
PIPELINES = ("bm25", "dense", "hybrid", "linear", "hybrid+rerank", "linear+rerank")
STAGES = ("embed", "retrieval", "fusion", "rerank", "total")
MAX_ERROR_CHARS = 300
"""A recorded failure's message is cut to this many characters."""

_FAILS_THE_RUN: tuple[type[HybridEsError], ...] = (
    PolicyViolationError,  # fail loudly, never a quiet miss
    ConfigurationError,
    ModelError,
    AuthenticationError,
    IndexMissingError,
    UnknownTenantError,
    CapabilityMissingError,
    EngineUnavailableError,  # the cluster is unreachable (a timeout is one query's: below)
)


def fails_one_query(exc: BaseException) -> bool:
    """Whether ``exc`` belongs to one query, so that a run records it and goes on: the library's
    errors (``HybridEsError``) such as BadQueryError (too long), SearchTimeoutError or the
    cluster refusing one body; not a programming error (KeyError and the like), and not one that
    would fail every query or must fail loudly (policy violations, configuration, models,
    credentials, a missing index or tenant, an unreachable cluster)."""
    if not isinstance(exc, HybridEsError):
        return False
    return isinstance(exc, SearchTimeoutError) or not isinstance(exc, _FAILS_THE_RUN)


@dataclass(frozen=True)
class QueryFailure:
    """A query whose search failed: scored as an empty ranking."""

    query_id: str
    error: str
    """The error's class name (``BadQueryError``, ``SearchTimeoutError``, ...)."""
    message: str
    """Its message, cut to :data:`MAX_ERROR_CHARS` characters."""

    def as_dict(self) -> dict[str, str]:
        return {"query_id": self.query_id, "error": self.error, "message": self.message}


@dataclass
class PipelineResult:
    name: str
    metrics: dict[str, float]
    failure_rate: float
    queries: int
    zero_relevant: int
    latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    fusion_path: str = ""
    model_ms_per_query: float = 0.0
    """Mean model compute per query (query embedding + reranking), the per-query cost driver."""
    failures: list[QueryFailure] = field(default_factory=list)
    """Queries whose search failed (each scored as an empty ranking), in run order."""
    truncated: int = 0
    """Queries that a leg read only the start of (``SearchResponse.truncated``)."""
    fusion_paths: dict[str, int] = field(default_factory=dict)
    """Queries per fusion path (``fusion_path`` is the most common): the dense leg's script
    gate answers a query outside the embedder's scripts from BM25 alone."""
    run: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    """The ranking per query (document or chunk id -> score), for paired tests between runs
    (``evaluation.loco.paired_tests``); not in :meth:`as_dict`."""

    @property
    def failed(self) -> int:
        return len(self.failures)

    def as_dict(self) -> dict[str, Any]:
        return {
            "pipeline": self.name,
            "metrics": self.metrics,
            "failure_rate": self.failure_rate,
            "queries": self.queries,
            "zero_relevant": self.zero_relevant,
            "latency_ms": self.latency_ms,
            "fusion_path": self.fusion_path,
            "model_ms_per_query": self.model_ms_per_query,
            "failed": self.failed,
            "failures": [f.as_dict() for f in self.failures],
            "truncated": self.truncated,
            "fusion_paths": self.fusion_paths,
        }


def percentile(xs: list[float], q: int) -> float:
    if not xs:
        return 0.0
    if len(xs) == 1:
        return xs[0]
    return statistics.quantiles(sorted(xs), n=100, method="inclusive")[q - 1]


def run_pipeline(
    name: str,
    searcher: HybridSearcher,
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    depth: int = 100,
    rerank: bool = False,
    rerank_depth: int = 20,
    progress: Callable[[int], None] | None = None,
    unit: Literal["doc", "chunk"] = "doc",
    metrics: tuple[str, ...] = METRICS,
) -> PipelineResult:
    """Run every judged query through ``searcher`` and score it; qrels name documents (a
    document's best chunk stands for it) or, with ``unit="chunk"``, chunks. A query whose search
    fails alone (:func:`fails_one_query`) is recorded in ``failures`` and scored as an empty
    ranking; any other error ends the run."""
    run: dict[str, dict[str, float]] = {}
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    paths: Counter[str] = Counter()
    failures: list[QueryFailure] = []
    truncated = 0
    for qid in qrels:
        text = queries.get(qid, "")
        if not text.strip():
            continue
        try:
            resp = searcher.search(
                text,
                EVAL_PRINCIPAL,
                RequestScope(),
                top_k=min(depth, 100),
                rerank=rerank,
                rerank_depth=min(rerank_depth, searcher.params.window),
            )
        except HybridEsError as exc:
            if not fails_one_query(exc):
                raise
            failures.append(QueryFailure(qid, type(exc).__name__, str(exc)[:MAX_ERROR_CHARS]))
            run[qid] = {}  # an empty ranking: every metric counts it as a miss
            if progress:
                progress(1)
            continue
        paths[resp.fusion_path] += 1
        truncated += bool(resp.truncated)
        ranked: dict[str, float] = {}
        for h in resp.hits:  # a document's best chunk stands for it
            key = h.chunk_id if unit == "chunk" else h.doc_id
            if key not in ranked:
                ranked[key] = float(len(resp.hits) - h.final_rank + 1)
        run[qid] = ranked
        for s in STAGES:
            if s in resp.timings_ms:
                stages[s].append(resp.timings_ms[s])
        if progress:
            progress(1)
    ev = evaluate(qrels, run, metrics)
    latency = {
        s: {"p50": round(percentile(v, 50), 2), "p95": round(percentile(v, 95), 2)}
        for s, v in stages.items()
        if v
    }
    return PipelineResult(
        name,
        ev.scores,
        round(1.0 - ev.scores.get("recall@20", 0.0), 4),
        ev.queries,
        ev.zero_relevant,
        latency,
        paths.most_common(1)[0][0] if paths else "",
        round(sum(statistics.fmean(stages[s]) for s in ("embed", "rerank") if stages[s]), 2),
        failures,
        truncated,
        dict(paths),
        run,
    )


def markdown_report(
    dataset: str, results: list[PipelineResult], *, command: str, machine: str, plots: list[str]
) -> str:
    """A Markdown report: the command, the machine, a quality table and a latency table."""
    names = list(results[0].metrics) if results else list(METRICS)
    lines = [
        f"# Evaluation: {dataset}",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {machine}",
        "",
        "Gains are linear (graded relevance = gain), discount 1/log2(rank+1); queries with "
        "no relevant document are excluded and counted; failure rate = 1 - Recall@20.",
        "",
        "| pipeline | path | " + " | ".join(names) + " | failure rate | queries | failed |",
        "|---|---|" + "---|" * (len(names) + 3),
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {r.fusion_path} | "
            + " | ".join(f"{r.metrics.get(m, 0):.4f}" for m in names)
            + f" | {r.failure_rate:.4f} | {r.queries} | {r.failed} |"
        )
    failed = [(r.name, f) for r in results for f in r.failures]
    if failed:
        lines += [
            "",
            "Failed queries (each scored as an empty ranking, so the metrics above count it):",
            "",
            "| pipeline | query | error | message |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {name} | {f.query_id} | {f.error} | {_cell(f.message)} |" for name, f in failed
        ]
    lines += [
        "",
        "| pipeline | "
        + " | ".join(f"{s} p50 / p95 ms" for s in STAGES)
        + " | model ms / query (mean) |",
        "|---|" + "---|" * (len(STAGES) + 1),
    ]
    for r in results:
        cells = [
            f"{r.latency_ms[s]['p50']:.1f} / {r.latency_ms[s]['p95']:.1f}"
            if s in r.latency_ms
            else "-"
            for s in STAGES
        ]
        lines.append(f"| {r.name} | " + " | ".join(cells) + f" | {r.model_ms_per_query:.1f} |")
    lines += [""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def plot(results: list[PipelineResult], path: str, *, title: str) -> None:
    """nDCG@10 and total p95 latency per pipeline, side by side, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.name for r in results]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    a.bar(names, [r.metrics.get("ndcg@10", 0) for r in results], color="#3b6ea5")
    a.set_title("nDCG@10")
    a.set_ylim(0, 1)
    b.bar(names, [r.latency_ms.get("total", {}).get("p95", 0) for r in results], color="#c06c2b")
    b.set_title("search p95 (ms)")
    for ax in (a, b):
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t
