"""What each tenancy mode costs: shards, first-ingest time per tenant, search latency and the
BM25 score side channel, at growing tenant counts. Prints a table (``--json`` for the raw rows).

    python scripts/bench_tenancy.py [--tenants 1,25,100] [--docs 20] [--queries 200]

Records are synthetic (a fixed vocabulary), vectors from the model-free hashing embedder the
tests use, so the numbers are about the cluster and the layout, not about a model. The cluster is
Elasticsearch or OpenSearch (``hybrid_es.connect`` probes which).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from benchmarks.bench import bench_client, percentile, print_rows
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.evaluation.metering import HashEmbedder
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import EVERYONE, Principal, RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout

WORDS = [
    "rate",
    "contract",
    "april",
    "room",
    "shower",
    "tariff",
    "audit",
    "booking",
    "hotel",
    "kyoto",
    "season",
    "clause",
]


def _docs(tenant: str, n: int, rnd: random.Random) -> list[Document]:
    return [
        Document(
            id=f"d{i}",
            tenant=tenant,
            body=" ".join(rnd.choice(WORDS) for _ in range(30)),
            acl_groups=(EVERYONE,),
        )
        for i in range(n)
    ]


def _shards(client: Engine) -> int:
    return int(client.health()["active_shards"])


def _drop(client: Engine, patterns: str) -> None:
    """Delete the indices matching ``patterns`` (comma-separated), listed by name first: a
    wildcard delete is refused where ``action.destructive_requires_name`` is set."""
    names = client.indices(patterns)
    if names:
        client.delete_index(",".join(names))


def run(client: Engine, mode: str, tenants: int, docs: int, queries: int) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-tb-{tag}",
        packets=f"hybrid-es-packets-tb-{tag}",
        corpus_state=f"hybrid-es-corpus-state-tb-{tag}",
        mode=mode,  # type: ignore[arg-type]
    )
    emb = HashEmbedder()
    rnd = random.Random(7)
    ing = Ingestor(
        client, emb, layout=layout, corpus_state=CorpusState(client, layout.corpus_state)
    )
    names = [f"t{i:04d}" for i in range(tenants)]
    before = _shards(client)
    t = time.perf_counter()
    for name in names:
        ing.ingest(_docs(name, docs, rnd), Principal(tenant=name, user_id="w"))
    ingest_s = time.perf_counter() - t
    shards = _shards(client) - before
    searcher = HybridSearcher(client, emb, layout=layout, native_rrf=False)
    for name in names[:3]:  # warm-up
        searcher.search("rate", Principal(tenant=name, user_id="u"), RequestScope(), rerank=False)
    lat = []
    for _ in range(queries):
        who = Principal(tenant=rnd.choice(names), user_id="u")
        resp = searcher.search(" ".join(rnd.sample(WORDS, 2)), who, RequestScope(), rerank=False)
        lat.append(resp.timings_ms["total"])
    _drop(client, f"{layout.chunks_pattern()},{layout.corpus_state}")
    if mode == "shared":
        client.delete_index(layout.chunks)
    return {
        "mode": mode,
        "tenants": tenants,
        "docs_per_tenant": docs,
        "shards_added": shards,
        "ingest_s_per_tenant": round(ingest_s / tenants, 3),
        "search_p50_ms": round(percentile(lat, 50), 1),
        "search_p95_ms": round(percentile(lat, 95), 1),
    }


def side_channel(client: Engine, mode: str) -> dict[str, Any]:
    """Tenant A's BM25 score for a word before and after tenant B writes three deleted records
    holding it: in a shared index B's records move A's score (a side channel)."""
    tag = uuid.uuid4().hex[:8]
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-tb-{tag}",
        corpus_state=f"hybrid-es-corpus-state-tb-{tag}",
        mode=mode,  # type: ignore[arg-type]
    )
    emb = HashEmbedder()
    state = CorpusState(client, layout.corpus_state)
    ing = Ingestor(client, emb, layout=layout, corpus_state=state)
    a, b = Principal(tenant="A", user_id="u"), Principal(tenant="B", user_id="w")
    open_acl = (EVERYONE,)
    ing.ingest(
        [
            Document(id="1", tenant="A", body="the zanzibar tariff", acl_groups=open_acl),
            Document(id="2", tenant="A", body="an unrelated note", acl_groups=open_acl),
        ],
        a,
    )
    searcher = HybridSearcher(client, emb, layout=layout, native_rrf=False, pipeline="bm25")

    def score() -> float:
        (hit,) = searcher.search("zanzibar", a, RequestScope(), rerank=False).hits
        return float(hit.sparse_score or 0.0)

    before = score()
    ing.ingest(
        [
            Document(id=f"b{i}", tenant="B", body="zanzibar zanzibar", deleted=True)
            for i in range(3)
        ],
        b,
    )
    after = score()
    _drop(client, f"{layout.chunks_pattern()},{layout.corpus_state}")
    return {
        "mode": mode,
        "a_score_before": round(before, 3),
        "a_score_after_b_writes": round(after, 3),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tenants", default="1,25,100")
    p.add_argument("--docs", type=int, default=20)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    client = bench_client()
    rows = [
        run(client, mode, int(n), args.docs, args.queries)
        for n in args.tenants.split(",")
        for mode in ("shared", "index-per-tenant")
    ]
    channel = [side_channel(client, mode) for mode in ("shared", "index-per-tenant")]
    if args.json:
        print(json.dumps({"cost": rows, "side_channel": channel}, indent=2))
        return
    print_rows(f"tenancy modes ({args.docs} records per tenant, {args.queries} searches)", rows)
    print_rows("BM25 side channel: tenant A's score, before and after tenant B writes", channel)


if __name__ == "__main__":
    main()
