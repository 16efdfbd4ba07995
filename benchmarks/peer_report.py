"""What the Haystack comparison reports: per system quality and latency, per pair the ratios.

:func:`summarize` turns an interleaved run's :class:`~.interleave.Timings` into the record's
``systems`` and ``pairs`` (pure: quality through ranx, latency and intervals through
:mod:`~benchmarks.interleave_stats`); :func:`print_tables` prints a record.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.bench import percentile
from benchmarks.interleave import Pair, Timings
from benchmarks.interleave_stats import percentiles, ratio_intervals
from hybrid_es.evaluation.metrics import evaluate, ranking_to_run
from hybrid_es.evaluation.runner import METRICS

QUALITY = ("ndcg@10", "recall@10", "mrr@10", "recall@100")


def system_summary(
    timings: Timings,
    system: str,
    qids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
) -> dict[str, Any]:
    """One system's quality (first round's rankings) and latency (every timed call)."""
    run = {q: ranking_to_run(r) for q, r in zip(qids, timings.ranked[system], strict=True)}
    ev = evaluate({q: qrels[q] for q in qids}, run, METRICS)
    times = timings.ms[system]
    p50, p95 = percentiles(times)
    flat = [t for row in times for t in row]
    stage_names = dict.fromkeys(k for st in timings.stages[system] for k in st)
    return {
        "metrics": {k: round(v, 4) for k, v in ev.scores.items()},
        "queries": ev.queries,
        "zero_relevant": ev.zero_relevant,
        "latency_ms": {
            "p50": round(p50, 2),
            "p95": round(p95, 2),
            "mean": round(statistics.fmean(flat), 2),
            "samples": len(flat),
        },
        "stages_p50_ms": {
            s: round(percentile([st[s] for st in timings.stages[system] if s in st], 50), 2)
            for s in stage_names
        },
        "rankings_changed": timings.changed[system],
    }


def summarize(
    timings: Timings,
    pairs: Sequence[Pair],
    qids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """``systems`` (name -> :func:`system_summary`) and ``pairs`` (ours / peer at p50 and p95
    with paired bootstrap intervals over queries, and the nDCG@10 ratio)."""
    systems = {s: system_summary(timings, s, qids, qrels) for pair in pairs for s in pair}
    out_pairs = []
    for ours, peer in pairs:
        p50, p95 = ratio_intervals(
            timings.ms[ours], timings.ms[peer], resamples=resamples, seed=seed, level=level
        )
        ndcg = systems[ours]["metrics"]["ndcg@10"], systems[peer]["metrics"]["ndcg@10"]
        out_pairs.append(
            {
                "ours": ours,
                "peer": peer,
                "p50": p50.as_dict(),
                "p95": p95.as_dict(),
                "ndcg@10_ratio": round(ndcg[0] / ndcg[1], 4) if ndcg[1] else None,
            }
        )
    return {"systems": systems, "pairs": out_pairs}


def load_summary(samples: Sequence[float]) -> dict[str, float]:
    """Min, mean and max of the 1-minute load averages sampled during the run."""
    if not samples:
        return {}
    return {
        "min": round(min(samples), 2),
        "mean": round(statistics.fmean(samples), 2),
        "max": round(max(samples), 2),
        "samples": len(samples),
    }


def systems_table(record: Mapping[str, Any], quality: Sequence[str], title: str = "") -> Any:
    """The per-system table of an interleaved record (the Haystack and the native peer's
    alike): ``quality`` metrics, p50 / p95 / mean ms and each stage's p50; ``title`` is added to
    the heading."""
    from rich.table import Table

    cfg = record["config"]
    systems = Table(
        title=f"{record['dataset_name']} ({record['split']}), {record['queries']} queries x "
        f"{cfg['rounds']} rounds, interleaved{title}"
    )
    for col in ("system", *quality, "p50 ms", "p95 ms", "mean ms", "stages p50 ms"):
        systems.add_column(col, justify="left" if col in ("system", "stages p50 ms") else "right")
    for name, s in record["systems"].items():
        lat = s["latency_ms"]
        systems.add_row(
            name,
            *(f"{s['metrics'].get(m, 0.0):.4f}" for m in quality),
            f"{lat['p50']:.1f}",
            f"{lat['p95']:.1f}",
            f"{lat['mean']:.1f}",
            ", ".join(f"{k} {v:.1f}" for k, v in s["stages_p50_ms"].items()),
        )
    return systems


def print_tables(record: Mapping[str, Any]) -> None:
    """The record as two tables (systems; ours / peer) and the lines that say how it ran."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=150)
    cfg = record["config"]
    console.print(systems_table(record, QUALITY))
    ratios = Table(title=f"ours / peer, {round(cfg['level'] * 100)} % paired bootstrap interval")
    for col in ("ours", "peer", "p50 ratio [interval]", "p95 ratio [interval]", "nDCG@10 ratio"):
        ratios.add_column(col, justify="left" if col in ("ours", "peer") else "right")
    for p in record["pairs"]:
        ratios.add_row(p["ours"], p["peer"], _ratio(p["p50"]), _ratio(p["p95"]), _num(p))
    console.print(ratios)
    load = record["machine"]["load_average"]
    console.print(
        f"load average (1 min): {load['start']} at start, during {json.dumps(load['during'])}, "
        f"{load['end']} at end; {record['machine']['cores']} cores",
        highlight=False,
    )
    idx = record["peer_index"]
    console.print(
        f"peer index {idx['name']}: {idx['documents']} chunks copied from {idx['source_index']} "
        + ("(reused)" if idx["reused"] else f"(written in {idx['seconds']} s)")
        + f"; vectors {json.dumps(idx['vector_index_options'])}",
        highlight=False,
    )
    console.print(f"config: {json.dumps(cfg)}", highlight=False)
    console.print(f"versions: {json.dumps(record['versions'])}", highlight=False)


def _ratio(r: Mapping[str, float]) -> str:
    return f"{r['ratio']:.3f}x [{r['low']:.3f}, {r['high']:.3f}]"


def _num(pair: Mapping[str, Any]) -> str:
    v = pair.get("ndcg@10_ratio")
    return "-" if v is None else f"{v:.3f}x"
