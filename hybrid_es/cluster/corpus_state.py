"""The per-tenant corpus watermark: a counter that moves whenever the tenant's evidence changes
(ingest, correction, supersede, delete). Packets record it and are refreshed when it moves.

The watermark must never run ahead of what a search can see, and a change must never be left
without a move. So a writer brackets its writes:

1. :meth:`CorpusState.begin` registers the run as *pending* (before the first write);
2. the writer writes and refreshes the index (the new records are searchable);
3. :meth:`CorpusState.finish` moves the watermark (only if something was written) and removes
   the run's marker, in one write.

A packet built in between reads the old watermark and the pending marker; revalidation treats
a pending run as "cannot verify" (``unverified``), never as unchanged. A writer that dies between
2 and 3 leaves its marker behind: :meth:`CorpusState.repair`, which every ingest calls before it
begins, resolves markers whose process is gone (same host) or whose lease ran out (any host) by
moving the watermark, so the change is never lost.

Reads use GET, which is real-time. Every update is a compare-and-set (``if_seq_no`` /
``if_primary_term``) retried on conflict, so concurrent writers never lose an increment or a
marker; no scripting module is needed.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tenacity import (
    retry,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.cluster.retries import while_shards_start
from hybrid_es.errors import EngineError, UnknownTenantError, VersionConflictError

DEFAULT_LEASE = timedelta(minutes=15)
"""How long a pending run is trusted without renewing its marker (writers renew per batch)."""


def _retryable(exc: BaseException) -> bool:
    """A lost optimistic-concurrency race, a full write queue (429) or a shard still starting
    (503, e.g. the state index another writer has just created): try again."""
    return isinstance(exc, VersionConflictError) or (
        isinstance(exc, EngineError) and exc.status in (429, 503)
    )


_cas_retry = retry(
    retry=retry_if_exception(_retryable),
    # a read inside waits for a starting shard itself (up to a minute): bound the whole too
    stop=stop_after_attempt(30) | stop_after_delay(120),
    wait=wait_random_exponential(multiplier=0.01, max=0.5),
    reraise=True,
)


@dataclass(frozen=True)
class CorpusView:
    """The tenant's corpus state as read now."""

    watermark: int
    pending: tuple[str, ...] = ()
    """Ids of writer runs that started and have not finished (running, or interrupted)."""


