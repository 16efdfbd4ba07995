"""Node loss under load, on the local 3-node cluster (``scripts/es.sh --nodes 3``) with one
replica: client threads run mixed search / packet validate / ingest against every node's URL
(``HYBRID_ES_URL`` with several nodes) while one data node is SIGKILLed and, a while later,
started again; by default twice, first node 1 (the first URL the client names) and then the node
that holds most primaries of the chunks index.

Reported (a table on stdout; JSON too where ``HYBRID_ES_NODE_LOSS_REPORT`` names a file): errors
by operation, class and message, when (seconds after the kill) and whether retryable; the p50 /
p95 / max of each operation before, during (kill to green) and after; the cluster's health over
time (yellow, green), and the outage window of searches (first and last failure, the longest
time without a successful search).

Asserted:

- no error before a kill or after the cluster is green again, and during an outage only
  retryable ones (the cluster unreachable or timing out, a 429/502/503/504, a search refused
  because a shard copy was lost mid-request);
- 0 cross-tenant hits: any hit, leg result, packet member or verdict discard of another tenant;
- 0 acknowledged chunk writes lost: after recovery (and a rerun of every ingest that failed),
  the chunks of each tenant are exactly those of the documents whose ingest was acknowledged;
- a rerun of an interrupted ingest (a writer process SIGKILLed mid-way during the outage, and
  every load ingest that failed) writes nothing twice: no chunk beyond the expected ones, the
  documents written whole before are skipped and keep their ``_version``;
- watermarks only move forward, and each is at least what every acknowledged ingest reported;
  the killed writer's change moves the watermark when the rerun repairs its marker;
- packet verdicts: a packet whose member changed during the outage is never ``reuse`` (during
  the outage, or after: ``refresh_required``); a validate that starts after an acknowledged
  ingest of its tenant is never ``reuse``; a packet of a tenant that nothing wrote to is
  ``reuse`` again after recovery.

It runs on demand, not in CI (a node's restart under load takes 1-3 minutes on the 2-core CI
machine, twice), where ``HYBRID_ES_NODE_LOSS=1`` and ``HYBRID_ES_CLUSTER_URL`` names the
cluster's first node (or all its nodes, comma-separated); ``scripts/node_loss.sh`` starts the
cluster, runs it and stops the cluster.
Tunable by environment: ``HYBRID_ES_NODE_LOSS_VICTIMS`` (default ``1,primaries``: node numbers,
or ``primaries``), ``..._CLIENTS`` (3), ``..._BEFORE_S`` (8), ``..._OUTAGE_S`` (10: node down
before its restart begins), ``..._AFTER_S`` (8), ``..._URLS`` (``all``: the load's client names
every node; ``first``: node 1 only, for comparison). The test's own steps (the canary change,
the reruns, the counts) always use every node.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from benchmarks.bench import percentile
from benchmarks.mixed_load import MIXES, TOPICS, tenant_records
from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.errors import (
    BulkIndexError,
    EngineError,
    EngineUnavailableError,
    HybridEsError,
)
from hybrid_es.evaluation.metering import HashEmbedder
from hybrid_es.identity import chunk_id
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import EVERYONE, Principal, RequestScope
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from tests.cluster.settings import cluster_settings
from tests.conftest import unguarded

CLUSTER_URL = os.environ.get("HYBRID_ES_CLUSTER_URL", "")
NODES = int(os.environ.get("HYBRID_ES_CLUSTER_NODES", "3"))
ON_DEMAND = os.environ.get("HYBRID_ES_NODE_LOSS", "") == "1"
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not (CLUSTER_URL and ON_DEMAND),
        reason="on demand (minutes: each node restart under load takes 1-3 min here), on the local "
        "3-node cluster: scripts/node_loss.sh (or scripts/es.sh --nodes 3 start, then "
        "HYBRID_ES_NODE_LOSS=1 HYBRID_ES_CLUSTER_URL=http://127.0.0.1:9271)",
    ),
]


def _env(name: str, default: str) -> str:
    return os.environ.get(f"HYBRID_ES_NODE_LOSS_{name}", default)


VICTIMS = [v.strip() for v in _env("VICTIMS", "1,primaries").split(",") if v.strip()]
CLIENTS = int(_env("CLIENTS", "3"))
BEFORE_S = float(_env("BEFORE_S", "8"))
OUTAGE_S = float(_env("OUTAGE_S", "10"))
AFTER_S = float(_env("AFTER_S", "8"))
LOAD_URLS = _env("URLS", "all")
"""``all``: the load's client names every node; ``first``: node 1 only (as before several URLs
were possible: losing node 1 then takes that client down until the node is back)."""
REPORT = _env("REPORT", "")

ROOT = Path(__file__).resolve().parents[2]
ES_SH = ROOT / "scripts" / "es.sh"
WRITER = Path(__file__).with_name("node_loss_ingest.py")
WRITERS = ("loss-A", "loss-B")
"""Tenants the load ingests into."""
CONTROL = "loss-C"
"""Only read: its packet must be ``reuse`` again after recovery."""
CANARY = "loss-D"
"""Only written by the canary change of each round: its packets' verdicts turn on that alone."""
TENANTS = (*WRITERS, CONTROL, CANARY)
KILLED = "loss-K"
"""The tenant of the writer process killed mid-way (its pending marker touches no other)."""
DOCS_PER_TENANT = 30
MIX = MIXES["mixed"]
"""The mixed load of scripts/bench_load.py, and its topics."""
RETRYABLE_STATUS = (429, 502, 503, 504)


