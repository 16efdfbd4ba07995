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
import random
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.evaluation.bench import bench_client, bench_embedder, machine, percentile
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import EVERYONE, Principal, RequestScope
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout

MAX_OPS = 100_000
MIXES = {
    "mixed": {"search": 0.7, "packet_validate": 0.2, "ingest": 0.1},
    "search": {"search": 1.0},
}
STAGES = ("embed", "retrieval")
"""Stages of a search reported on their own (``timings_ms``: query embedding, the msearch)."""
TENANTS = ("load-A", "load-B", "load-C")
TOPICS = [
    "contract rate April",
    "accessible room roll-in shower",
    "cancellation terms",
    "breakfast included",
    "KYO-H12 tariff",
    "itinerary Kyoto",
    "visa checklist",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--docs-per-tenant", type=int, default=60)
    ap.add_argument("--embedder", default="minilm", help="minilm | e5 | hash")
    ap.add_argument("--mix", choices=sorted(MIXES), default="mixed", help="operations drawn")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not (1 <= args.clients <= 32 and 0 < args.seconds <= 600):
        ap.error("clients must be 1..32 and seconds 0..600 (the run is bounded)")

    s = Settings()
    client = bench_client(s, max_retries=2)
    tag = uuid.uuid4().hex[:8]
    index, state_index, packets = (
        f"hybrid-es-chunks-load-{tag}",
        f"hybrid-es-corpus-state-load-{tag}",
        f"hybrid-es-packets-load-{tag}",
    )
    emb = bench_embedder(args.embedder, s)
    state = CorpusState(client, state_index, url=client.url)
    layout = IndexLayout(chunks=index, packets=packets, corpus_state=state_index, mode=s.tenancy)
    # Synthetic records with no ACL of their own: every user of the tenant may read them.
    ing = Ingestor(client, emb, layout=layout, corpus_state=state, default_acl=(EVERYONE,))
    rnd = random.Random(7)
    docs = [
        Document(
            id=f"{t}-doc-{i}",
            tenant=t,
            title=f"{t} record {i}",
            body=f"{rnd.choice(TOPICS)}. {rnd.choice(TOPICS)} for {t}, item {i}.",
        )
        for t in TENANTS
        for i in range(args.docs_per_tenant)
    ]
    t0 = time.perf_counter()
    for t in TENANTS:
        ing.ingest([d for d in docs if d.tenant == t], Principal(tenant=t, user_id="loader"))
    setup_s = time.perf_counter() - t0
    searcher = HybridSearcher(
        client,
        emb,
        layout=layout,
        query_cache_size=s.query_cache_size,
        embed_batch=s.embed_batch,
    )
    searcher.warm_up()
    service = PacketService(searcher, PacketStore(client, packets))
    pids = {}
    for t in TENANTS:
        p = Principal(tenant=t, user_id="agent")
        pids[t] = service.build(
            f"CASE-{t}", "load", "contract rate April", p, RequestScope()
        ).manifest.packet_id

    mix = MIXES[args.mix]
    lat: dict[str, list[float]] = {op: [] for op in mix}
    stages: dict[str, list[float]] = {stage: [] for stage in STAGES}
    errors: list[str] = []
    leaks: list[str] = []
    paths: Counter[str] = Counter()
    lock = threading.Lock()
    deadline = time.perf_counter() + args.seconds
    counter = iter(range(MAX_OPS))

    def worker(wid: int) -> None:
        r = random.Random(wid)
        while time.perf_counter() < deadline:
            try:
                n = next(counter)
            except StopIteration:
                return
            tenant = r.choice(TENANTS)
            p = Principal(tenant=tenant, user_id="agent")
            op = r.choices(list(mix), list(mix.values()))[0]
            start = time.perf_counter()
            try:
                if op == "search":
                    resp = searcher.search(r.choice(TOPICS), p, RequestScope(), rerank=False)
                    with lock:
                        for stage in STAGES:
                            stages[stage].append(resp.timings_ms.get(stage, 0.0))
                        paths[resp.fusion_path] += 1
                    ids = [*resp.legs["sparse"], *resp.legs["dense"]]
                    bad = [h.chunk_id for h in resp.hits if h.source.get("tenant") != tenant]
                    bad += [i for i in ids if not i.startswith(f"{tenant}-")]
                    if bad:
                        with lock:
                            leaks.extend(bad)
                elif op == "packet_validate":
                    service.validate(pids[tenant], p, scope=RequestScope())
                else:
                    ing.ingest(
                        [
                            Document(
                                id=f"{tenant}-new-{wid}-{n}",
                                tenant=tenant,
                                body=f"{r.choice(TOPICS)} update {n}",
                            )
                        ],
                        p,
                    )
            except Exception as exc:
                with lock:
                    errors.append(f"{op}: {type(exc).__name__}: {exc}"[:300])
                continue
            with lock:
                lat[op].append((time.perf_counter() - start) * 1000)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.clients)]
    started = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - started
    client.delete_index(",".join([*client.indices(f"{index}*"), state_index, packets]))

    rows = {
        op: {
            "count": len(xs),
            "per_s": round(len(xs) / wall, 2),
            "p50_ms": round(percentile(xs, 50), 1),
            "p95_ms": round(percentile(xs, 95), 1),
            "p99_ms": round(percentile(xs, 99), 1),
        }
        for op, xs in [*lat.items(), *((f"search.{k}", v) for k, v in stages.items() if v)]
    }
    result = {
        "command": " ".join(["python", "scripts/bench_load.py", *sys.argv[1:]]),
        "machine": machine(client),
        "clients": args.clients,
        "mix": args.mix,
        "seconds": round(wall, 1),
        "embedder": getattr(emb, "model_id", args.embedder),
        "embed_threads": getattr(emb, "query_threads", None),
        "query_cache": {
            "size": searcher.query_cache.size,
            "hits": searcher.query_cache.hits,
            "misses": searcher.query_cache.misses,
        },
        "embed_batch": {
            "max": searcher.query_batcher.max_batch,
            "model_calls": searcher.query_batcher.batches,
            "queries": searcher.query_batcher.queries,
        },
        "setup_ingest_s": round(setup_s, 1),
        "operations": rows,
        "total_ops_per_s": round(sum(len(x) for x in lat.values()) / wall, 2),
        "errors": len(errors),
        "error_samples": errors[:5],
        "cross_tenant_hits": len(leaks),
        "fusion_path": paths.most_common(1)[0][0] if paths else "",
        "fusion_paths": dict(paths),
        "finished_at": datetime.now(UTC).isoformat(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        c = Console()
        c.print(
            f"command: {result['command']}  (nproc {result['machine']['nproc']}, "
            f"{result['embedder']}, {result['fusion_path']}, embed threads "
            f"{result['embed_threads']}, query cache {result['query_cache']})"
        )
        table = Table(title=f"{args.clients} clients ({args.mix}) for {wall:.1f} s")
        for col in ("operation", "count", "ops/s", "p50 ms", "p95 ms", "p99 ms"):
            table.add_column(col, justify="right" if col != "operation" else "left")
        for op, row in rows.items():
            table.add_row(
                op,
                str(row["count"]),
                str(row["per_s"]),
                str(row["p50_ms"]),
                str(row["p95_ms"]),
                str(row["p99_ms"]),
            )
        c.print(table)
        c.print(
            f"total {result['total_ops_per_s']} ops/s; errors {len(errors)}; "
            f"cross-tenant hits {len(leaks)}"
        )
        for e in errors[:5]:
            c.print(f"  error: {e}", markup=False)
    return 1 if errors or leaks else 0


if __name__ == "__main__":
    sys.exit(main())
