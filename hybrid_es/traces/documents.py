"""Query and packet traces: pure document builders, and a background writer for the traces index.

A trace says what one search or packet operation did: who asked (tenant, principal), a keyed hash
of the query (``hybrid_es.hashing``; the raw text only when the operator opts in with
``HYBRID_ES_TRACE_QUERY_TEXT=true``), the
fusion path, per-stage latencies, every returned hit with its provenance and authorization, the
packet verdict, and the error if there was one. Documents follow
``es_templates/component/hybrid-es-trace-mappings.json`` (``dynamic: strict``).

Two rules shape this module:

- **Only what the caller was allowed to see.** A search trace is built from the response's hits
  alone; a response never holds an out-of-scope record, and the builder adds nothing from
  elsewhere. Error text is scrubbed of credentials before it is stored.
- **No trace for a refused request.** A request refused before retrieval (a bad query, a tenant
  with no corpus, credentials the cluster rejects) writes nothing under the name it claimed; the
  writer counts it (``TraceWriterStats.refused``) by kind.
- **Tracing never slows or fails the caller.** ``TraceWriter.submit`` puts the document on a
  bounded queue and returns; a daemon thread writes batches with the bulk helper. A full queue, a
  refused item or an unreachable cluster is counted as a drop, never raised.

Wiring (the searcher's hooks)::

    writer = TraceWriter(client, settings.traces_index)
    tracer = search_hook(writer, query_text=settings.trace_query_text)
    searcher = HybridSearcher(client, embedder, on_response=tracer, ...)
    ...
    writer.close()
"""

from __future__ import annotations

import logging
import math
import queue
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from elasticsearch import Elasticsearch, helpers

from hybrid_es.errors import (
    AuthenticationError,
    BadQueryError,
    HybridEsError,
    UnknownTenantError,
)
from hybrid_es.hashing import PROCESS_KEY, keyed_digest
from hybrid_es.models import Hit, Principal, SearchResponse
from hybrid_es.retrieval.queries import clean_query

REFUSED = (BadQueryError, UnknownTenantError, AuthenticationError)
"""Errors that refuse a request before (or instead of) retrieval: counted, never traced."""

log = logging.getLogger(__name__)

STAGES = (
    "embed",
    "sparse",
    "dense",
    "retrieval",
    "fusion",
    "rerank",
    "packet_build",
    "packet_validate",
    "total",
)
"""The latency stages the traces mapping knows (``latency_ms.<stage>``); others are not stored."""

PACKET_VALIDATE = "packet_validate"
REUSE = "reuse"

MAX_TEXT_CHARS = 2000
"""Cap on stored query text (the searcher refuses longer queries anyway)."""
MAX_ERROR_CHARS = 1000
MAX_AUTH_CHARS = 512
MAX_REASONS = 50

_REDACTED = "[redacted]"
_SECRET_PATTERNS = (
    # user:password@ in any URL (scheme://user:pass@host)
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s:@]*:[^/\s@]*@"), rf"\1{_REDACTED}@"),
    # Authorization headers and their schemes
    (
        re.compile(r"(?i)\b(authorization\s*[:=]\s*)(basic|bearer|apikey)\s+[^\s,;'\"]+"),
        rf"\1\2 {_REDACTED}",
    ),
    (re.compile(r"(?i)\b(basic|bearer|apikey)\s+[A-Za-z0-9+/=._-]{8,}"), rf"\1 {_REDACTED}"),
    # key=value / key: value pairs whose key names a secret (also HYBRID_ES_PASSWORD=...)
    (
        re.compile(
            r"(?i)((?:api[_-]?key|password|passwd|pwd|secret|token)['\"]?\s*[:=]\s*['\"]?)"
            r"[^\s,;'\"&)}\]]+"
        ),
        rf"\1{_REDACTED}",
    ),
)


def scrub(text: str) -> str:
    """``text`` with credentials removed: URL user-info, Authorization values, ``password=...``.

    Defence in depth for error text that reaches a trace: the package's own messages never carry
    credentials (they use the redacted URL), but an exception from elsewhere might.
    """
    for pattern, repl in _SECRET_PATTERNS:
        text = pattern.sub(repl, text)
    return text


def _clip(text: str, limit: int) -> str:
    # Lone surrogates cannot be encoded as UTF-8: the bulk request would fail as a whole.
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _error_text(error: BaseException | str) -> tuple[str, str | None]:
    if isinstance(error, str):
        return _clip(scrub(error), MAX_ERROR_CHARS), None
    text = str(error) if isinstance(error, HybridEsError) else f"{type(error).__name__}: {error}"
    return _clip(scrub(text), MAX_ERROR_CHARS), type(error).__name__


