"""The packet flow: build after retrieval, revalidate before every reuse, refresh, render, release.

Each operation is timed and counted (``PacketMetrics``) and reported through ``on_event`` (the
trace writer), so reuse rate and packet build p50/p95 can be shown.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from elasticsearch import Elasticsearch

from hybrid_es.corpus_state import CorpusState
from hybrid_es.errors import BadQueryError, PacketError, PacketNotFoundError, translate_es_error
from hybrid_es.models import Principal, RequestScope
from hybrid_es.packets.manifest import (
    Manifest,
    Member,
    QueryScope,
    Section,
    packet_id,
)
from hybrid_es.packets.observe import observe
from hybrid_es.packets.render import Rendered, render
from hybrid_es.packets.store import PacketStore, Stored
from hybrid_es.packets.verdict import Observations, Verdict, revalidate
from hybrid_es.policy import POLICY_VERSION, policy_filter
from hybrid_es.searcher import HybridSearcher

# Deliberate order: the case's own records, then binding terms, then qualifying evidence, then
# background. Unknown source types land in "supporting".
SECTIONS = (
    Section(key="case", label="Case records", order=1),
    Section(key="terms", label="Binding terms (contracts)", order=2),
    Section(key="evidence", label="Qualifying evidence (audits, inspections)", order=3),
    Section(key="supporting", label="Supporting material", order=4),
    Section(key="background", label="Background (brochures, reviews)", order=5),
)
SECTION_OF = {
    "itinerary": "case",
    "booking": "case",
    "contract": "terms",
    "correction": "terms",
    "accessibility-audit": "evidence",
    "inspection": "evidence",
    "audit": "evidence",
    "brochure": "background",
    "review": "background",
}

Event = dict[str, Any]


@dataclass
class PacketMetrics:
    """Per-operation latencies (ms) and verdict counts for this process."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)

    def record(self, op: str, ms: float, verdict: str | None = None) -> None:
        self.latencies.setdefault(op, []).append(ms)
        if verdict:
            self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1

    @property
    def reuse_rate(self) -> float:
        total = sum(self.verdicts.values())
        return self.verdicts.get("reuse", 0) / total if total else 0.0

    def percentiles(self, op: str) -> tuple[float, float]:
        """(p50, p95) of an operation's latency; (0, 0) when it never ran."""
        xs = sorted(self.latencies.get(op, []))
        if not xs:
            return 0.0, 0.0
        if len(xs) == 1:
            return xs[0], xs[0]
        q = statistics.quantiles(xs, n=20, method="inclusive")
        return statistics.median(xs), q[18]


