"""The packet flow: build after retrieval, revalidate before every reuse, refresh, render, release.

Who may do what. A packet is the working set of the principal who built it (its *owner*) for one
case; it is stored under the owner's tenant and user id (``identity.packet_key``):

| operation | who | anyone else |
|---|---|---|
| build | any principal; the builder owns the packet (and its next versions) | - |
| show, validate, render, release check | the owner | "no packet": as if it did not exist |
| refresh (writes the next version) | the owner | "no packet" |
| revoke | automatic: the owner's own revalidation finds a member no longer admitted | never |

So no one can read, reuse, refresh, supersede or revoke a packet of another user or tenant, and
case ids are a namespace per owner: two users (or tenants) each have their own
``JPN-2026-0417-packet-v1``. An owner whose grants shrank gets ``deny`` (for themselves; the
members they may no longer see are named for discarding, from their own packet only).

Every reuse decision takes the follow-up's request scope: a question about other dates, another
booking or another source type does not reuse the packet. ``render`` revalidates, assembles the
context and then runs the release check again: context is released only on ``reuse`` twice.

Each operation is timed and counted (``PacketMetrics``) and reported through ``on_event`` (the
trace writer), so reuse rate and packet build p50/p95 can be shown.
"""

from __future__ import annotations

# One module for the packet flow: build, refresh, revalidate, render and release share the
# ownership rules of the docstring, which read best beside every operation that enforces them.
# What they share lives beside it: assembling a version (``assemble``), the lookups
# (``observe``), the decision (``verdict``), rendering (``render``) and measuring (``metrics``).
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from hybrid_es import telemetry
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import BadQueryError, ManifestConflictError
from hybrid_es.identity import chunk_key
from hybrid_es.models import Principal, RequestScope, check_id
from hybrid_es.packets.assemble import SECTIONS as SECTIONS  # re-exported
from hybrid_es.packets.assemble import assemble
from hybrid_es.packets.manifest import Manifest, QueryScope
from hybrid_es.packets.metrics import PacketMetrics as PacketMetrics  # re-exported
from hybrid_es.packets.metrics import spanned
from hybrid_es.packets.observe import observe, observe_packet
from hybrid_es.packets.render import Rendered, render
from hybrid_es.packets.store import PacketStore, Stored
from hybrid_es.packets.verdict import Observations, Verdict, revalidate
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.searcher import HybridSearcher

log = logging.getLogger(__name__)

Event = dict[str, Any]


