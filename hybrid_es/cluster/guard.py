"""The engine seam's half of the chunks door (and of the traces door): which requests read a
guarded index, and whether its door let them through. Pure, but for one context variable.

Records reach a caller only through a body checked for the policy (``retrieval.door``: the
dialect's ``assert_policy`` on every leaf). The check happens above the engine, so the engine
keeps the other half: an :class:`~hybrid_es.cluster.engine.Engine` told which indices hold chunks
(:meth:`Engine.guard`, done by every searcher, ingestor and packet service for its layout)
refuses a request that reads one with a body (:data:`BODY_READS`: search, count, explain,
scroll scan, ...) unless it comes through the door (:func:`opened`). A module that sends a body
around the door fails on its first run, with :class:`PolicyViolationError`, before anything is
sent.

Reads by id (GET, ``_mget``) carry no body to check and are not body reads: their callers name
ids of their own tenant (``identity.chunk_key``), and what they read is re-checked in Python.

The traces indices have a door of the same kind (``traces.door.TracesDoor``, which checks the
caller's tenant and user scope, or operator role, in the body): an engine told which indices
hold traces (:meth:`Engine.guard_traces`, done by every trace reader and pruner) refuses a body
read of one that did not come through it (:func:`opened_traces`). Each door opens its own
passage only: a read of the chunks through the traces door is refused, and the other way round.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from hybrid_es.errors import PolicyViolationError

BODY_READS = frozenset(
    {
        "_search",
        "_msearch",
        "_count",
        "_explain",
        "_validate",
        "_termvectors",
        "_mtermvectors",
        "_knn_search",
        "_delete_by_query",
        "_update_by_query",
        "_async_search",
        "_terms_enum",
        "_pit",
        "point_in_time",
    }
)
"""Endpoints that read records through a body (or open a view for one to read)."""

Door = Literal["chunks", "traces"]

_THROUGH_DOOR: contextvars.ContextVar[Door | None] = contextvars.ContextVar(
    "hybrid_es_through_door", default=None
)
"""The door whose passage is open in this context, if any."""


@contextlib.contextmanager
def _passage(door: Door) -> Iterator[None]:
    token = _THROUGH_DOOR.set(door)
    try:
        yield
    finally:
        _THROUGH_DOOR.reset(token)


@contextlib.contextmanager
def opened() -> Iterator[None]:
    """The chunks door's own passage: requests sent inside it have had their bodies checked."""
    with _passage("chunks"):
        yield


@contextlib.contextmanager
def opened_traces() -> Iterator[None]:
    """The traces door's own passage (``traces.door``): requests sent inside it have had their
    bodies checked for the caller's scope."""
    with _passage("traces"):
        yield


def through_door(door: Door = "chunks") -> bool:
    """Whether ``door``'s passage is open here."""
    return _THROUGH_DOOR.get() == door


def is_guarded(index: str, bases: Iterable[str]) -> bool:
    """Whether ``index`` (a name, a comma list or a pattern) may name a chunks index whose base
    name is one of ``bases`` (``hybrid-es-chunks`` guards ``hybrid-es-chunks-t-acme`` and any
    pattern or list that could reach it: ``*``, ``_all``, ``hybrid-es-*``)."""
    bases = tuple(bases)
    for name in index.split(","):
        name = name.strip().lstrip("-")
        if not name:
            continue
        if name in ("*", "_all"):
            return bool(bases)
        for base in bases:
            if name.startswith(base):
                return True
            if "*" in name and base.startswith(name.split("*", 1)[0]):
                return True
    return False


def body_read_target(path: str) -> str | None:
    """The index part of ``path`` when the request reads records through a body (``/i/_search``,
    ``/i/_doc/x/_explain``, ``/_msearch`` gives ``""``: its indices are in the body), else None."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if not parts:
        return None
    if parts[:2] == ["_search", "pipeline"]:  # OpenSearch's search pipelines: no record
        return None
    if parts[0] == "_pit" or parts[:2] == ["_search", "point_in_time"]:
        # Closing (or listing) points in time reads no record; opening one names its index
        # (``/i/_pit``, OpenSearch's ``/i/_search/point_in_time``) and is checked.
        return None
    if parts[0] in BODY_READS:
        return ""
    if any(p in BODY_READS for p in parts[1:]):
        return parts[0]
    return None


def refuse_around_door(what: str, index: str, door: Door = "chunks") -> PolicyViolationError:
    if door == "traces":
        return PolicyViolationError(
            f"{what} on the traces index {index!r} did not come through the traces door",
            hint="read traces through hybrid_es.traces.door.TracesDoor (or TraceReader), which "
            "checks the caller's tenant and user scope in the body before it is sent",
        )
    return PolicyViolationError(
        f"{what} on the chunks index {index!r} did not come through the policy door",
        hint="read chunks through hybrid_es.retrieval.door.ChunksDoor, which checks the policy "
        "filter in every leaf of the body before it is sent",
    )


def msearch_indices(body: Any) -> list[str]:
    """The index each header line of an ``_msearch`` body names (NDJSON text or a list of lines:
    header, body, header, body, ...); ``_all`` for a header that names none or cannot be read."""
    if isinstance(body, str):
        lines: list[Any] = []
        for line in body.splitlines()[::2]:
            try:
                lines.append(json.loads(line))
            except ValueError:
                lines.append({})
    else:
        lines = list(body or [])[::2]
    out = []
    for header in lines:
        index = header.get("index", "_all") if isinstance(header, dict) else "_all"
        out.append(",".join(map(str, index)) if isinstance(index, list) else str(index))
    return out


def check(path: str, bases: tuple[str, ...], body: Any = None, *, door: Door = "chunks") -> None:
    """Refuse (PolicyViolationError) a body read of an index that ``bases`` guard, sent around
    ``door``; an ``_msearch``'s indices are read from its header lines (``body``)."""
    if not bases or through_door(door):
        return
    target = body_read_target(path)
    if target is None:
        return
    if not target and isinstance(body, dict) and "pit" in body:
        return  # a point in time's search: its indices were checked when it was opened
    names = [target] if target else (msearch_indices(body) or ["_all"])
    for name in names:
        if is_guarded(name, bases):
            raise refuse_around_door("a body read", name, door)
