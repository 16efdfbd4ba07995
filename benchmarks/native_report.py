"""How the native-hybrid comparison prints a record: the systems, the pair, the goal, and the
lines that say how it ran (the record itself is built by :mod:`~benchmarks.native_run`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from benchmarks.peer_report import systems_table

QUALITY = ("ndcg@10", "recall@10", "mrr@10")


def print_tables(record: Mapping[str, Any]) -> None:
    """Two tables (per system; ours / peer) and the goal, load, filter and config lines."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    cfg = record["config"]
    console.print(systems_table(record, QUALITY, f", top {cfg['top_k']}"))
    ratios = Table(title=f"ours / peer, {round(cfg['level'] * 100)} % paired bootstrap interval")
    for col in (
        "ours",
        "peer",
        "p50 ratio [interval]",
        "p95 ratio [interval]",
        "nDCG@10 ours - peer",
    ):
        ratios.add_column(col, justify="left" if col in ("ours", "peer") else "right")
    nd = record["ndcg@10_paired"]
    for p in record["pairs"]:
        ratios.add_row(
            p["ours"],
            p["peer"],
            _ratio(p["p50"]),
            _ratio(p["p95"]),
            f"{nd['delta']:+.4f} (p {nd['p']:.3f}; W/T/L {nd['W']}/{nd['T']}/{nd['L']})",
        )
    console.print(ratios)
    g = record["goal"]
    console.print(
        f"goal ({g['rule']}): {'MET' if g['met'] else 'NOT MET'} (latency "
        f"{'met' if g['latency_met'] else 'not met'}, quality "
        f"{'met' if g['quality_met'] else 'not met'}; p50 at {g['p50_over_goal']:.3f}x the goal)",
        highlight=False,
    )
    load = record["machine"]["load_average"]
    before = load["before"]
    console.print(
        f"load average (1 min): {before['load']:.2f} at start after {before['waited_s'] / 60:.0f} "
        f"min waiting for < {before['threshold']} (quiet: {before['quiet']}), during "
        f"{json.dumps(load['during'])}, {load['end']} at end; {record['machine']['cores']} cores",
        highlight=False,
    )
    peer = record["peer"]
    console.print(
        f"peer: pipeline {peer['pipeline']} (min_max, arithmetic_mean, weights "
        f"{peer['weights']}; {peer['docs']}), kNN {json.dumps(peer['knn'])}; filter "
        f"{peer.get('filter', 'tenant')}, records admitted "
        f"{json.dumps(peer['records_seen'])}",
        highlight=False,
    )
    ours = record["ours"]
    console.print(
        f"ours: {ours['index']} ({ours['documents']} documents, ingest check "
        f"{ours['ingest_seconds']} s), embedder {ours['embedder']} ({ours['embedder_runtime']}); "
        f"engine {record['engine']['name']} {record['engine']['version']}",
        highlight=False,
    )
    console.print(f"config: {json.dumps(cfg)}", highlight=False)
    console.print(f"versions: {json.dumps(record['versions'])}", highlight=False)


def _ratio(r: Mapping[str, float]) -> str:
    return f"{r['ratio']:.3f}x [{r['low']:.3f}, {r['high']:.3f}]"