class PacketService:
    """Evidence packets for cases, over one searcher (its chunks indices) and one store."""

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
        self.client: Engine = searcher.client
        self.corpus_state = corpus_state or searcher.corpus_state
        self.ttl = ttl
        self.max_members = max_members
        self.on_event = on_event
        self.metrics = PacketMetrics()

    def close(self) -> dict[str, Any]:
        """Nothing of its own to close: the searcher is its maker's (``HybridEs.close`` closes
        it, flushing its traces). ``{}``, for callers that close whatever they were given."""
        return {}

    def __enter__(self) -> PacketService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        return assemble(
            self.searcher,
            self.corpus_state,
            case_id=case_id,
            version=version,
            query_scope=qs,
            principal=principal,
            now=now,
            unresolved=unresolved,
            ttl=self.ttl,
            max_members=self.max_members,
        )

    @spanned("build")
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
        """Retrieve and store the caller's packet for a case: version 1, or the next version of
        the caller's own chain for that case (superseding the latest).

        Raises BadQueryError for a bad case id, ManifestConflictError when a concurrent build
        wrote the same version first (the message names it).
        """
        try:
            check_id(case_id, "case id")
        except ValueError as exc:
            raise BadQueryError(f"{exc} (e.g. JPN-2026-0417)") from exc
        now = now or datetime.now(UTC)
        t = time.perf_counter()
        previous = self.store.latest(principal, case_id)
        version = previous.manifest.packet_version + 1 if previous else 1
        qs = QueryScope(label=label, query=query, scope=scope)
        manifest = self._assemble(case_id, version, qs, principal, now, unresolved)
        stored = self._commit(previous, manifest)
        self._done("packet_build", t, principal, manifest.packet_id, None, ())
        return stored

    @spanned("refresh")
    def refresh(self, pid: str, principal: Principal, *, now: datetime | None = None) -> Stored:
        """Re-run retrieval for the same query scope and write the next version (owner only).

        Raises PacketNotFoundError when ``pid`` is not the caller's packet, and
        ManifestConflictError when it is no longer the current version (a concurrent refresh
        won): the message names the version that is current.
        """
        now = now or datetime.now(UTC)
        t = time.perf_counter()
        old = self.store.get(principal, pid)
        newer = self.store.successor(principal, old.manifest)
        if newer is not None:
            raise ManifestConflictError(
                f"packet {pid} was already refreshed; {newer} is the next version",
                hint=f"revalidate {newer} (or the latest version of the case) instead",
            )
        m = old.manifest
        new = self._assemble(
            m.case_id, m.packet_version + 1, m.query_scope, principal, now, m.unresolved
        )
        stored = self._commit(old, new)
        self._done("packet_build", t, principal, new.packet_id, None, (f"refresh of {pid}",))
        return stored

    def _commit(self, previous: Stored | None, manifest: Manifest) -> Stored:
        """Create ``manifest`` (the one atomic step), then mark ``previous`` superseded.

        The mark is for readers of the index only: verdicts read the chain itself, so a process
        that dies between the two writes leaves exactly one current version all the same.
        """
        stored = self.store.create(manifest)
        if previous is not None and previous.manifest.status == "active":
            try:
                self.store.mark(previous, status="superseded", superseded_by=manifest.packet_id)
            except Exception:
                log.warning(
                    "could not mark %s superseded; verdicts read the chain",
                    previous.manifest.packet_id,
                )
        return stored

    # -- read, revalidate, render, release ----------------------------------------------------

    def show(
        self, pid: str, principal: Principal, *, now: datetime | None = None
    ) -> tuple[Manifest, int]:
        """The caller's manifest, with the members the caller may no longer see left out (and
        counted). Raises PacketNotFoundError when ``pid`` is not the caller's packet."""
        now = now or datetime.now(UTC)
        m = self.store.get(principal, pid).manifest
        observed = self._observe(m, principal, now)
        visible = {s.chunk_id for s in observed.members if s.authorized and s.exists}
        kept = tuple(x for x in m.members if x.chunk_id in visible)
        return m.model_copy(update={"members": kept}), len(m.members) - len(kept)

    @spanned("validate")
    def validate(
        self,
        pid: str,
        principal: Principal,
        *,
        scope: RequestScope,
        now: datetime | None = None,
        observed: Observations | None = None,
    ) -> Verdict:
        """Revalidate the caller's packet for a follow-up about ``scope``. A deny of the owner's
        own packet (their grants no longer admit a member) marks it revoked. Raises
        PacketNotFoundError when ``pid`` is not the caller's packet; never raises for a
        dependency that cannot be checked (that is the verdict ``unverified``)."""
        now = now or datetime.now(UTC)
        t = time.perf_counter()
        stored = self.store.get(principal, pid)
        verdict = self.check(stored.manifest, principal, scope=scope, now=now, observed=observed)
        if verdict.kind == "deny" and stored.manifest.status == "active":
            try:
                self.store.mark(stored, status="revoked")
            except Exception:  # the verdict stands; the mark is repeated on the next deny
                log.warning("could not mark packet %s revoked", pid)
        self._done("packet_validate", t, principal, pid, verdict.kind, verdict.reasons)
        return verdict

    def check(
        self,
        manifest: Manifest,
        principal: Principal,
        *,
        scope: RequestScope,
        now: datetime,
        observed: Observations | None = None,
    ) -> Verdict:
        """Revalidate an already-read manifest: the lookups in ``observe.observe_packet`` (none
        for a packet that is not the caller's), the whole decision in ``verdict.revalidate``.
        ``observed``: the members' observations to take instead of looking them up (the chain
        is read all the same)."""
        index = self.searcher.layout.chunks_for(manifest.tenant)
        found = observe_packet(
            self.store,
            self.client,
            index,
            self.corpus_state,
            manifest,
            principal,
            now,
            members=observed,
        )
        return revalidate(manifest, principal, now, found, scope=scope)

    def _observe(self, manifest: Manifest, principal: Principal, now: datetime) -> Observations:
        index = self.searcher.layout.chunks_for(manifest.tenant)
        return observe(self.client, index, self.corpus_state, manifest, principal, now)

    @spanned("render")
    def render(
        self,
        pid: str,
        principal: Principal,
        *,
        scope: RequestScope,
        now: datetime | None = None,
        budget_tokens: int = 2000,
    ) -> tuple[Verdict, Rendered | None]:
        """The packet as model context for a follow-up about ``scope``, or None.

        Revalidates first; passages are then read through the policy filter and kept only when
        their hash still matches; then the release check revalidates again, and the context is
        returned only when both verdicts are ``reuse``.
        """
        now = now or datetime.now(UTC)
        verdict = self.validate(pid, principal, scope=scope, now=now)
        if not verdict.releasable:
            return verdict, None
        manifest = self.store.get(principal, pid).manifest
        rendered = render(
            manifest, self._passages(manifest, principal, now), budget_tokens=budget_tokens
        )
        released = self.release_check(pid, principal, scope=scope, now=now)
        if not released.releasable:
            return released, None
        return released, rendered

    def _passages(self, manifest: Manifest, principal: Principal, now: datetime) -> dict[str, str]:
        policy = policy_filter(principal, manifest.query_scope.scope, now)
        keys = [chunk_key(principal.tenant, m.chunk_id) for m in manifest.members]
        index = self.searcher.index_for(principal)
        # The same check as every search: a wrongly mapped index is refused, never read.
        self.searcher.checks.check_policy_fields(self.searcher.client, index)
        resp = self.searcher.door.search(
            index,
            {
                "size": len(keys),
                "query": {"bool": {"filter": [{"ids": {"values": keys}}, policy]}},
                "_source": ["chunk_id", "raw_chunk_text", "chunk_hash"],
            },
            policy,
            what="reading packet passages",
        )
        expected = {m.chunk_id: m.chunk_hash for m in manifest.members}
        out: dict[str, str] = {}
        for h in resp["hits"]["hits"]:
            src = h["_source"]
            if src.get("chunk_hash") == expected.get(src.get("chunk_id")):
                out[src["chunk_id"]] = src["raw_chunk_text"]
        return out

    def release_check(
        self,
        pid: str,
        principal: Principal,
        *,
        scope: RequestScope,
        now: datetime | None = None,
    ) -> Verdict:
        """Re-verify permissions and validity before an answer built on ``pid`` is released."""
        return self.validate(pid, principal, scope=scope, now=now)

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
        telemetry.record_packet(op, ms, verdict)
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