# -- the cluster ------------------------------------------------------------------------------


def node_urls() -> list[str]:
    """Every node's URL: HYBRID_ES_CLUSTER_URL's list, or its first node's port + 0..N-1."""
    if "," in CLUSTER_URL:
        return [u.strip() for u in CLUSTER_URL.split(",")]
    parts = urlsplit(CLUSTER_URL)
    port = parts.port or 9271
    host = parts.hostname or "127.0.0.1"
    return [urlunsplit((parts.scheme, f"{host}:{port + i}", "", "", "")) for i in range(NODES)]


def es_sh(*args: str) -> subprocess.CompletedProcess[str]:
    """scripts/es.sh on this cluster (its first HTTP port from the URL)."""
    port = str(urlsplit(node_urls()[0]).port or 9271)
    return subprocess.run(
        [str(ES_SH), "--nodes", str(NODES), *args],
        env={**os.environ, "HYBRID_ES_PORT": port},
        text=True,
        capture_output=True,
        timeout=420,
    )


def primaries_by_node(es: Engine, index: str) -> dict[int, int]:
    shards = es.request(
        "GET", f"/_cat/shards/{index}", params={"format": "json", "h": "prirep,node"}
    )
    counts = dict.fromkeys(range(1, NODES + 1), 0)
    for s in shards:
        number = int(str(s.get("node") or "-0").rsplit("-", 1)[-1] or 0)
        if s.get("prirep") == "p" and number in counts:
            counts[number] += 1
    return counts


def wait_green(es: Engine, seconds: float = 180) -> dict[str, Any]:
    """Cluster health once green (each wait shorter than the client's request timeout)."""
    deadline = time.monotonic() + seconds
    while True:
        health = es.health(wait_for_status="green", timeout="20s")
        if health["status"] == "green" or time.monotonic() > deadline:
            return health


def pick_victim(counts: dict[int, int], spec: str, killed: list[int]) -> int:
    """Node ``spec``, or the node with most primaries (on a tie, one not killed yet)."""
    if spec.isdigit():
        return int(spec)
    return max(counts, key=lambda i: (counts[i], i not in killed, -i))


# -- what the load records --------------------------------------------------------------------


@dataclass
class Op:
    op: str
    tenant: str
    start: float
    end: float
    error: str = ""
    """``Class: message`` (numbers and ids blanked, so that errors of one kind group)."""
    retryable: bool = True
    verdict: str = ""

    @property
    def at(self) -> float:
        """When it counts: a success when it began (its latency is that of its phase), a
        failure when it failed (an operation begun before a kill fails because of it)."""
        return self.end if self.error else self.start


@dataclass
class Round:
    victim: int
    spec: str
    primaries: dict[int, int]
    kill: float = 0.0
    restart: float = 0.0
    green: float = 0.0
    end: float = 0.0
    canary: dict[str, Any] = field(default_factory=dict)
    killed_writer: dict[str, Any] = field(default_factory=dict)


