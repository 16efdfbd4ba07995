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

**Several writers at once** (parallel ingests, the slices of one index sync on one machine or
several). What holds, whatever the interleaving:

- every writer's run is registered before its first write and its marker removed only by its own
  ``finish`` (or by ``repair`` once it is gone), so while any writer of the tenant is between
  its first write and its ``finish`` the state shows it pending, and a packet built then is
  ``unverified``, never ``reuse``;
- each run that wrote moves the watermark by exactly one after its own writes were refreshed:
  after ``k`` such runs the watermark has moved by ``k`` (no increment is lost to a race), and
  its final value is the same in every interleaving. Runs of one tenant never wait for each
  other; runs that write the same document are ordered by the chunks index, not here;
- a source's sync state (:meth:`CorpusState.update_sync`, a document of its own per tenant and
  source: ``identity.sync_key``) is changed by the same compare-and-set, so slices that record
  their progress or completion at once all land, and exactly one of them sees the last slice
  done.

Nothing here orders two writers' documents, and a pending marker says a change may be under way,
not which documents it touches.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
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
from hybrid_es.errors import (
    ConfigurationError,
    EngineError,
    UnknownTenantError,
    VersionConflictError,
)
from hybrid_es.identity import rebuild_key, sync_key

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


class _Held(Exception):
    """The tenant's writes are held by a rebuild's switch (``CorpusState.writes_held``)."""


