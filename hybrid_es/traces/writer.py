"""The background writer of traces: bounded, in bulk, never in the caller's way.

``TraceWriter.submit`` puts a document on a bounded queue and returns; a daemon thread writes
batches with the bulk helper. A full queue, a refused item or an unreachable cluster is counted
as a drop, never raised. A refused *request* (see ``documents.REFUSED``) is counted by kind and
never written.

Every drop is counted by its reason (:data:`DROP_REASONS`) in :class:`TraceWriterStats` and, with
OpenTelemetry, in the counter ``hybrid_es.traces.dropped`` (``telemetry.record_trace_drops``); the
CLI reports them when it exits (``traces.wiring.close_writer``).
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hybrid_es import telemetry
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.traces.documents import MAX_ERROR_CHARS, clip, error_text, scrub
from hybrid_es.traces.storage import TraceStorage

log = logging.getLogger(__name__)

DROP_REASONS = telemetry.TRACE_DROP_REASONS
"""Why a trace was lost: ``queue_full`` (the writer fell behind), ``closed`` (submitted after
close, or still queued when close gave up), ``unbuildable`` (the trace could not be built),
``refused`` (the cluster refused the document), ``request_failed`` (the bulk request failed:
unreachable, timed out, bad credentials)."""


@dataclass(frozen=True)
class TraceWriterStats:
    """Counters of a :class:`TraceWriter`.

    ``written``: documents the cluster accepted. ``dropped``: documents lost for any reason (queue
    full, writer closed, refused by the cluster, request failed). ``errors``: failure events (a
    bulk request that failed or had refused items, a trace that could not be built).
    """

    written: int = 0
    dropped: int = 0
    errors: int = 0
    queued: int = 0
    last_error: str | None = None
    refused: dict[str, int] = field(default_factory=dict)
    """Refused requests by error type: counted here instead of traced."""
    dropped_by: dict[str, int] = field(default_factory=dict)
    """``dropped`` by reason (:data:`DROP_REASONS`)."""


@dataclass
class _Control:
    done: threading.Event
    stop: bool = False


class TraceWriter:
    """Writes trace documents in the background, in bulk, bounded.

    ``submit`` never blocks and never raises. A daemon thread collects up to ``batch`` documents or
    waits ``flush_interval`` seconds, then sends them with the engine's bulk helper (no retries,
    short timeout: a struggling cluster should not be pushed harder for traces). ``client`` is an
    :class:`~hybrid_es.cluster.engine.Engine` or a client it wraps (``as_engine``). At most
    ``max_queue`` documents wait and ``batch`` more are in flight; call ``close()`` (or use the
    writer as a context manager) before the process exits, or what is still queued is lost.

    ``storage`` is the deployment's :class:`~hybrid_es.traces.storage.TraceStorage` (the data
    stream, or the dated index of each trace's day), or one index or data stream by name. Each
    trace is created under its ``trace.id``, so a retried batch never duplicates one (in a data
    stream: within its write index).
    """

    def __init__(
        self,
        client: Engine | Any,
        storage: TraceStorage | str,
        *,
        max_queue: int = 10_000,
        batch: int = 200,
        flush_interval: float = 1.0,
        request_timeout: float = 5.0,
    ) -> None:
        if max_queue < 1 or batch < 1 or flush_interval <= 0 or request_timeout <= 0:
            raise ValueError(
                "max_queue and batch must be >= 1, flush_interval and request_timeout > 0"
            )
        self.storage = storage
        self.index = storage.describe() if isinstance(storage, TraceStorage) else storage
        self._engine = as_engine(client).with_options(
            request_timeout=request_timeout, max_retries=0
        )
        self._batch = batch
        self._interval = flush_interval
        self._queue: queue.Queue[dict[str, Any] | _Control] = queue.Queue(maxsize=max_queue)
        self._lock = threading.Lock()
        self._written = self._dropped = self._errors = 0
        self._refused: dict[str, int] = {}
        self._dropped_by: dict[str, int] = {}
        self._last_error: str | None = None
        self._last_log = -math.inf
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="hybrid-es-traces", daemon=True)
        self._thread.start()

    # -- caller side (any thread) ----------------------------------------------------------

    def submit(self, doc: dict[str, Any]) -> bool:
        """Queue ``doc`` for writing; False (and counted as dropped) when full or closed."""
        reason = "closed"
        try:
            if not self._closed:
                self._queue.put_nowait(doc)
                return True
        except queue.Full:
            reason = "queue_full"
        except Exception:  # never let tracing fail the caller
            reason = "queue_full"
        self._count(dropped=1, reason=reason)
        return False

    def count_refused(self, kind: str) -> None:
        """Count a refused request (no trace is written for it)."""
        with self._lock:
            self._refused[kind] = self._refused.get(kind, 0) + 1

    def record_error(self, error: BaseException | str) -> None:
        """Count a trace that could not be built (the hook calls this instead of raising)."""
        self._count(errors=1, dropped=1, last=error_text(error)[0], reason="unbuildable")

    def stats(self) -> TraceWriterStats:
        with self._lock:
            return TraceWriterStats(
                written=self._written,
                dropped=self._dropped,
                errors=self._errors,
                queued=self._queue.qsize(),
                last_error=self._last_error,
                refused=dict(self._refused),
                dropped_by=dict(self._dropped_by),
            )

    def flush(self, timeout: float = 10.0) -> bool:
        """Write everything queued so far; True when done within ``timeout`` seconds."""
        return self._control(stop=False, timeout=timeout)

    def close(self, timeout: float = 10.0) -> TraceWriterStats:
        """Flush, stop the thread and return the final counters. Later submits are dropped."""
        if not self._closed:
            self._closed = True
            self._control(stop=True, timeout=timeout)
            self._thread.join(timeout=max(0.0, timeout))
            if not self._thread.is_alive():
                # Anything a racing submit queued after the stop marker is lost: count it.
                left = 0
                while True:
                    try:
                        left += not isinstance(self._queue.get_nowait(), _Control)
                    except queue.Empty:
                        break
                self._count(dropped=left, reason="closed")
        return self.stats()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _control(self, *, stop: bool, timeout: float) -> bool:
        if not self._thread.is_alive():
            return False
        ctrl = _Control(threading.Event(), stop=stop)
        try:
            self._queue.put(ctrl, timeout=timeout)
        except queue.Full:
            return False
        return ctrl.done.wait(timeout)

    def _count(
        self,
        *,
        written: int = 0,
        dropped: int = 0,
        errors: int = 0,
        last: str | None = None,
        reason: str = "request_failed",
    ) -> None:
        with self._lock:
            self._written += written
            self._dropped += dropped
            self._errors += errors
            if last is not None:
                self._last_error = last
            if dropped:
                self._dropped_by[reason] = self._dropped_by.get(reason, 0) + dropped
        if dropped:
            telemetry.record_trace_drops(dropped, reason)

    # -- the background thread -------------------------------------------------------------

    def _run(self) -> None:
        buf: list[dict[str, Any]] = []
        deadline = math.inf
        while True:
            wait = self._interval if not buf else max(0.0, deadline - time.monotonic())
            try:
                item: dict[str, Any] | _Control | None = self._queue.get(timeout=wait)
            except queue.Empty:
                item = None
            if isinstance(item, _Control):
                self._write(buf)
                buf = []
                item.done.set()
                if item.stop:
                    return
                continue
            if item is not None:
                if not buf:
                    deadline = time.monotonic() + self._interval
                buf.append(item)
                if len(buf) < self._batch and time.monotonic() < deadline:
                    continue
            if buf:
                self._write(buf)
                buf = []

    def _write(self, docs: list[dict[str, Any]]) -> None:
        if not docs:
            return
        actions: list[dict[str, Any]] = []
        today = datetime.now(UTC).date()
        for d in docs:
            index = (
                self.storage.target(d, today=today)
                if isinstance(self.storage, TraceStorage)
                else self.storage
            )
            # op_type create: the only one a data stream takes
            action: dict[str, Any] = {"_op_type": "create", "_index": index, "_source": d}
            trace = d.get("trace")
            if isinstance(trace, dict) and trace.get("id"):
                action["_id"] = trace["id"]  # create by id: a retried trace never duplicates
            actions.append(action)
        try:
            ok, failed = self._engine.bulk(
                actions,
                chunk_size=len(actions),
                max_retries=0,
                raise_on_error=False,
                raise_on_exception=False,
            )
        except Exception as exc:  # unreachable cluster, bad credentials, serialization
            self._failed(len(docs), f"{type(exc).__name__}: {exc}", "request_failed")
            return
        refused = len(failed) if isinstance(failed, list) else int(failed)
        self._count(written=int(ok))
        if refused:
            self._failed(refused, _item_reason(failed), "refused")

    def _failed(self, n: int, reason: str, kind: str) -> None:
        reason = clip(scrub(reason), MAX_ERROR_CHARS)
        self._count(dropped=n, errors=1, last=reason, reason=kind)
        now = time.monotonic()
        if now - self._last_log >= 60.0:  # one line a minute, whatever the failure rate
            self._last_log = now
            log.warning(
                "dropped %d trace(s) writing to %s: %s (totals: %s)",
                n,
                self.index,
                reason,
                self.stats(),
            )


def _item_reason(failed: Any) -> str:
    if not isinstance(failed, list) or not failed:
        return "the cluster refused trace documents"
    item = failed[0]
    info: Any = next(iter(item.values()), {}) if isinstance(item, dict) else {}
    err = info.get("error") if isinstance(info, dict) else None
    if isinstance(err, dict):
        # The type alone: a reason may quote a field value from the trace.
        return f"{len(failed)} refused, e.g. HTTP {info.get('status')} {err.get('type')}"
    return f"{len(failed)} refused, e.g. HTTP {info.get('status')}"