def retryable(exc: BaseException) -> bool:
    """The kinds a client may retry: no answer or a timeout, an overloaded or unavailable
    answer, or a search refused because a shard copy went away under it."""
    if isinstance(exc, EngineUnavailableError):
        return True
    if isinstance(exc, EngineError):
        return exc.status in RETRYABLE_STATUS
    if isinstance(exc, BulkIndexError):
        return all(f.get("status") in RETRYABLE_STATUS for f in exc.failed)
    return isinstance(exc, HybridEsError) and "refusing a partial answer" in exc.message


def error_kind(exc: BaseException) -> str:
    text = str(exc.message if isinstance(exc, HybridEsError) else exc)
    urls = re.findall(r"https?://[^\s,]+", text)  # kept: which node
    text = re.sub(r"https?://[^\s,]+", "<url>", text)
    text = re.sub(r"\[[^\]]*\]", "[..]", text)
    text = re.sub(r"\b[0-9a-f]{16,}\b|\d+", "N", text)
    for url in urls:
        text = text.replace("<url>", url, 1)
    return f"{type(exc).__name__}: {text}"[:180]


class Load:
    """Client threads drawing operations from MIX until stopped; every outcome recorded."""

    def __init__(
        self,
        searcher: HybridSearcher,
        service: PacketService,
        ingestor: Ingestor,
        packets: dict[str, str],
    ) -> None:
        self.searcher, self.service, self.ingestor, self.packets = (
            searcher,
            service,
            ingestor,
            packets,
        )
        self.ops: list[Op] = []
        self.leaks: list[str] = []
        self.acked: dict[str, list[Document]] = {t: [] for t in TENANTS}
        self.ack_times: dict[str, list[float]] = {t: [] for t in TENANTS}
        self.report_watermarks: dict[str, list[int]] = {t: [] for t in TENANTS}
        self.errored: list[Document] = []
        self.short_reports: list[str] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._worker, args=(i,), daemon=True) for i in range(CLIENTS)
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)

    def _worker(self, wid: int) -> None:
        r = random.Random(wid)
        n = 0
        while not self.stop.is_set():
            n += 1
            op = r.choices(list(MIX), list(MIX.values()))[0]
            tenant = r.choice(WRITERS if op == "ingest" else TENANTS)
            p = Principal(tenant=tenant, user_id="agent")
            rec = Op(op, tenant, time.monotonic(), 0.0)
            doc: Document | None = None
            try:
                if op == "search":
                    self._search(r.choice(TOPICS), p)
                elif op == "packet_validate":
                    verdict = self.service.validate(self.packets[tenant], p, scope=RequestScope())
                    rec.verdict = verdict.kind
                    self._check_members(tenant, verdict.discard)
                else:
                    doc = Document(
                        id=f"{tenant}-new-{wid}-{n}",
                        tenant=tenant,
                        title=f"{tenant} update {n}",
                        body=f"{r.choice(TOPICS)} update {n} for {tenant}",
                    )
                    report = self.ingestor.ingest([doc], Principal(tenant=tenant, user_id="loader"))
                    with self.lock:
                        self.acked[tenant].append(doc)
                        self.ack_times[tenant].append(time.monotonic())
                        if tenant in report.watermarks:
                            self.report_watermarks[tenant].append(report.watermarks[tenant])
                        if report.chunks != len(self.ingestor.chunker(doc)):
                            self.short_reports.append(f"{doc.id}: {report.chunks} chunks")
            except Exception as exc:
                rec.error, rec.retryable = error_kind(exc), retryable(exc)
                if doc is not None:
                    with self.lock:
                        self.errored.append(doc)
                time.sleep(0.2)  # a failing cluster is not hammered in a tight loop
            rec.end = time.monotonic()
            with self.lock:
                self.ops.append(rec)

    def _search(self, query: str, p: Principal) -> None:
        resp = self.searcher.search(query, p, RequestScope(), rerank=False)
        prefix = f"{p.tenant}-"
        seen = [
            *(h.chunk_id for h in resp.hits),
            *resp.legs.get("sparse", ()),
            *resp.legs.get("dense", ()),
            *resp.reranker_inputs,
        ]
        bad = [c for c in seen if not c.startswith(prefix)]
        bad += [h.chunk_id for h in resp.hits if h.source.get("tenant") != p.tenant]
        if bad:
            with self.lock:
                self.leaks.extend(bad)

    def _check_members(self, tenant: str, chunk_ids: tuple[str, ...]) -> None:
        bad = [c for c in chunk_ids if not c.startswith(f"{tenant}-")]
        if bad:
            with self.lock:
                self.leaks.extend(bad)


