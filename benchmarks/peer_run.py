"""The Haystack comparison end to end: what ``scripts/bench_haystack.py`` runs.

Named stages: read the judged queries -> open our side (ingest check, searchers, models warm) ->
start the peer's worker in its venv, fill its index with our chunks and vectors, build and warm
its pipelines -> interleave every query through each pair (ours, peer) for ``rounds`` rounds
after a warm-up -> summarise (quality, latency, paired bootstrap intervals of the ratios) ->
print tables or JSON.

Pairs: ``hybrid-es hybrid`` against ``haystack hybrid`` (both RRF over BM25 and kNN), and with a
reranker ``hybrid-es hybrid+rerank`` against ``haystack hybrid+rerank`` (the same cross-encoder
folder over the same fused depth). Same node, same chunks and vectors, same models.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.interleave import Answer, Pair, interleave
from benchmarks.peer import PeerProcess
from benchmarks.peer_ours import open_ours
from benchmarks.peer_pipelines import PeerConfig
from benchmarks.peer_report import load_summary, print_tables, summarize
from hybrid_es.encoders.reranker import CrossEncoderReranker, Precision
from hybrid_es.evaluation.collection import EVAL_TENANT, collection_name
from hybrid_es.ingest.beir import read_qrels, read_queries
from hybrid_es.settings import Settings

if TYPE_CHECKING:
    from benchmarks.native_run import NativeOptions


@dataclass(frozen=True)
class PeerOptions:
    """The parsed command line of ``scripts/bench_haystack.py`` (one field per flag)."""

    dataset: Path
    split: str = "test"
    max_queries: int | None = None
    reranker: str | None = None
    precision: Precision | None = None
    rerank_depth: int = 20
    rerank_max_length: int = 256
    top_k_each: int = 50
    num_candidates: int = 100
    fuzziness: str = "0"
    fusion: str = "rrf"
    rounds: int = 3
    warmup: int = 20
    resamples: int = 2000
    seed: int = 0
    level: float = 0.95
    index: str | None = None
    peer_python: Path | None = None
    peer_threads: int | None = None
    json: bool = False
    out: Path | None = None


def log(msg: str) -> None:
    print(f"bench_haystack: {msg}", file=sys.stderr, flush=True)


def judged_queries(
    opts: PeerOptions | NativeOptions,
) -> tuple[list[str], list[str], dict[str, dict[str, int]]]:
    """(query ids, their texts, qrels): the split's judged queries with text, in qrels order,
    the first ``max_queries`` when set (the Haystack and the native peer's runs alike)."""
    qrels = read_qrels(opts.dataset, opts.split)
    if opts.max_queries:
        qrels = dict(list(qrels.items())[: opts.max_queries])
    queries = read_queries(opts.dataset)
    qids = [q for q in qrels if queries.get(q, "").strip()]
    return qids, [queries[q] for q in qids], qrels


def run(opts: PeerOptions, command: str) -> int:
    """Measure, summarise and report (``command``: the command line recorded)."""
    settings = Settings()
    name = collection_name(opts.dataset)
    qids, texts, qrels = judged_queries(opts)
    log(f"{name} {opts.split}: {len(qids)} judged queries")
    ce = None
    if opts.reranker:
        ce = CrossEncoderReranker(
            opts.reranker,
            precision=opts.precision,
            max_length=opts.rerank_max_length,
            threads=settings.reranker_threads,
        )
    ours, ours_info = open_ours(
        opts.dataset, settings, reranker=ce, rerank_depth=opts.rerank_depth, fusion=opts.fusion
    )
    log(f"ours: {ours_info['index']} ready (ingest check {ours_info['ingest_seconds']} s)")
    load_start = os.getloadavg()[0]
    with PeerProcess(opts.peer_python) as peer:
        peer_info = open_peer(peer, opts, name, ours_info)
        pairs: list[Pair] = list(zip(ours.searchers, peer_info["pipelines"], strict=True))

        def one(system: str, text: str) -> Answer:
            return peer.query(system, text) if system in peer.names else ours.query(system, text)

        timings = interleave(
            texts,
            pairs,
            one,
            rounds=opts.rounds,
            warmup=opts.warmup,
            load=lambda: os.getloadavg()[0],
            progress=_progress,
        )
    load = {
        "start": round(load_start, 2),
        "during": load_summary(timings.load),
        "end": round(os.getloadavg()[0], 2),
    }
    record = {
        "dataset": str(opts.dataset),
        "dataset_name": name,
        "split": opts.split,
        "queries": len(qids),
        "command": command,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "load_average": load},
        "versions": {"ours": _our_versions(), "peer": peer_info["versions"]},
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(opts).items()},
        "ours": ours_info,
        "peer_index": peer_info["index"],
        **summarize(
            timings, pairs, qids, qrels, resamples=opts.resamples, seed=opts.seed, level=opts.level
        ),
    }
    emit(record, opts)
    return 0


def open_peer(
    peer: PeerProcess, opts: PeerOptions, name: str, ours_info: dict[str, Any]
) -> dict[str, Any]:
    """Fill (or reuse) the peer's index with our chunks and vectors, build and warm its
    pipelines over the same embedder and cross-encoder; its index, pipelines and versions (torch
    threads included, read after they are set)."""
    index = peer.index(
        opts.index or f"haystack-peer-{name}", source=ours_info["index"], tenant=EVAL_TENANT
    )
    log(f"peer: {index['name']} ({index['documents']} chunks, {index['seconds']} s) ready")
    cfg = PeerConfig(
        embedder_path=ours_info["embedder_path"],
        top_k_each=opts.top_k_each,
        num_candidates=opts.num_candidates,
        fuzziness=opts.fuzziness,
        reranker=opts.reranker,
        rerank_depth=opts.rerank_depth,
        rerank_max_length=opts.rerank_max_length,
        torch_threads=opts.peer_threads,
    )
    names = peer.pipelines(cfg)
    return {"versions": peer.versions(), "index": index, "pipelines": names}


def _progress(done: int, total: int) -> None:
    if done % 100 == 0 or done == total:
        log(f"{done}/{total} query rounds (load average {os.getloadavg()[0]:.2f})")


def _our_versions() -> dict[str, str]:
    return {p: version(p) for p in ("hybrid-es", "elasticsearch", "sentence-transformers", "torch")}


def emit(
    record: dict[str, Any],
    opts: PeerOptions | NativeOptions,
    tables: Callable[[dict[str, Any]], None] = print_tables,
) -> None:
    """Write an interleaved run's record to ``opts.out`` (when set), then print it as JSON
    (``opts.json``) or as ``tables`` (the Haystack and the native peer's runs alike)."""
    text = json.dumps(record, indent=2)
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(text + "\n")
    if opts.json:
        sys.stdout.write(text + "\n")
    else:
        tables(record)