def _timestamp(now: datetime) -> str:
    aware = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat(timespec="milliseconds")


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def _latencies(timings: Mapping[str, float]) -> dict[str, float]:
    out = {}
    for stage in STAGES:
        v = _finite(timings.get(stage))
        if v is not None:
            out[stage] = round(v, 3)
    return out


def _base(
    principal: Principal, operation: str, now: datetime, trace_id: str | None
) -> dict[str, Any]:
    return {
        "@timestamp": _timestamp(now),
        "trace_id": trace_id or uuid.uuid4().hex,
        "operation": operation,
        "tenant": principal.tenant,
        "principal_id": principal.user_id,
        "scope_version": principal.scope_version,
    }


def _candidate(hit: Hit) -> dict[str, Any]:
    c: dict[str, Any] = {
        "chunk_id": hit.chunk_id,
        "doc_id": hit.doc_id,
        "source_version": hit.source_version,
        "sparse_rank": hit.sparse_rank,
        "dense_rank": hit.dense_rank,
        "sparse_score": _finite(hit.sparse_score),
        "dense_score": _finite(hit.dense_score),
        "fused_score": _finite(hit.fused_score),
        "rerank_score": _finite(hit.rerank_score),
        "final_rank": hit.final_rank,
        "allowed": hit.authorization.allowed,
        "authorization": _clip(hit.authorization.short(), MAX_AUTH_CHARS),
    }
    return {k: v for k, v in c.items() if v is not None}


def _in_scope(principal: Principal, hit: Hit) -> bool:
    # The searcher fails closed before a response exists, so this never drops a real hit; it keeps
    # a hand-built or future response from carrying another tenant's record into the index.
    tenant = hit.source.get("tenant", principal.tenant)
    return hit.authorization.allowed and tenant == principal.tenant


def search_trace(
    principal: Principal,
    response: SearchResponse,
    *,
    now: datetime,
    query_text: str | None = None,
    error: str | None = None,
    trace_id: str | None = None,
) -> dict[str, Any]:
    """The trace document for one answered search. Pure.

    ``query_text`` is stored only when given (pass it only when the operator opted in); it is
    clipped to 2,000 characters. ``error`` is scrubbed of credentials. Only ``response.hits`` are
    recorded, and only those authorized for ``principal``'s tenant.
    """
    hits = [h for h in response.hits if _in_scope(principal, h)]
    doc = _base(principal, "search", now, trace_id)
    doc.update(
        {
            "query_hash": response.query_hash,
            "fusion_path": response.fusion_path,
            "fusion_reason": _clip(response.fusion_reason, MAX_ERROR_CHARS),
            "reranked": response.reranked,
            "hit_count": len(hits),
            "candidate_count": response.candidates,
            "request_digest": response.request_digest or None,
            "latency_ms": _latencies(response.timings_ms),
            "candidates": [_candidate(h) for h in hits],
        }
    )
    if hits:
        doc["policy_version"] = hits[0].authorization.policy_version
    if query_text is not None:
        doc["query_text"] = _clip(query_text, MAX_TEXT_CHARS)
    if error is not None:
        doc["error"], _ = _error_text(error)
    return {k: v for k, v in doc.items() if v is not None}


def search_error_trace(
    principal: Principal,
    *,
    query_hash: str,
    error: BaseException | str,
    now: datetime,
    timings_ms: Mapping[str, float] | None = None,
    query_text: str | None = None,
    trace_id: str | None = None,
) -> dict[str, Any]:
    """The trace document for a search that failed (no response, so no candidates). Pure.

    The error is stored as its type and its scrubbed, clipped message, so failing queries can be
    grouped by ``query_hash`` in Kibana.
    """
    doc = _base(principal, "search", now, trace_id)
    message, kind = _error_text(error)
    doc.update(
        {
            "query_hash": query_hash,
            "hit_count": 0,
            "latency_ms": _latencies(timings_ms or {}),
            "error": message,
        }
    )
    if kind is not None:
        doc["error_type"] = kind
    if query_text is not None:
        doc["query_text"] = _clip(query_text, MAX_TEXT_CHARS)
    return doc