class Monitor:
    """Samples cluster health and every tenant's watermark about once a second."""

    def __init__(self, es: Engine, state: Any) -> None:
        self.es = es.with_options(request_timeout=5, max_retries=1)
        self.state = state
        self.health: list[tuple[float, str, int]] = []
        self.watermarks: dict[str, list[int]] = {t: [] for t in (*TENANTS, KILLED)}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(1.0):
            try:
                h = self.es.health()
                self.health.append((time.monotonic(), h["status"], h["number_of_nodes"]))
            except HybridEsError:
                self.health.append((time.monotonic(), "no answer", 0))
            for t, xs in self.watermarks.items():
                with contextlib.suppress(HybridEsError):
                    xs.append(self.state.watermark(t))


# -- the parts of a round ---------------------------------------------------------------------


def with_retry(fn: Callable[[], Any], *, seconds: float) -> Any:
    """``fn()``, retried on retryable errors for up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return fn()
        except Exception as exc:
            if not retryable(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def start_writer(settings: Settings, tenant: str, docs: list[Document]) -> subprocess.Popen[str]:
    job = {
        "url": settings.url,
        "username": settings.username,
        "password": settings.password.get_secret_value() if settings.password else "",
        "chunks": settings.chunks_index,
        "packets": settings.packets_index,
        "corpus_state": settings.corpus_state_index,
        "tenant": tenant,
        "docs": [{"id": d.id, "title": d.title, "body": d.body} for d in docs],
        "batch_size": 3,
        "pause_s": 0.7,
    }
    return subprocess.Popen(
        [sys.executable, str(WRITER), json.dumps(job)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def kill_writer_midway(proc: subprocess.Popen[str], batches: int, timeout: float) -> list[str]:
    """SIGKILL the writer once it reported ``batches`` batches (or at ``timeout``); its lines."""
    lines: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip())
            if sum(x.startswith("batch ") for x in lines) >= batches:
                done.set()
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    done.wait(timeout)
    proc.kill()
    proc.wait()  # reaped: a zombie would still look alive to the corpus-state repair
    reader.join(timeout=5)
    if proc.stdout is not None:
        proc.stdout.close()
    return lines


def chunk_versions(es: Engine, index: str, tenant: str) -> dict[str, int]:
    """Every chunk of the tenant (local id -> ``_version``), read from the primaries after a
    refresh."""
    es.refresh(index)
    resp = unguarded(es).search(
        index,
        {
            "query": {"term": {"tenant": tenant}},
            "size": 10_000,
            "version": True,
            "_source": ["chunk_id"],
        },
    )
    return {h["_source"]["chunk_id"]: int(h["_version"]) for h in resp["hits"]["hits"]}


def expected_chunks(ingestor: Ingestor, docs: list[Document]) -> set[str]:
    return {chunk_id(d.id, d.version, n) for d in docs for n in range(len(ingestor.chunker(d)))}


def rerun(
    ingestor: Ingestor, es: Engine, index: str, tenant: str, docs: list[Document]
) -> dict[str, Any]:
    """Rerun an interrupted ingest of ``docs``: what was there before, what the rerun wrote,
    and which chunks it wrote a second time (a ``_version`` that moved)."""
    before = chunk_versions(es, index, tenant)
    whole = [d for d in docs if all(c in before for c in expected_chunks(ingestor, [d]))]
    report = ingestor.ingest(docs, Principal(tenant=tenant, user_id="loader"))
    after = chunk_versions(es, index, tenant)
    whole_ids = expected_chunks(ingestor, whole)
    return {
        "docs": len(docs),
        "whole_before": len(whole),
        "skipped": report.skipped_unchanged,
        "written": report.chunks,
        "rewritten_whole": sorted(c for c in whole_ids if after.get(c) != before.get(c)),
        "rewritten_partial": sorted(
            c for c in before if c not in whole_ids and after.get(c) != before[c]
        ),
        "watermark": report.watermarks.get(tenant),
    }


# -- the report -------------------------------------------------------------------------------


def phases(rounds: list[Round], t0: float) -> Iterator[tuple[str, float, float, Round | None]]:
    """(name, start, end, round) of each window: before / during / after of every round."""
    start = t0
    for i, r in enumerate(rounds, 1):
        yield f"r{i} before", start, r.kill, r
        yield f"r{i} during", r.kill, r.green, r
        yield f"r{i} after", r.green, r.end, r
        start = r.end


def table(
    rounds: list[Round], ops: list[Op], t0: float, health: list[tuple[float, str, int]]
) -> tuple[str, dict[str, Any]]:
    lines: list[str] = []
    data: dict[str, Any] = {"rounds": [], "phases": {}, "errors": []}
    for i, r in enumerate(rounds, 1):
        window = outage_window(r, ops)
        seen = [(t - r.kill, s, n) for t, s, n in health if r.kill <= t < r.green]
        window["health_seen"] = dict(Counter(s for _, s, _ in seen))
        window["node_left_s"] = next((round(t, 1) for t, _, n in seen if 0 < n < NODES), None)
        data["rounds"].append(
            {
                "victim": r.victim,
                "chosen_as": r.spec,
                "primaries_before": r.primaries,
                "down_s": round(r.restart - r.kill, 1),
                "restart_to_green_s": round(r.green - r.restart, 1),
                "kill_to_green_s": round(r.green - r.kill, 1),
                **window,
                "canary": r.canary,
                "killed_writer": r.killed_writer,
            }
        )
        lines.append(
            f"round {i}: node {r.victim} killed ({r.spec}; chunk primaries by node before "
            f"{r.primaries}); down {r.restart - r.kill:.1f} s, restart to green "
            f"{r.green - r.restart:.1f} s; failed searches {window['failed_searches']}"
            f" (first {window['first_failure_s']} s, last {window['last_failure_s']} s after "
            f"the kill), longest time without a successful search {window['search_gap_s']} s; "
            f"health samples {window['health_seen']}, node gone from the cluster "
            f"{window['node_left_s']} s after the kill"
        )
    lines.append(
        f"{'phase':<11} {'operation':<16} {'ok':>5} {'err':>4} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'max ms':>8}"
    )
    for name, start, end, _ in phases(rounds, t0):
        for op in MIX:
            sel = [o for o in ops if o.op == op and start <= o.at < end]
            ok = [(o.end - o.start) * 1000 for o in sel if not o.error]
            row = {
                "ok": len(ok),
                "errors": len(sel) - len(ok),
                "p50_ms": round(percentile(ok, 50), 1),
                "p95_ms": round(percentile(ok, 95), 1),
                "max_ms": round(max(((o.end - o.start) * 1000 for o in sel), default=0.0), 1),
                "seconds": round(end - start, 1),
            }
            data["phases"].setdefault(name, {})[op] = row
            lines.append(
                f"{name:<11} {op:<16} {row['ok']:>5} {row['errors']:>4} {row['p50_ms']:>8} "
                f"{row['p95_ms']:>8} {row['max_ms']:>8}"
            )
    kinds: Counter[tuple[str, str, str, bool]] = Counter()
    when: dict[tuple[str, str, str, bool], list[float]] = {}
    for o in ops:
        if not o.error:
            continue
        name, kill = next(
            ((n, x.kill) for n, s, e, x in phases(rounds, t0) if s <= o.at < e and x), ("late", t0)
        )
        key = (name, o.op, o.error, o.retryable)
        kinds[key] += 1
        when.setdefault(key, []).append(o.at - kill)
    lines.append("errors by kind (phase, operation, count, seconds after the kill, retryable):")
    for key, count in sorted(kinds.items()):
        ts = when[key]
        lines.append(
            f"  {key[0]:<11} {key[1]:<16} {count:>4}  {min(ts):6.1f}..{max(ts):6.1f} s  "
            f"{'retryable' if key[3] else 'NOT RETRYABLE'}  {key[2]}"
        )
        data["errors"].append(
            {
                "phase": key[0],
                "operation": key[1],
                "error": key[2],
                "retryable": key[3],
                "count": count,
                "from_s": round(min(ts), 1),
                "to_s": round(max(ts), 1),
            }
        )
    if not kinds:
        lines.append("  none")
    return "\n".join(lines), data


def outage_window(r: Round, ops: list[Op]) -> dict[str, Any]:
    searches = sorted(
        (o for o in ops if o.op == "search" and r.kill <= o.at < r.end), key=lambda o: o.end
    )
    failed = [o for o in searches if o.error]
    gap, last_ok = 0.0, r.kill
    for o in searches:
        if not o.error:
            gap, last_ok = max(gap, o.end - last_ok), max(last_ok, o.end)
    gap = max(gap, r.end - last_ok)  # none after the last success, up to the round's end
    return {
        "failed_searches": len(failed),
        "first_failure_s": round(failed[0].end - r.kill, 1) if failed else None,
        "last_failure_s": round(failed[-1].end - r.kill, 1) if failed else None,
        "search_gap_s": round(gap, 1),
    }


# -- the test ---------------------------------------------------------------------------------


def test_node_loss_under_load_loses_no_acknowledged_write_and_leaks_nothing(capsys):
    started = es_sh("start")  # at once when every node is up and the cluster green
    assert started.returncode == 0, started.stderr[-3000:]
    tag = uuid.uuid4().hex[:8]
    settings = cluster_settings(",".join(node_urls()), tag, suite="nodeloss", shards=3)
    layout = settings.layout()
    es = connect(settings)
    caps = probe(es, layout=layout)
    assert (caps.nodes, caps.data_nodes) == (NODES, NODES), caps.notes
    rounds: list[Round] = []
    down = 0
    monitor: Monitor | None = None
    load: Load | None = None
    problems: list[str] = []
    try:
        # -- setup: indices with one replica, a corpus per tenant, a packet per tenant --------
        bootstrap(es, caps, settings, force=True)
        emb = HashEmbedder()
        ingestor = Ingestor(es, emb, layout=layout, default_acl=(EVERYONE,))
        rnd = random.Random(7)
        base: dict[str, list[Document]] = {
            t: tenant_records(t, DOCS_PER_TENANT, rnd) for t in TENANTS
        }
        for t, docs in base.items():
            ingestor.ingest(docs, Principal(tenant=t, user_id="loader"))
        assert wait_green(es)["status"] == "green"
        searcher = HybridSearcher(es, emb, layout=layout, corpus_state_index=layout.corpus_state)
        searcher.warm_up()
        service = PacketService(
            searcher, PacketStore(es, layout.packets), ttl=timedelta(minutes=60)
        )
        state = service.corpus_state
        packets = {
            t: service.build(
                f"CASE-{t}",
                "load",
                "contract rate April",
                Principal(tenant=t, user_id="agent"),
                RequestScope(),
            ).manifest.packet_id
            for t in TENANTS
        }
        canary_docs: list[Document] = []
        killed_docs: list[Document] = []

        load_es = es  # the load's own client: every node, or node 1 only
        if LOAD_URLS == "first":
            load_es = connect(cluster_settings(node_urls()[0], tag, suite="nodeloss", shards=3))
        load_searcher = HybridSearcher(
            load_es, emb, layout=layout, corpus_state_index=layout.corpus_state
        )
        load_searcher.warm_up()
        load = Load(
            load_searcher,
            PacketService(
                load_searcher, PacketStore(load_es, layout.packets), ttl=timedelta(minutes=60)
            ),
            Ingestor(load_es, emb, layout=layout, default_acl=(EVERYONE,)),
            packets,
        )
        monitor = Monitor(es, state)
        t0 = time.monotonic()
        monitor.thread.start()
        load.start()
        for number, spec in enumerate(VICTIMS, 1):
            time.sleep(BEFORE_S)
            counts = primaries_by_node(es, layout.chunks)
            r = Round(
                victim=pick_victim(counts, spec, [x.victim for x in rounds]),
                spec="named" if spec.isdigit() else "most chunk primaries",
                primaries=counts,
            )
            rounds.append(r)
            # A packet of its own whose first base member changes while the node is down.
            canary = Principal(tenant=CANARY, user_id=f"canary-{number}")
            built = service.build(
                f"CANARY-{number}", "canary", "contract rate April", canary, RequestScope()
            ).manifest
            member = next(m for m in built.members if "-doc-" in m.source_id)
            old = next(d for d in base[CANARY] if d.id == member.source_id)
            old = next((d for d in reversed(canary_docs) if d.id == old.id), old)
            writer_docs = [
                Document(id=f"{KILLED}-r{number}-{i}", tenant=KILLED, body=f"{t} {i}")
                for i, t in enumerate(TOPICS * 3)
            ]

            r.kill = time.monotonic()  # the SIGKILL lands early in the call, which then waits
            killed = es_sh("kill", "--node", str(r.victim))  # for the process to be gone
            assert killed.returncode == 0, killed.stderr[-2000:]
            down = r.victim
            writer = start_writer(settings, KILLED, writer_docs)

            # The canary's member changes during the outage (retried until acknowledged).
            changed = old.model_copy(
                update={
                    "version": old.version + 1,
                    "body": f"{old.body} Changed in round {number}.",
                }
            )
            ack = with_retry(
                functools.partial(
                    ingestor.ingest, [changed], Principal(tenant=CANARY, user_id="loader")
                ),
                seconds=OUTAGE_S * 3,
            )
            canary_docs.append(changed)
            load.acked[CANARY].append(changed)
            load.ack_times[CANARY].append(time.monotonic())
            r.canary = {
                "packet": built.packet_id,
                "member": member.chunk_id,
                "changed_s_after_kill": round(time.monotonic() - r.kill, 1),
                "watermark_at_build": built.corpus_watermark,
                "watermark_acked": ack.watermarks.get(CANARY),
            }
            during = service.validate(built.packet_id, canary, scope=RequestScope())
            r.canary["verdict_during"] = during.kind
            r.canary["reasons_during"] = list(during.reasons)[:3]

            lines = kill_writer_midway(writer, batches=3, timeout=OUTAGE_S * 3)
            killed_docs.extend(writer_docs)
            r.killed_writer = {
                "batches_reported": sum(x.startswith("batch ") for x in lines),
                "finished": "done" in lines,
                "s_after_kill": round(time.monotonic() - r.kill, 1),
                "output_tail": lines[-3:],
            }
            time.sleep(max(0.0, r.kill + OUTAGE_S - time.monotonic()))

            r.restart = time.monotonic()
            restarted = es_sh("start", "--node", str(r.victim))
            assert restarted.returncode == 0, restarted.stderr[-3000:]
            down = 0
            health = wait_green(es)
            r.green = time.monotonic()
            assert (health["status"], health["number_of_nodes"]) == ("green", NODES)
            time.sleep(AFTER_S)
            r.end = time.monotonic()
            after = service.validate(built.packet_id, canary, scope=RequestScope())
            r.canary["verdict_after"] = after.kind
            r.canary["reasons_after"] = list(after.reasons)[:3]
        rounds[-1].end = time.monotonic()  # the last "after" lasts until the load stops
        load.finish()
        monitor.stop.set()
        monitor.thread.join(timeout=30)

        # -- after recovery: rerun what was interrupted, then count ---------------------------
        reruns: dict[str, Any] = {}
        by_tenant: dict[str, list[Document]] = {}
        for d in load.errored:
            by_tenant.setdefault(d.tenant, []).append(d)
        for t, docs in by_tenant.items():
            reruns[f"load ingests of {t} that failed"] = rerun(ingestor, es, layout.chunks, t, docs)
            load.acked[t].extend(docs)
        wm_before_rerun = state.watermark(KILLED)
        reruns["killed writer"] = rerun(ingestor, es, layout.chunks, KILLED, killed_docs)
        wm_after_rerun = state.watermark(KILLED)
        final = {t: chunk_versions(es, layout.chunks, t) for t in (*TENANTS, KILLED)}
        expected = {t: expected_chunks(ingestor, base[t] + load.acked[t]) for t in TENANTS} | {
            KILLED: expected_chunks(ingestor, killed_docs)
        }
        control = service.validate(
            packets[CONTROL], Principal(tenant=CONTROL, user_id="agent"), scope=RequestScope()
        )
        watermarks = {t: state.watermark(t) for t in (*TENANTS, KILLED)}

        text, data = table(rounds, load.ops, t0, monitor.health)
        summary = {
            "acknowledged_chunks": {t: len(v) for t, v in expected.items()},
            "chunks_found": {t: len(v) for t, v in final.items()},
            "reruns": reruns,
            "watermarks": watermarks,
            "killed_writer_watermark": [wm_before_rerun, wm_after_rerun],
            "control_verdict": control.kind,
            "validate_verdicts": dict(Counter(o.verdict for o in load.ops if o.verdict)),
            "cross_tenant_hits": len(load.leaks),
            "operations": len(load.ops),
            "clients": CLIENTS,
            "load_client_urls": load_es.url,
            "seconds": round(rounds[-1].end - t0, 1) if rounds else 0,
        }
        data["summary"] = summary
        with capsys.disabled():
            print(f"\nnode loss under load: {NODES} nodes, 1 replica, {CLIENTS} clients")
            print(text)
            print(json.dumps(summary, indent=1, default=str))
        if REPORT:
            Path(REPORT).write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")

        # -- the assertions -------------------------------------------------------------------
        problems += [f"cross-tenant: {c}" for c in load.leaks[:5]]
        for name, start, end, _ in phases(rounds, t0):
            errs = [o for o in load.ops if o.error and start <= o.at < end]
            if name.endswith("during"):
                errs = [o for o in errs if not o.retryable]
            problems += [f"{name}: {o.op}: {o.error}" for o in errs[:5]]
        problems += [f"short ingest report: {x}" for x in load.short_reports[:5]]
        for t in (*TENANTS, KILLED):
            if set(final[t]) != expected[t]:
                lost = sorted(expected[t] - set(final[t]))[:5]
                extra = sorted(set(final[t]) - expected[t])[:5]
                problems.append(f"{t}: chunks lost {lost}, beyond the expected {extra}")
        for name, rr in reruns.items():
            if rr["rewritten_whole"] or rr["skipped"] < rr["whole_before"]:
                problems.append(f"rerun of {name} wrote whole documents again: {rr}")
        if wm_after_rerun <= wm_before_rerun and not all(
            r.killed_writer.get("finished") for r in rounds
        ):
            problems.append(f"the killed writer's change did not move the watermark: {summary}")
        for t in TENANTS:
            seq = monitor.watermarks[t]
            if any(b < a for a, b in itertools.pairwise(seq)):
                problems.append(f"{t}: the watermark went back: {seq}")
            if load.report_watermarks[t] and watermarks[t] < max(load.report_watermarks[t]):
                problems.append(f"{t}: watermark {watermarks[t]} behind an acknowledged ingest")
        for i, r in enumerate(rounds, 1):
            member_changed = any(
                x.startswith(("member_versions", "deletion_state"))
                for x in r.canary.get("reasons_after", ())
            )
            if (
                r.canary.get("verdict_during") == "reuse"
                or r.canary.get("verdict_after") != "refresh_required"
                or not member_changed
            ):
                problems.append(f"round {i}: canary verdicts {r.canary}")
        for o in load.ops:
            if o.verdict == "reuse" and any(a < o.start for a in load.ack_times[o.tenant]):
                problems.append(f"reuse for {o.tenant} after an acknowledged ingest at {o.start}")
                break
        if control.kind != "reuse":
            problems.append(f"the packet of a tenant nothing wrote to: {control.kind} {control}")
    finally:
        if load is not None:
            load.finish()
        if monitor is not None:
            monitor.stop.set()
        if down:  # leave the cluster whole for the next run
            es_sh("start", "--node", str(down))
        with contextlib.suppress(HybridEsError):
            es.delete_index(f"{layout.chunks},{layout.packets},{layout.corpus_state}")
    assert not problems, "\n".join(problems)
