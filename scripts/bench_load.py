#!/usr/bin/env python
"""Load run: N concurrent clients for T seconds of mixed search / packet validate / ingest
against a real cluster on loopback. Bounded in time and count; stops by itself.

    python scripts/bench_load.py --clients 4 --seconds 60            # the benchmark
    python scripts/bench_load.py --clients 4 --seconds 30 --mix search   # search-only clients
    python scripts/bench_load.py --clients 2 --seconds 5 --embedder hash --json   # CI smoke

``--mix mixed`` (the default) draws each operation at random: 70 % search, 20 % packet validate,
10 % ingest; ``--mix search`` runs searches only.

Reports throughput, p50/p95/p99 per operation, errors, and cross-tenant hits (any hit, leg
result or packet member of another tenant). Exit status 1 when there is any error or leak.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import bench_client, bench_embedder, machine
from benchmarks.mixed_load import (
    MIXES,
    build_world,
    operation_rows,
    run_clients,
    searcher_counters,
)
from hybrid_es.settings import Settings


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--docs-per-tenant", type=int, default=60)
    ap.add_argument("--embedder", default="minilm", help="minilm | e5 | hash")
    ap.add_argument("--mix", choices=sorted(MIXES), default="mixed", help="operations drawn")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not (1 <= args.clients <= 32 and 0 < args.seconds <= 600):
        ap.error("clients must be 1..32 and seconds 0..600 (the run is bounded)")
    return args


def print_result(result: dict[str, Any], wall: float, errors: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    c = Console()
    c.print(
        f"command: {result['command']}  (nproc {result['machine']['nproc']}, "
        f"{result['embedder']}, {result['fusion_path']}, embed threads "
        f"{result['embed_threads']}, query cache {result['query_cache']})"
    )
    table = Table(title=f"{result['clients']} clients ({result['mix']}) for {wall:.1f} s")
    for col in ("operation", "count", "ops/s", "p50 ms", "p95 ms", "p99 ms"):
        table.add_column(col, justify="right" if col != "operation" else "left")
    for op, row in result["operations"].items():
        cells = (row["count"], row["per_s"], row["p50_ms"], row["p95_ms"], row["p99_ms"])
        table.add_row(op, *map(str, cells))
    c.print(table)
    c.print(
        f"total {result['total_ops_per_s']} ops/s; errors {result['errors']}; "
        f"cross-tenant hits {result['cross_tenant_hits']}"
    )
    for e in errors[:5]:
        c.print(f"  error: {e}", markup=False)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    s = Settings()
    client = bench_client(s, max_retries=2)
    emb = bench_embedder(args.embedder, s)
    world = build_world(client, emb, s, args.docs_per_tenant)
    try:
        tally, wall = run_clients(world, MIXES[args.mix], args.clients, args.seconds)
    finally:
        world.delete()
    result = {
        "command": " ".join(["python", "scripts/bench_load.py", *sys.argv[1:]]),
        "machine": machine(client),
        "clients": args.clients,
        "mix": args.mix,
        "seconds": round(wall, 1),
        "embedder": getattr(emb, "model_id", args.embedder),
        "embed_threads": getattr(emb, "query_threads", None),
        **searcher_counters(world.searcher),
        "setup_ingest_s": round(world.setup_s, 1),
        "operations": operation_rows(tally, wall),
        "total_ops_per_s": round(sum(len(x) for x in tally.lat.values()) / wall, 2),
        "errors": len(tally.errors),
        "error_samples": tally.errors[:5],
        "cross_tenant_hits": len(tally.leaks),
        "fusion_path": tally.paths.most_common(1)[0][0] if tally.paths else "",
        "fusion_paths": dict(tally.paths),
        "finished_at": datetime.now(UTC).isoformat(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_result(result, wall, tally.errors)
    return 1 if tally.errors or tally.leaks else 0


if __name__ == "__main__":
    sys.exit(main())
