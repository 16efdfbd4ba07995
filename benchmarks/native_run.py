"""hybrid-es against OpenSearch's native hybrid, end to end: what ``scripts/bench_native_peer.py``
runs (issue 40).

Named stages: read the judged queries -> open our side (the evaluation index, ingested once and
reused; the default searcher: min-max linear fusion with the per-query ``spread`` weight, fused
client-side, no reranker) -> open the peer over the same index with the same embedder
(:mod:`~benchmarks.native_peer`), check both admit the same records, install its pipeline ->
wait for a quiet machine -> interleave every query through both for ``rounds`` rounds after a
warm-up (:mod:`~benchmarks.interleave`) -> summarise (quality, latency and the paired bootstrap
intervals of the ratios as the Haystack comparison does, the paired nDCG@10 difference with
its p, the goal) -> print tables or JSON; the pipeline is deleted on the way out.

Both ask for the top ``top_k`` chunks (10: the default search); a query's documents are its
chunks' documents in order, each once. Both are timed around the whole call, query embedding
included, ours with its query-vector cache emptied first (a user's new question pays it).
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks.interleave import Answer, Pair, interleave
from benchmarks.native_peer import DOCS_PAGE, SYSTEM, NativePeer
from benchmarks.native_report import print_tables
from benchmarks.peer_ours import open_ours
from benchmarks.peer_report import load_summary, summarize
from benchmarks.peer_run import emit, judged_queries
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.encoders.embedder import make_embedder
from hybrid_es.evaluation.collection import (
    EVAL_PRINCIPAL,
    EVAL_TENANT,
    collection_name,
    default_index,
)
from hybrid_es.evaluation.loco import paired_tests
from hybrid_es.evaluation.metrics import ranking_to_run
from hybrid_es.evaluation.run import _variant_suffix
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.door import tenant_policy
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

OURS = "hybrid-es default"
PAIR: Pair = (OURS, SYSTEM)
GOAL_RATIO = 0.8
"""Ours' p50 at most this many times the native hybrid's (issue 40)."""
SIGNIFICANCE = 0.05
"""nDCG@10 counts as equal when the paired test cannot tell the two apart at this level."""


@dataclass(frozen=True)
class NativeOptions:
    """The parsed command line of ``scripts/bench_native_peer.py`` (one field per flag)."""

    dataset: Path
    split: str = "test"
    max_queries: int | None = None
    top_k: int = 10
    lexical_weight: float = 0.3
    pagination_depth: int | None = None
    rounds: int = 3
    warmup: int = 20
    resamples: int = 2000
    seed: int = 0
    level: float = 0.95
    quiet_load: float = 1.5
    quiet_wait_minutes: float = 45.0
    pipeline: str | None = None
    peer_filter: str = "tenant"
    """``tenant``: the evaluation tenant's filter (issue 40's peer); ``policy``: ours' whole
    policy filter, in both sub-queries (a diagnostic: what the filter's shape costs)."""
    json: bool = False
    out: Path | None = None


def log(msg: str) -> None:
    print(f"bench_native_peer: {msg}", file=sys.stderr, flush=True)


def eval_index(dataset: Path, settings: Settings) -> str:
    """The index ``hybrid-es eval`` ingests ``dataset`` into for the MiniLM that ``open_ours``
    makes (the default runtime; int8's vectors get an index of their own), so that the two
    share one ingest."""
    embedder = make_embedder("minilm", query_threads=settings.embed_threads)
    return default_index(dataset, "minilm" + _variant_suffix(embedder))


def wait_quiet(
    threshold: float,
    minutes: float,
    *,
    step_s: float = 60.0,
    read: Callable[[], float] = lambda: os.getloadavg()[0],
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Wait until the 1-minute load average is under ``threshold``, checking every ``step_s``
    for at most ``minutes``; what was found (``quiet`` False: it never quieted, and the run
    goes on at the load it had)."""
    waited = 0.0
    load = read()
    while load >= threshold and waited + step_s <= minutes * 60:
        log(f"load average {load:.2f} >= {threshold}: waiting ({waited / 60:.0f} min so far)")
        sleep(step_s)
        waited += step_s
        load = read()
    return {"threshold": threshold, "quiet": load < threshold, "waited_s": waited, "load": load}


class RoundTrips:
    """Times every ``_msearch`` that ``engine`` sends, with the engine's own ``took`` (the
    slowest search of the request): an instrument on this one engine object, whose ``msearch``
    it wraps, so that ours' two round trips (the legs, then the head's records) show apart.
    :attr:`calls` holds ``(round trip ms, took ms)`` in order; clear it before a search."""

    def __init__(self, engine: Engine) -> None:
        self.calls: list[tuple[float, float]] = []
        inner = engine.msearch

        def timed(
            searches: list[dict[str, Any]], *, opaque_id: str | None = None, **params: Any
        ) -> list[dict[str, Any]]:
            t = time.perf_counter()
            out = inner(searches, opaque_id=opaque_id, **params)
            took = max((float(r.get("took", 0.0)) for r in out), default=0.0)
            self.calls.append(((time.perf_counter() - t) * 1000, took))
            return out

        setattr(engine, "msearch", timed)  # noqa: B010 (an instance attribute, on purpose)


def our_query(searcher: HybridSearcher, top_k: int) -> Callable[[str], Answer]:
    """One default ``search()`` for ``top_k`` hits, timed around the whole call, the query-vector
    cache emptied first; its documents and stages: the searcher's own timings; ``legs`` and
    ``head_read``, the two round trips (``retrieval`` is their sum), each with the engine's
    ``took``; and ``rest``, what the total leaves after embedding, the round trips and fusion
    (building the policy, re-checking every record in Python, assembling the response)."""
    trips = RoundTrips(searcher.client)

    def run(text: str) -> Answer:
        searcher.query_cache.clear()
        trips.calls.clear()
        t = time.perf_counter()
        resp = searcher.search(text, EVAL_PRINCIPAL, RequestScope(), top_k=top_k, rerank=False)
        ms = (time.perf_counter() - t) * 1000
        st = dict(resp.timings_ms)
        known = sum(st.get(k, 0.0) for k in ("embed", "retrieval", "fusion", "model_load"))
        st["rest"] = max(st.get("total", ms) - known, 0.0)
        for (trip_ms, took), name in zip(trips.calls, ("legs", "head_read"), strict=False):
            st[name], st[f"{name}_took"] = trip_ms, took
        return Answer(ms, tuple(dict.fromkeys(h.doc_id for h in resp.hits)), st)

    return run


def quality_test(
    timings_ranked: Mapping[str, list[tuple[str, ...]]],
    qids: list[str],
    qrels: Mapping[str, Mapping[str, int]],
) -> dict[str, Any]:
    """Ours' nDCG@10 minus the peer's over the same queries, paired (``loco.paired_tests``, a
    paired t-test through ranx): ``delta``, ``p`` and ours' wins, ties and losses."""
    runs = {
        s: {q: ranking_to_run(r) for q, r in zip(qids, timings_ranked[s], strict=True)}
        for s in PAIR
    }
    return paired_tests(qrels, runs, baseline=SYSTEM)[OURS]