def _parsed(value: str) -> datetime:
    dt = datetime.fromisoformat(value)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


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
            held = src.get("held")
            if held and _parsed(held["until"]) > self._clock():
                raise _Held(held["until"])
            src.setdefault("pending", {})[run.run_id] = run.__dict__
            return src

        # A rebuild's switch holds the tenant's new runs for a moment (``writes_held``): wait
        # for it, so that no write lands between its last catch-up and the switch.
        while True:
            try:
                self._update(tenant, add, "registering an ingest run")
                return run.run_id
            except _Held:
                time.sleep(0.2)

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

    # -- a source's sync state (``ingest.sync``) -------------------------------------------------

    def sync_state(self, tenant: str, source: str) -> dict[str, Any] | None:
        """``tenant``'s sync state of the source index ``source`` (its checkpoint and the run in
        progress, as ``ingest.sync_state`` shapes them), None when it has none."""
        doc = self._get(sync_key(tenant, source))
        return None if doc is None else dict(doc["_source"].get("sync") or {})

    def update_sync(
        self,
        tenant: str,
        source: str,
        change: Callable[[dict[str, Any]], dict[str, Any]],
        what: str = "recording a sync checkpoint",
    ) -> dict[str, Any]:
        """Apply ``change`` to the sync state (an empty dict when there is none) by
        compare-and-set, retried on conflict; returns the new state. ``change`` may run more than
        once (once per try): it must be a function of its argument alone, and may raise to give
        up (nothing is written then)."""

        def wrap(src: dict[str, Any]) -> dict[str, Any]:
            return {**src, "sync": change(dict(src.get("sync") or {}))}

        initial = {"tenant": tenant, "source": source, "sync": {}}
        return dict(self._cas(sync_key(tenant, source), initial, wrap, what)["sync"])

    def drop_sync(self, tenant: str, source: str) -> None:
        """Forget ``tenant``'s sync state of ``source`` (the next sync is a full pass)."""
        if self._get(sync_key(tenant, source)) is not None:
            self.client.delete(self.index, sync_key(tenant, source), refresh="true")

    # -- an online rebuild's state and its write barrier (``ingest.rebuild``) --------------------

    def earliest_pending(self, tenant: str) -> datetime | None:
        """When the earliest writer run of ``tenant`` still pending began (its records carry
        that time), None when none is."""
        doc = self._get(tenant)
        starts = [
            _parsed(m["started_at"])
            for m in ((doc or {}).get("_source", {}).get("pending") or {}).values()
        ]
        return min(starts) if starts else None

    def rebuild_state(self, tenant: str, name: str) -> dict[str, Any] | None:
        """The state of the rebuild of ``tenant``'s chunks index ``name`` (its source, target,
        progress, the generation before the last switch), None when it has none."""
        doc = self._get(rebuild_key(tenant, name))
        return None if doc is None else dict(doc["_source"].get("rebuild") or {})

    def update_rebuild(
        self, tenant: str, name: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Apply ``change`` to the rebuild state (an empty dict when there is none) by
        compare-and-set; returns the new state (``change`` may run more than once)."""

        def wrap(src: dict[str, Any]) -> dict[str, Any]:
            return {**src, "rebuild": change(dict(src.get("rebuild") or {}))}

        initial = {"tenant": tenant, "rebuild": {}}
        key = rebuild_key(tenant, name)
        return dict(self._cas(key, initial, wrap, "recording a rebuild")["rebuild"])

    @contextlib.contextmanager
    def writes_held(self, tenant: str, *, wait: float = 60.0) -> Iterator[None]:
        """Hold ``tenant``'s new writer runs (:meth:`begin` waits while the hold stands), wait
        until the runs in flight have finished, then run the block; the hold is released on the
        way out, and lapses by itself after its lease should its holder die. Raises
        ConfigurationError, releasing the hold, when runs are still in flight after ``wait``
        seconds: nothing inside the block ran."""
        holder = uuid.uuid4().hex
        until = (self._clock() + timedelta(seconds=wait) + self.lease).isoformat()

        def hold(src: dict[str, Any]) -> dict[str, Any]:
            return {**src, "held": {"by": holder, "until": until}}

        def release(src: dict[str, Any]) -> dict[str, Any]:
            if (src.get("held") or {}).get("by") == holder:
                src = {k: v for k, v in src.items() if k != "held"}
            return src

        self._update(tenant, hold, "holding the tenant's writes")
        try:
            deadline = time.monotonic() + wait
            while True:
                self.repair(tenant)  # runs that died hold nothing up
                pending = self.read(tenant).pending
                if not pending:
                    break
                if time.monotonic() > deadline:
                    raise ConfigurationError(
                        f"{len(pending)} writer run(s) of tenant {tenant!r} were still in flight "
                        f"after {wait:g} s; nothing was switched",
                        hint="run it again when the ingest is done, or give it longer "
                        "(hybrid-es reindex --switch-wait SECONDS)",
                    )
                time.sleep(0.2)
            yield
        finally:
            self._update(tenant, release, "releasing the tenant's writes")

    @while_shards_start
    def _get(self, key: str) -> dict[str, Any] | None:
        # The state index another writer has just created can answer 503 until its shard starts.
        return self.client.get(self.index, key)

    # -- the compare-and-set loop ----------------------------------------------------------------

    def _update(
        self, tenant: str, change: Callable[[dict[str, Any]], dict[str, Any]], what: str
    ) -> dict[str, Any]:
        """Apply ``change`` to the tenant's document with compare-and-set; returns the new source.
        Raises an EngineError subclass when the cluster fails (conflicts that outlast the
        retries included)."""
        initial = {"tenant": tenant, "watermark": 0, "pending": {}, "last_change": None}
        return self._cas(tenant, initial, change, what)

    @_cas_retry
    def _cas(
        self,
        key: str,
        initial: dict[str, Any],
        change: Callable[[dict[str, Any]], dict[str, Any]],
        what: str,
    ) -> dict[str, Any]:
        now = self._clock().isoformat()
        doc = self._get(key)
        # refresh=true: a reader under document-level security cannot get in real time (the
        # security plugin turns realtime off), so an unrefreshed watermark would read as absent
        # or old for up to a second after the write, and a packet could be reused on evidence
        # that just changed. One small document per tenant: the refresh costs little.
        if doc is None:
            src = change(dict(initial))
            src["updated_at"] = now
            self.client.index(self.index, src, id=key, op_type="create", refresh="true", what=what)
            return src
        src = change(dict(doc["_source"]))
        src["updated_at"] = now
        self.client.index(
            self.index,
            src,
            id=key,
            if_seq_no=doc["_seq_no"],
            if_primary_term=doc["_primary_term"],
            refresh="true",
            what=what,
        )
        return src
