"""Trace documents: what one search or packet operation did, as the traces store keeps it. Pure.

A trace says who asked (tenant, principal), a keyed hash of the query (``hybrid_es.hashing``; the
raw text only when the operator opts in with ``HYBRID_ES_TRACE_QUERY_TEXT=true``), the fusion
path, per-stage latencies, every returned hit with its provenance and authorization, the packet
verdict, and the error if there was one. Documents follow
``es_templates/component/hybrid-es-trace-mappings.json`` (``dynamic: strict``): Elastic Common
Schema names where ECS has one, ``hybrid_es.*`` for the rest::

    @timestamp          when                       ecs.version       ECS_VERSION
    trace.id            32 hex characters          event.action      search, packet_build, ...
    event.outcome       success or failure         event.duration    total latency, nanoseconds
    organization.id     the caller's tenant        user.id           the caller's user id
    error.message       scrubbed, clipped          error.type        the exception's class
    hybrid_es.*         query_hash, fusion_path, latency_ms.<stage>, candidates, packet.*, ...

The tenant is ``organization.id``: ECS's field for data "arranged or filtered by organization",
which is what a tenant is here; trace reads filter on it (``door.scope_filter``).

**Only what the caller was allowed to see.** A search trace is built from the response's hits
alone; a response never holds an out-of-scope record, and the builder adds nothing from
elsewhere. Error text is scrubbed of credentials before it is stored.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from hybrid_es.errors import (
    AuthenticationError,
    BadQueryError,
    HybridEsError,
    UnknownTenantError,
)
from hybrid_es.models import Hit, Principal, SearchResponse

REFUSED = (BadQueryError, UnknownTenantError, AuthenticationError)
"""Errors that refuse a request before (or instead of) retrieval: counted, never traced."""

STAGES = (
    "model_load",
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
"""The latency stages the traces mapping knows (``hybrid_es.latency_ms.<stage>``); others are
not stored."""

PACKET_VALIDATE = "packet_validate"
REUSE = "reuse"

MAX_TEXT_CHARS = 2000
"""Cap on stored query text (the searcher refuses longer queries anyway)."""
MAX_ERROR_CHARS = 1000
MAX_AUTH_CHARS = 512
MAX_REASONS = 50

ECS_VERSION = "8.11.0"
"""The ECS version whose field names and types the trace documents follow."""
NS = "hybrid_es"
"""Our own fields' namespace (ECS's advice for custom fields: a name ECS will not take)."""

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


def clip(text: str, limit: int) -> str:
    # Lone surrogates cannot be encoded as UTF-8: the bulk request would fail as a whole.
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_text(error: BaseException | str) -> tuple[str, str | None]:
    if isinstance(error, str):
        return clip(scrub(error), MAX_ERROR_CHARS), None
    text = str(error) if isinstance(error, HybridEsError) else f"{type(error).__name__}: {error}"
    return clip(scrub(text), MAX_ERROR_CHARS), type(error).__name__


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
        "ecs": {"version": ECS_VERSION},
        "trace": {"id": trace_id or uuid.uuid4().hex},
        "event": {"action": operation},
        "organization": {"id": principal.tenant},
        "user": {"id": principal.user_id},
    }


def _event(doc: dict[str, Any], latency: Mapping[str, float], failed: bool) -> None:
    """``event.outcome`` and ``event.duration`` (ECS: nanoseconds) from the total latency."""
    doc["event"]["outcome"] = "failure" if failed else "success"
    if "total" in latency:
        doc["event"]["duration"] = round(latency["total"] * 1_000_000)


def _error(doc: dict[str, Any], error: BaseException | str) -> None:
    message, kind = error_text(error)
    doc["error"] = {"message": message} if kind is None else {"message": message, "type": kind}


def _ours(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``hybrid_es.*`` without the fields that have no value."""
    return {k: v for k, v in fields.items() if v is not None}


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
        "authorization": clip(hit.authorization.short(), MAX_AUTH_CHARS),
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
    latency = _latencies(response.timings_ms)
    doc[NS] = _ours(
        {
            "scope_version": principal.scope_version,
            "policy_version": hits[0].authorization.policy_version if hits else None,
            "query_hash": response.query_hash,
            "query_text": None if query_text is None else clip(query_text, MAX_TEXT_CHARS),
            "fusion_path": response.fusion_path,
            "fusion_reason": clip(response.fusion_reason, MAX_ERROR_CHARS),
            "reranked": response.reranked,
            "hit_count": len(hits),
            "candidate_count": response.candidates,
            "request_digest": response.request_digest or None,
            "latency_ms": latency,
            "candidates": [_candidate(h) for h in hits],
        }
    )
    _event(doc, latency, failed=error is not None)
    if error is not None:
        doc["error"] = {"message": error_text(error)[0]}
    return doc


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
    grouped by ``hybrid_es.query_hash`` in Kibana.
    """
    doc = _base(principal, "search", now, trace_id)
    latency = _latencies(timings_ms or {})
    doc[NS] = _ours(
        {
            "scope_version": principal.scope_version,
            "query_hash": query_hash,
            "query_text": None if query_text is None else clip(query_text, MAX_TEXT_CHARS),
            "hit_count": 0,
            "latency_ms": latency,
        }
    )
    _event(doc, latency, failed=True)
    _error(doc, error)
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
    ``hybrid_es.packet.reuse`` is 1 when the verdict is ``reuse`` and 0 otherwise, so the average
    is the reuse rate. Raises ValueError for an empty packet id or operation. Pure.
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
    latency = _latencies(timings)
    packet = _ours(
        {
            "id": packet_id,
            "verdict": verdict,
            "reasons": [clip(r, MAX_AUTH_CHARS) for r in reasons][:MAX_REASONS],
            "reuse": (1 if verdict == REUSE else 0) if operation == PACKET_VALIDATE else None,
        }
    )
    doc[NS] = _ours(
        {"scope_version": principal.scope_version, "packet": packet, "latency_ms": latency}
    )
    _event(doc, latency, failed=error is not None)
    if error is not None:
        _error(doc, error)
    return doc


def value_at(doc: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` of a stored trace (``"hybrid_es.packet.verdict"``), None
    where there is none. Pure."""
    node: Any = doc
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node
