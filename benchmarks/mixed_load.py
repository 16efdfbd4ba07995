"""The mixed-load benchmark (``scripts/bench_load.py``): N client threads for T seconds of search,
packet validation and ingest, drawn at random, against three tenants of synthetic records on a
real cluster. Bounded in time and in count; every search is checked for another tenant's hit,
leg result or packet member.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmarks.bench import percentile
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder
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


@dataclass
class World:
    """The indices, their writer and readers, and one packet per tenant."""

    client: Engine
    layout: IndexLayout
    ingestor: Ingestor
    searcher: HybridSearcher
    service: PacketService
    packet_ids: dict[str, str]
    setup_s: float

    def delete(self) -> None:
        names = [*self.client.indices(f"{self.layout.chunks}*"), self.layout.corpus_state]
        self.client.delete_index(",".join([*names, self.layout.packets]))


def tenant_records(tenant: str, count: int, rnd: random.Random) -> list[Document]:
    """``count`` synthetic records of ``tenant``, two of :data:`TOPICS` each (drawn from
    ``rnd``): the corpus of the mixed load and of the cluster's node-loss test."""
    return [
        Document(
            id=f"{tenant}-doc-{i}",
            tenant=tenant,
            title=f"{tenant} record {i}",
            body=f"{rnd.choice(TOPICS)}. {rnd.choice(TOPICS)} for {tenant}, item {i}.",
        )
        for i in range(count)
    ]


def build_world(
    client: Engine, embedder: Embedder, settings: Settings, docs_per_tenant: int
) -> World:
    """Fresh indices with ``docs_per_tenant`` synthetic records a tenant, a warm searcher and a
    packet for each tenant."""
    tag = uuid.uuid4().hex[:8]
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-load-{tag}",
        packets=f"hybrid-es-packets-load-{tag}",
        corpus_state=f"hybrid-es-corpus-state-load-{tag}",
        mode=settings.tenancy,
    )
    state = CorpusState(client, layout.corpus_state, url=client.url)
    # Synthetic records with no ACL of their own: every user of the tenant may read them.
    ing = Ingestor(client, embedder, layout=layout, corpus_state=state, default_acl=(EVERYONE,))
    rnd = random.Random(7)
    t0 = time.perf_counter()
    for t in TENANTS:
        ing.ingest(tenant_records(t, docs_per_tenant, rnd), Principal(tenant=t, user_id="loader"))
    setup_s = time.perf_counter() - t0
    searcher = HybridSearcher(
        client,
        embedder,
        layout=layout,
        query_cache_size=settings.query_cache_size,
        embed_batch=settings.embed_batch,
    )
    searcher.warm_up()
    service = PacketService(searcher, PacketStore(client, layout.packets))
    pids = {
        t: service.build(
            f"CASE-{t}", "load", "contract rate April", _agent(t), RequestScope()
        ).manifest.packet_id
        for t in TENANTS
    }
    return World(client, layout, ing, searcher, service, pids, setup_s)


def _agent(tenant: str) -> Principal:
    return Principal(tenant=tenant, user_id="agent")


@dataclass
class Tally:
    """What the clients saw: latencies per operation and per search stage, errors, leaks."""

    mix: Mapping[str, float]
    lat: dict[str, list[float]] = field(default_factory=dict)
    stages: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STAGES})
    errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    paths: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.lat = {op: [] for op in self.mix}


def _operate(world: World, op: str, tenant: str, r: random.Random, tally: Tally, tag: str) -> None:
    p = _agent(tenant)
    if op == "search":
        resp = world.searcher.search(r.choice(TOPICS), p, RequestScope(), rerank=False)
        ids = [*resp.legs["sparse"], *resp.legs["dense"]]
        bad = [h.chunk_id for h in resp.hits if h.source.get("tenant") != tenant]
        bad += [i for i in ids if not i.startswith(f"{tenant}-")]
        with tally.lock:
            for stage in STAGES:
                tally.stages[stage].append(resp.timings_ms.get(stage, 0.0))
            tally.paths[resp.fusion_path] += 1
            tally.leaks.extend(bad)
    elif op == "packet_validate":
        world.service.validate(world.packet_ids[tenant], p, scope=RequestScope())
    else:
        doc = Document(
            id=f"{tenant}-new-{tag}", tenant=tenant, body=f"{r.choice(TOPICS)} update {tag}"
        )
        world.ingestor.ingest([doc], p)


def run_clients(
    world: World, mix: Mapping[str, float], clients: int, seconds: float
) -> tuple[Tally, float]:
    """``clients`` threads drawing operations from ``mix`` until ``seconds`` pass (or MAX_OPS
    operations); the tally and the wall seconds."""
    tally = Tally(mix)
    deadline = time.perf_counter() + seconds
    counter = iter(range(MAX_OPS))

    def worker(wid: int) -> None:
        r = random.Random(wid)
        while time.perf_counter() < deadline:
            n = next(counter, None)
            if n is None:
                return
            tenant = r.choice(TENANTS)
            op = r.choices(list(mix), list(mix.values()))[0]
            start = time.perf_counter()
            try:
                _operate(world, op, tenant, r, tally, f"{wid}-{n}")
            except Exception as exc:
                with tally.lock:
                    tally.errors.append(f"{op}: {type(exc).__name__}: {exc}"[:300])
                continue
            with tally.lock:
                tally.lat[op].append((time.perf_counter() - start) * 1000)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return tally, time.perf_counter() - started


def operation_rows(tally: Tally, wall: float) -> dict[str, dict[str, Any]]:
    """Count, rate and p50/p95/p99 per operation and per reported search stage."""
    series = [*tally.lat.items(), *((f"search.{k}", v) for k, v in tally.stages.items() if v)]
    return {
        op: {
            "count": len(xs),
            "per_s": round(len(xs) / wall, 2),
            "p50_ms": round(percentile(xs, 50), 1),
            "p95_ms": round(percentile(xs, 95), 1),
            "p99_ms": round(percentile(xs, 99), 1),
        }
        for op, xs in series
    }


def searcher_counters(searcher: HybridSearcher) -> dict[str, Any]:
    """The query-vector cache's and the query batcher's counters."""
    cache, batcher = searcher.query_cache, searcher.query_batcher
    return {
        "query_cache": {"size": cache.size, "hits": cache.hits, "misses": cache.misses},
        "embed_batch": {
            "max": batcher.max_batch,
            "model_calls": batcher.batches,
            "queries": batcher.queries,
        },
    }
