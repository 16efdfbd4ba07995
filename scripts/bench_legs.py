#!/usr/bin/env python
"""What the legs' records cost: legs that return every record, against legs that return ids and
scores followed by one read of the fused head's records (what the searcher does for a head
smaller than the fusion window).

For each query of a collection, both shapes run against the same index with the same policy
filter and vector (embedded once, before anything is timed), interleaved query by query:

- ``records in the legs``: both legs in one ``_msearch``, each returning its ``window`` records;
- ``ids, then the head``: both legs returning ids and scores, then ``records_body`` for the
  first ``--top-k`` fused keys (client-side linear fusion, the default);
- ``bm25 leg alone``, both ways: the sparse leg with and without its records.

Reports per search: p50 / p95 ms of the round trip(s), this process's CPU ms, the cluster's
CPU ms (from ``/proc`` for the nodes on this machine; none elsewhere: run it on an otherwise idle
cluster) and the KB of JSON received::

    python scripts/bench_legs.py ../shared/datasets/scifact \\
        --index hybrid-es-chunks-eval-scifact-minilm-v2 --queries 300 --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import bench_client, bench_embedder, machine, print_rows, summary
from hybrid_es.evaluation.collection import EVAL_PRINCIPAL
from hybrid_es.evaluation.cookbook import is_cookbook, load_codebase
from hybrid_es.ingest.beir import read_queries
from hybrid_es.models import RequestScope
from hybrid_es.retrieval import fusion as F
from hybrid_es.retrieval.dialects import dialect_for
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import SOURCE_EXCLUDES, RetrievalParams, records_body


def engine_pids(es: Any) -> list[int]:
    """The process ids of the cluster's nodes that run on this machine (``/proc`` has them)."""
    nodes = es.request("GET", "/_nodes/process")["nodes"].values()
    pids = [int(n["process"]["id"]) for n in nodes]
    return [p for p in pids if Path(f"/proc/{p}/stat").exists()]


def engine_cpu_ms(pids: list[int]) -> float:
    """CPU ms the local nodes have used so far (``/proc``: exact, where the node stats' process
    CPU is refreshed once a second only)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) * 1000 / tick
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--index", required=True)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--top-k", type=int, default=10, help="the head whose records are read")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    args = ap.parse_args()

    es = bench_client(install=False)
    pids = engine_pids(es)
    emb = bench_embedder(args.embedder)
    if is_cookbook(args.dataset):
        texts = [q for q, _ in load_codebase(args.dataset, tenant="eval").queries]
    else:
        texts = list(read_queries(args.dataset).values())
    texts = texts[: args.queries]
    vectors = [emb.embed_queries([t])[0].tolist() for t in texts]
    d = dialect_for(es.flavor)
    params = RetrievalParams()
    policy = policy_filter(EVAL_PRINCIPAL, RequestScope(), datetime.now(UTC))

    def msearch(bodies: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        lines: list[dict[str, Any]] = []
        for body in bodies:
            d.assert_policy(body, policy)
            lines += [{"index": args.index}, body]
        items = es.msearch(lines)
        return items, len(json.dumps(items))

    def with_records(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "_source": {"excludes": list(SOURCE_EXCLUDES)}}

    def legs(text: str, vector: list[float], records: bool) -> int:
        bodies = [d.sparse_body(text, policy, params), d.dense_body(vector, policy, params)]
        if records:
            _, size = msearch([with_records(b) for b in bodies])
            return size
        (sparse, dense), size = msearch(bodies)
        scores = [
            {h["_id"]: float(h["_score"]) for h in r["hits"]["hits"]} for r in (sparse, dense)
        ]
        head = [f.doc_id for f in F.hybrid_linear(scores[0], scores[1], F.DEFAULT_ALPHA)]
        head = head[: args.top_k]
        if head:
            size += msearch([records_body(head, policy)])[1]
        return size

    def bm25(text: str, records: bool) -> int:
        body = d.sparse_body(text, policy, params)
        if records:
            return msearch([with_records(body)])[1]
        (resp,), size = msearch([body])
        head = [h["_id"] for h in resp["hits"]["hits"][: args.top_k]]
        return size + (msearch([records_body(head, policy)])[1] if head else 0)

    shapes: dict[str, Callable[[int], int]] = {
        "records in the legs": lambda i: legs(texts[i], vectors[i], True),
        "ids, then the head": lambda i: legs(texts[i], vectors[i], False),
        "bm25 leg, records in it": lambda i: bm25(texts[i], True),
        "bm25 leg, ids then the head": lambda i: bm25(texts[i], False),
    }
    for run in shapes.values():  # warm-up: each shape once over a few queries
        for i in range(min(10, len(texts))):
            run(i)
    wall: dict[str, list[float]] = {n: [] for n in shapes}
    cpu = dict.fromkeys(shapes, 0.0)
    engine = dict.fromkeys(shapes, 0.0)
    size = dict.fromkeys(shapes, 0)
    for i in range(len(texts)):
        for name, run in shapes.items():
            e0, c0, t0 = engine_cpu_ms(pids), time.process_time(), time.perf_counter()
            size[name] += run(i)
            wall[name].append((time.perf_counter() - t0) * 1000)
            cpu[name] += (time.process_time() - c0) * 1000
            engine[name] += engine_cpu_ms(pids) - e0
    n = len(texts)
    rows = [
        {
            "shape": name,
            "p50_ms": summary(wall[name])["p50"],
            "p95_ms": summary(wall[name])["p95"],
            "client_cpu_ms": round(cpu[name] / n, 2),
            "engine_cpu_ms": round(engine[name] / n, 2) if pids else None,
            "kb": round(size[name] / n / 1024, 1),
        }
        for name in shapes
    ]
    cmd = "python scripts/bench_legs.py " + " ".join(sys.argv[1:])
    report = {"command": cmd, "machine": machine(es), "queries": n, "top_k": args.top_k}
    report["rows"] = rows
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_rows(f"{args.index}: {n} queries, head {args.top_k}", rows)


if __name__ == "__main__":
    main()