def goal(pair: Mapping[str, Any], ndcg: Mapping[str, Any]) -> dict[str, Any]:
    """Issue 40's goal: ours' p50 at most :data:`GOAL_RATIO` of the peer's, at equal or better
    nDCG@10 (better, or no difference the paired test can tell at :data:`SIGNIFICANCE`)."""
    p50 = pair["p50"]
    latency_met = p50["ratio"] <= GOAL_RATIO
    quality_met = ndcg["delta"] >= 0 or ndcg["p"] >= SIGNIFICANCE
    return {
        "rule": f"p50 ratio <= {GOAL_RATIO} and nDCG@10 delta >= 0 (or p >= {SIGNIFICANCE})",
        "latency_met": latency_met,
        "latency_interval_under": p50["high"] <= GOAL_RATIO,
        "quality_met": quality_met,
        "met": latency_met and quality_met,
        "p50_over_goal": round(p50["ratio"] / GOAL_RATIO, 4),
    }


def run(opts: NativeOptions, command: str) -> int:
    """Measure, summarise and report (``command``: the command line recorded)."""
    settings = Settings()
    name = collection_name(opts.dataset)
    qids, texts, qrels = judged_queries(opts)
    log(f"{name} {opts.split}: {len(qids)} judged queries")
    index = eval_index(opts.dataset, settings)
    ours, ours_info = open_ours(opts.dataset, settings, reranker=None, fusion="linear", index=index)
    engine = ours.collection.es
    if engine.flavor != "opensearch":
        raise SystemExit(f"the native hybrid query is OpenSearch's; {engine.url} is {engine.name}")
    log(f"ours: {ours_info['index']} ready (ingest check {ours_info['ingest_seconds']} s)")
    searcher = ours.searchers["hybrid-es linear"]
    ours_policy = policy_filter(EVAL_PRINCIPAL, RequestScope(), datetime.now(UTC))
    peer = NativePeer(
        connect(settings),  # its own connection, as another application's
        ours.collection.embedder,
        ours_info["index"],
        opts.pipeline or f"hybrid-es-bench-native-{name}-{os.getpid()}",
        tenant_policy(EVAL_TENANT) if opts.peer_filter == "tenant" else ours_policy,
        params=searcher.params,
        size=opts.top_k,
        pagination_depth=opts.pagination_depth,
        weights=(opts.lexical_weight, round(1.0 - opts.lexical_weight, 6)),
    )
    seen = peer.records_seen(ours_policy)
    if seen["peer_filter"] != seen["ours_policy"]:
        log(f"the two filters admit different records: {seen}")
    systems: dict[str, Callable[[str], Answer]] = {OURS: our_query(searcher, opts.top_k)}
    with peer:
        systems[SYSTEM] = peer.query
        quiet = wait_quiet(opts.quiet_load, opts.quiet_wait_minutes)
        log(f"load average {quiet['load']:.2f} (quiet: {quiet['quiet']}); measuring")
        timings = interleave(
            texts,
            [PAIR],
            lambda system, text: systems[system](text),
            rounds=opts.rounds,
            warmup=opts.warmup,
            load=lambda: os.getloadavg()[0],
            progress=_progress,
        )
    summary = summarize(
        timings, [PAIR], qids, qrels, resamples=opts.resamples, seed=opts.seed, level=opts.level
    )
    ndcg = quality_test(timings.ranked, qids, qrels)
    record = {
        "dataset": str(opts.dataset),
        "dataset_name": name,
        "split": opts.split,
        "queries": len(qids),
        "command": command,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "load_average": {
                "before": quiet,
                "during": load_summary(timings.load),
                "end": round(os.getloadavg()[0], 2),
            },
        },
        "engine": {"name": engine.name, "version": engine.version, "url": engine.url},
        "versions": _versions(),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(opts).items()},
        "ours": ours_info,
        "peer": {
            "pipeline": peer.pipeline,
            "weights": list(peer.weights),
            "docs": DOCS_PAGE,
            "filter": opts.peer_filter,
            "records_seen": seen,
            "knn": {"k": peer.params.window, "ef_search": peer.params.num_candidates},
        },
        **summary,
        "ndcg@10_paired": {k: round(v, 6) if isinstance(v, float) else v for k, v in ndcg.items()},
        "goal": goal(summary["pairs"][0], ndcg),
    }
    emit(record, opts, print_tables)
    return 0


def _progress(done: int, total: int) -> None:
    if done % 100 == 0 or done == total:
        log(f"{done}/{total} query rounds (load average {os.getloadavg()[0]:.2f})")


def _versions() -> dict[str, str]:
    out = {}
    for p in ("hybrid-es", "opensearch-py", "onnxruntime", "sentence-transformers", "ranx"):
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = "absent"
    return out