def packet_trace(
    principal: Principal,
    *,
    packet_id: str,
    operation: str,
    verdict: str | None,
    reasons: Sequence[str],
    latency_ms: float | Mapping[str, float],
    now: datetime,
    error: BaseException | str | None = None,
    trace_id: str | None = None,
) -> dict[str, Any]:
    """The trace document for one packet operation (``packet_build``, ``packet_validate``, ...).

    ``latency_ms`` is either the operation's duration (stored as ``total`` and, when the operation
    names a stage, under that stage) or a mapping of stage to milliseconds. On ``packet_validate``
    ``packet_reuse`` is 1 when the verdict is ``reuse`` and 0 otherwise, so the average is the
    reuse rate. Raises ValueError for an empty packet id or operation. Pure.
    """
    if not packet_id or not operation:
        raise ValueError("a packet trace needs a packet_id and an operation")
    if isinstance(latency_ms, Mapping):
        timings = dict(latency_ms)
    else:
        timings = {"total": float(latency_ms)}
        if operation in STAGES:
            timings[operation] = float(latency_ms)
    doc = _base(principal, operation, now, trace_id)
    doc.update(
        {
            "packet_id": packet_id,
            "packet_verdict": verdict,
            "packet_reasons": [_clip(r, MAX_AUTH_CHARS) for r in reasons][:MAX_REASONS],
            "latency_ms": _latencies(timings),
        }
    )
    if operation == PACKET_VALIDATE:
        doc["packet_reuse"] = 1 if verdict == REUSE else 0
    if error is not None:
        doc["error"], kind = _error_text(error)
        if kind is not None:
            doc["error_type"] = kind
    return {k: v for k, v in doc.items() if v is not None}


# -- the writer ------------------------------------------------------------------------------


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


@dataclass
class _Control:
    done: threading.Event
    stop: bool = False


class TraceWriter:
    """Writes trace documents in the background, in bulk, bounded.

    ``submit`` never blocks and never raises. A daemon thread collects up to ``batch`` documents or
    waits ``flush_interval`` seconds, then sends them with ``elasticsearch.helpers.bulk`` (no
    retries, short timeout: a struggling cluster should not be pushed harder for traces). At most
    ``max_queue`` documents wait and ``batch`` more are in flight; call ``close()`` (or use the
    writer as a context manager) before the process exits, or what is still queued is lost.
    """

    def __init__(
        self,
        client: Elasticsearch,
        index: str,
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
        self.index = index
        self._client = client.options(request_timeout=request_timeout, max_retries=0)
        self._batch = batch
        self._interval = flush_interval
        self._queue: queue.Queue[dict[str, Any] | _Control] = queue.Queue(maxsize=max_queue)
        self._lock = threading.Lock()
        self._written = self._dropped = self._errors = 0
        self._refused: dict[str, int] = {}
        self._last_error: str | None = None
        self._last_log = -math.inf
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="hybrid-es-traces", daemon=True)
        self._thread.start()

    # -- caller side (any thread) ----------------------------------------------------------

    def submit(self, doc: dict[str, Any]) -> bool:
        """Queue ``doc`` for writing; False (and counted as dropped) when full or closed."""
        try:
            if not self._closed:
                self._queue.put_nowait(doc)
                return True
        except queue.Full:
            pass
        except Exception:  # never let tracing fail the caller
            pass
        self._count(dropped=1)
        return False

    def count_refused(self, kind: str) -> None:
        """Count a refused request (no trace is written for it)."""
        with self._lock:
            self._refused[kind] = self._refused.get(kind, 0) + 1

    def record_error(self, error: BaseException | str) -> None:
        """Count a trace that could not be built (the hook calls this instead of raising)."""
        self._count(errors=1, dropped=1, last=_error_text(error)[0])

    def stats(self) -> TraceWriterStats:
        with self._lock:
            return TraceWriterStats(
                written=self._written,
                dropped=self._dropped,
                errors=self._errors,
                queued=self._queue.qsize(),
                last_error=self._last_error,
                refused=dict(self._refused),
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
                self._count(dropped=left)
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
        self, *, written: int = 0, dropped: int = 0, errors: int = 0, last: str | None = None
    ) -> None:
        with self._lock:
            self._written += written
            self._dropped += dropped
            self._errors += errors
            if last is not None:
                self._last_error = last

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
        for d in docs:
            action: dict[str, Any] = {"_op_type": "create", "_index": self.index, "_source": d}
            if d.get("trace_id"):
                action["_id"] = d["trace_id"]  # create by id: a retried trace never duplicates
            actions.append(action)
        try:
            ok, failed = helpers.bulk(
                self._client,
                actions,
                chunk_size=len(actions),
                max_retries=0,
                raise_on_error=False,
                raise_on_exception=False,
            )
        except Exception as exc:  # unreachable cluster, bad credentials, serialization
            self._failed(len(docs), f"{type(exc).__name__}: {exc}")
            return
        refused = len(failed) if isinstance(failed, list) else int(failed)
        self._count(written=int(ok))
        if refused:
            self._failed(refused, _item_reason(failed))

    def _failed(self, n: int, reason: str) -> None:
        reason = _clip(scrub(reason), MAX_ERROR_CHARS)
        self._count(dropped=n, errors=1, last=reason)
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