class PacketService:
    def __init__(
        self,
        searcher: HybridSearcher,
        store: PacketStore,
        *,
        corpus_state: CorpusState | None = None,
        ttl: timedelta = timedelta(minutes=10),
        max_members: int = 6,
        on_event: Callable[[Principal, Event], None] | None = None,
    ) -> None:
        self.searcher = searcher
        self.store = store
        self.client: Elasticsearch = searcher.client
        self.chunks_index = searcher.index
        self.corpus_state = corpus_state or searcher.corpus_state
        self.ttl = ttl
        self.max_members = max_members
        self.on_event = on_event
        self.metrics = PacketMetrics()

    # -- build and refresh --------------------------------------------------------------------

    def _assemble(
        self,
        case_id: str,
        version: int,
        qs: QueryScope,
        principal: Principal,
        now: datetime,
        unresolved: tuple[str, ...],
    ) -> Manifest:
        watermark = self.corpus_state.watermark(principal.tenant)
        resp = self.searcher.search(qs.query, principal, qs.scope, top_k=self.max_members, now=now)
        members = tuple(
            Member(
                source_id=h.doc_id,
                version=h.source_version,
                chunk_id=h.chunk_id,
                chunk_hash=str(h.source.get("chunk_hash", "")),
                section=SECTION_OF.get(str(h.source.get("source_type")), "supporting"),
                title=h.title,
            )
            for h in resp.hits
        )
        return Manifest(
            packet_id=packet_id(case_id, version),
            case_id=case_id,
            packet_version=version,
            tenant=principal.tenant,
            principal_id=principal.user_id,
            principal_scope_version=principal.scope_version,
            policy_version=POLICY_VERSION,
            corpus_watermark=watermark,
            query_scope=qs,
            assembled_at=now,
            expires_at=now + self.ttl,
            members=members,
            sections=SECTIONS,
            unresolved=unresolved,
            retrieval_settings={
                "fusion_path": resp.fusion_path,
                "reranked": resp.reranked,
                "window": self.searcher.params.window,
                "rank_constant": self.searcher.params.rank_constant,
                "top_k": self.max_members,
                "request_digest": resp.request_digest,
            },
        )

    def build(
        self,
        case_id: str,
        label: str,
        query: str,
        principal: Principal,
        scope: RequestScope,
        *,
        unresolved: tuple[str, ...] = (),
        now: datetime | None = None,
    ) -> Stored:
        """Retrieve and store the case's packet: version 1, or the next version (superseding
        the latest) when the case already has one."""
        if not case_id.strip():
            raise BadQueryError("a packet needs a case id, e.g. JPN-2026-0417")
        now = now or datetime.now(UTC)
        t = time.perf_counter()
        try:
            previous: Stored | None = self.store.latest(case_id, principal.tenant)
        except PacketNotFoundError:
            previous = None
        version = previous.manifest.packet_version + 1 if previous else 1
        qs = QueryScope(label=label, query=query, scope=scope)
        manifest = self._assemble(case_id, version, qs, principal, now, unresolved)
        stored = (
            self.store.supersede(previous, manifest) if previous else self.store.create(manifest)
        )
        self._done("packet_build", t, principal, manifest.packet_id, None, ())
        return stored

    def refresh(self, pid: str, principal: Principal, *, now: datetime | None = None) -> Stored:
        """Re-run retrieval for the same query scope and write the next version.

        Raises ManifestConflictError when a concurrent refresh already wrote that version.
        """
        now = now or datetime.now(UTC)
        t = time.perf_counter()
        old = self.store.get(pid)
        if old.manifest.tenant != principal.tenant:
            raise PacketError(f"packet {pid} belongs to another tenant")
        m = old.manifest
        new = self._assemble(
            m.case_id, m.packet_version + 1, m.query_scope, principal, now, m.unresolved
        )
        stored = self.store.supersede(old, new)
        self._done("packet_build", t, principal, new.packet_id, None, (f"refresh of {pid}",))
        return stored

    # -- revalidate, render, release ----------------------------------------------------------

    def validate(
        self,
        pid: str,
        principal: Principal,
        *,
        now: datetime | None = None,
        query_scope: QueryScope | None = None,
        observed: Observations | None = None,
    ) -> Verdict:
        """Revalidate a packet for ``principal``; a deny marks the packet revoked."""
        now = now or datetime.now(UTC)
        t = time.perf_counter()
        stored = self.store.get(pid)
        verdict = self.check(
            stored.manifest, principal, now=now, query_scope=query_scope, observed=observed
        )
        if (
            verdict.kind == "deny"
            and stored.manifest.tenant == principal.tenant
            and stored.manifest.status == "active"
        ):
            self.store.mark(stored, status="revoked")
        self._done("packet_validate", t, principal, pid, verdict.kind, verdict.reasons)
        return verdict

    def check(
        self,
        manifest: Manifest,
        principal: Principal,
        *,
        now: datetime,
        query_scope: QueryScope | None = None,
        observed: Observations | None = None,
    ) -> Verdict:
        """Revalidate an already-read manifest (lookups here, decision in ``revalidate``)."""
        if manifest.status != "active" and manifest.tenant == principal.tenant:
            return Verdict(
                kind="refresh_required" if manifest.status == "superseded" else "deny",
                reasons=(
                    f"packet is {manifest.status}"
                    + (f" by {manifest.superseded_by}" if manifest.superseded_by else ""),
                ),
            )
        if observed is None:
            observed = observe(
                self.client, self.chunks_index, self.corpus_state, manifest, principal, now
            )
        return revalidate(manifest, principal, now, observed, query_scope=query_scope)

    def render(
        self,
        pid: str,
        principal: Principal,
        *,
        now: datetime | None = None,
        budget_tokens: int = 2000,
    ) -> tuple[Verdict, Rendered | None]:
        """Render only after a ``reuse`` verdict; passages are read now through the policy
        filter and kept only when their hash still matches the manifest."""
        now = now or datetime.now(UTC)
        verdict = self.validate(pid, principal, now=now)
        if not verdict.releasable:
            return verdict, None
        manifest = self.store.get(pid).manifest
        return verdict, render(
            manifest, self._passages(manifest, principal, now), budget_tokens=budget_tokens
        )

    def _passages(self, manifest: Manifest, principal: Principal, now: datetime) -> dict[str, str]:
        policy = policy_filter(principal, manifest.query_scope.scope, now)
        ids = [m.chunk_id for m in manifest.members]
        try:
            resp = self.client.search(
                index=self.chunks_index,
                size=len(ids),
                query={"bool": {"filter": [{"ids": {"values": ids}}, policy]}},
                source_includes=["raw_chunk_text", "chunk_hash"],
            )
        except Exception as exc:
            raise translate_es_error(exc, what="reading packet passages") from exc
        expected = {m.chunk_id: m.chunk_hash for m in manifest.members}
        return {
            h["_id"]: h["_source"]["raw_chunk_text"]
            for h in resp["hits"]["hits"]
            if h["_source"].get("chunk_hash") == expected.get(h["_id"])
        }

    def release_check(
        self, pid: str, principal: Principal, *, now: datetime | None = None
    ) -> Verdict:
        """Re-verify permissions and validity before an answer built on ``pid`` is released."""
        return self.validate(pid, principal, now=now)

    def _done(
        self,
        op: str,
        t0: float,
        principal: Principal,
        pid: str,
        verdict: str | None,
        reasons: tuple[str, ...],
    ) -> None:
        ms = round((time.perf_counter() - t0) * 1000, 3)
        self.metrics.record(op, ms, verdict)
        if self.on_event is not None:
            self.on_event(
                principal,
                {
                    "operation": op,
                    "packet_id": pid,
                    "verdict": verdict,
                    "reasons": list(reasons),
                    "latency_ms": ms,
                },
            )