@dataclass(frozen=True)
class PendingRun:
    """A writer's marker: who writes, and until when it is trusted without a renewal."""

    run_id: str
    host: str
    pid: int
    started_at: str
    lease_until: str

    def stale(self, now: datetime, *, host: str) -> bool:
        """Gone for sure: its lease ran out, or it ran on this host and its process is dead."""
        if datetime.fromisoformat(self.lease_until) < now:
            return True
        return self.host == host and not _alive(self.pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class CorpusState:
    """The corpus-state index: one document per tenant, keyed by the tenant id."""

    def __init__(
        self,
        client: Engine | Any,
        index: str = "hybrid-es-corpus-state",
        *,
        lease: timedelta = DEFAULT_LEASE,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        url: str = "",
    ) -> None:
        self.client = as_engine(client, url=url)
        self.index = index
        self.url = url
        self.lease = lease
        self._clock = clock
        self.host = socket.gethostname()

    # -- reading -------------------------------------------------------------------------------

    def read(self, tenant: str) -> CorpusView:
        """The tenant's watermark and pending runs. Raises UnknownTenantError when it has none."""
        doc = self._get(tenant)
        if doc is None:
            raise UnknownTenantError(
                f"tenant {tenant!r} has no corpus state", hint="ingest documents for it first"
            )
        src = doc["_source"]
        return CorpusView(int(src["watermark"]), tuple(sorted((src.get("pending") or {}).keys())))

    def watermark(self, tenant: str) -> int:
        """The tenant's current watermark. Raises UnknownTenantError when it has none."""
        return self.read(tenant).watermark

    # -- writing -------------------------------------------------------------------------------

    def begin(self, tenant: str) -> str:
        """Register a writer run as pending before its first write; returns its run id."""
        now = self._clock()
        run = PendingRun(
            run_id=uuid.uuid4().hex,
            host=self.host,
            pid=os.getpid(),
            started_at=now.isoformat(),
            lease_until=(now + self.lease).isoformat(),
        )

        def add(src: dict[str, Any]) -> dict[str, Any]:
            src.setdefault("pending", {})[run.run_id] = run.__dict__
            return src

        self._update(tenant, add, "registering an ingest run")
        return run.run_id

    def renew(self, tenant: str, run_id: str) -> None:
        """Extend a pending run's lease (a long ingest calls this per batch)."""
        until = (self._clock() + self.lease).isoformat()

        def extend(src: dict[str, Any]) -> dict[str, Any]:
            marker = (src.get("pending") or {}).get(run_id)
            if marker is not None:
                marker["lease_until"] = until
            return src

        self._update(tenant, extend, "renewing an ingest run")

    def finish(self, tenant: str, run_id: str, change: str | None) -> int:
        """End a run: move the watermark by one when ``change`` names what the run changed (None:
        it wrote nothing), and drop its marker, in one write. Returns the watermark."""

        def end(src: dict[str, Any]) -> dict[str, Any]:
            (src.get("pending") or {}).pop(run_id, None)
            if change is not None:
                src["watermark"] = int(src["watermark"]) + 1
                src["last_change"] = change
            return src

        return int(self._update(tenant, end, "moving the corpus watermark")["watermark"])

    def repair(self, tenant: str) -> list[str]:
        """Resolve the markers of runs that are gone (see :class:`PendingRun`): their writes may
        be searchable already, so the watermark moves once for them. Returns their run ids."""
        now = self._clock()
        resolved: list[str] = []

        def fix(src: dict[str, Any]) -> dict[str, Any]:
            resolved.clear()
            pending = src.get("pending") or {}
            for rid, marker in list(pending.items()):
                if PendingRun(**marker).stale(now, host=self.host):
                    resolved.append(rid)
                    del pending[rid]
            if resolved:
                src["watermark"] = int(src["watermark"]) + 1
                src["last_change"] = "repair"
            return src

        if self._get(tenant) is not None:
            self._update(tenant, fix, "repairing interrupted ingest runs")
        return resolved

    def bump(self, tenant: str, change: str) -> int:
        """Move the watermark by one now (a change made outside a bracketed run)."""

        def inc(src: dict[str, Any]) -> dict[str, Any]:
            src["watermark"] = int(src["watermark"]) + 1
            src["last_change"] = change
            return src

        return int(self._update(tenant, inc, "moving the corpus watermark")["watermark"])

    @while_shards_start
    def _get(self, tenant: str) -> dict[str, Any] | None:
        # The state index another writer has just created can answer 503 until its shard starts.
        return self.client.get(self.index, tenant)

    # -- the compare-and-set loop ----------------------------------------------------------------

    def _update(
        self, tenant: str, change: Callable[[dict[str, Any]], dict[str, Any]], what: str
    ) -> dict[str, Any]:
        """Apply ``change`` to the tenant's document with compare-and-set; returns the new source.
        Raises an EngineError subclass when the cluster fails (conflicts that outlast the
        retries included)."""
        return self._cas(tenant, change, what)

    @_cas_retry
    def _cas(
        self, tenant: str, change: Callable[[dict[str, Any]], dict[str, Any]], what: str
    ) -> dict[str, Any]:
        now = self._clock().isoformat()
        doc = self._get(tenant)
        # refresh=true: a reader under document-level security cannot get in real time (the
        # security plugin turns realtime off), so an unrefreshed watermark would read as absent
        # or old for up to a second after the write, and a packet could be reused on evidence
        # that just changed. One small document per tenant: the refresh costs little.
        if doc is None:
            src = change({"tenant": tenant, "watermark": 0, "pending": {}, "last_change": None})
            src["updated_at"] = now
            self.client.index(
                self.index, src, id=tenant, op_type="create", refresh="true", what=what
            )
            return src
        src = change(dict(doc["_source"]))
        src["updated_at"] = now
        self.client.index(
            self.index,
            src,
            id=tenant,
            if_seq_no=doc["_seq_no"],
            if_primary_term=doc["_primary_term"],
            refresh="true",
            what=what,
        )
        return src