# -- glue for the searcher --------------------------------------------------------------------


def _utcnow() -> datetime:
    return datetime.now(UTC)


class SearchTracer:
    """The searcher's hooks: ``on_response`` (this object called) and ``on_error``.

    Builds the trace on the caller's thread (tens of microseconds) and hands it to the writer;
    never raises.
    """

    def __init__(
        self,
        writer: TraceWriter,
        *,
        query_text: bool = False,
        clock: Callable[[], datetime] = _utcnow,
        hash_key: bytes = PROCESS_KEY,
    ) -> None:
        self.writer = writer
        self.query_text = query_text
        self._clock = clock
        self.hash_key = hash_key

    def __call__(
        self, principal: Principal, response: SearchResponse, query: str | None = None
    ) -> None:
        def build() -> dict[str, Any]:
            text = clean_query(query) if self.query_text and query is not None else None
            return search_trace(principal, response, now=self._clock(), query_text=text)

        self._submit(build)

    def _submit(self, build: Callable[[], dict[str, Any]]) -> None:
        """Build a trace and queue it; a failure to build is recorded, never raised."""
        try:
            doc = build()
        except Exception as exc:
            self.writer.record_error(exc)
            return
        self.writer.submit(doc)

    def on_error(
        self,
        principal: Principal,
        query: object,
        error: BaseException,
        timings_ms: Mapping[str, float] | None = None,
    ) -> None:
        """Trace a failed search. ``query`` is the caller's raw input (any type). A refused
        request (:data:`REFUSED`) is counted, not traced: its tenant is only a claim."""
        if isinstance(error, REFUSED):
            self.writer.count_refused(type(error).__name__)
            return
        self._submit(
            lambda: search_error_trace(
                principal,
                query_hash=_hash_any(query, self.hash_key),
                error=error,
                now=self._clock(),
                timings_ms=timings_ms,
                query_text=query if self.query_text and isinstance(query, str) else None,
            )
        )

    def packet(
        self,
        principal: Principal,
        *,
        packet_id: str,
        operation: str,
        verdict: str | None,
        reasons: Sequence[str],
        latency_ms: float | Mapping[str, float],
        error: BaseException | str | None = None,
    ) -> None:
        """Trace one packet operation (see :func:`packet_trace`); never raises."""
        self._submit(
            lambda: packet_trace(
                principal,
                packet_id=packet_id,
                operation=operation,
                verdict=verdict,
                reasons=reasons,
                latency_ms=latency_ms,
                now=self._clock(),
                error=error,
            )
        )

    def packet_event(self, principal: Principal, event: Mapping[str, Any]) -> None:
        """``PacketService(on_event=...)``: its event dict (operation, packet_id, verdict,
        reasons, latency_ms) as a packet trace; never raises."""
        try:
            self.packet(
                principal,
                packet_id=str(event["packet_id"]),
                operation=str(event["operation"]),
                verdict=event.get("verdict"),
                reasons=[str(r) for r in event.get("reasons") or ()],
                latency_ms=event["latency_ms"],
                error=event.get("error"),
            )
        except Exception as exc:
            self.writer.record_error(exc)


def _hash_any(query: object, key: bytes) -> str:
    # Hash what the searcher would have hashed, so a failing query groups with its successes.
    if not isinstance(query, str):
        return keyed_digest(key, f"<{type(query).__name__}>")
    try:
        return keyed_digest(key, clean_query(query))
    except BadQueryError:
        return keyed_digest(key, query.encode("utf-8", "replace").decode("utf-8"))


def search_hook(
    writer: TraceWriter,
    *,
    query_text: bool = False,
    clock: Callable[[], datetime] = _utcnow,
    hash_key: bytes = PROCESS_KEY,
) -> SearchTracer:
    """The ``on_response`` hook for :class:`~hybrid_es.retrieval.searcher.HybridSearcher` (and, through
    ``.on_error``, its error hook). ``query_text`` comes from ``Settings.trace_query_text``;
    ``hash_key`` must be the searcher's, so failures group with successes."""
    return SearchTracer(writer, query_text=query_text, clock=clock, hash_key=hash_key)


def packet_hook(
    writer: TraceWriter, *, clock: Callable[[], datetime] = _utcnow
) -> Callable[[Principal, Mapping[str, Any]], None]:
    """The ``on_event`` hook for :class:`~hybrid_es.packets.service.PacketService`."""
    return SearchTracer(writer, clock=clock).packet_event
