"""Reading traces back, scoped to the caller.

A trace records what one caller saw (the chunk ids of their hits, their packet verdicts), so it
is readable by that caller only: a principal reads the traces of their own tenant and user id. A
principal with the operator role (``models.OPERATOR_ROLE``) reads every tenant's traces, or one
tenant's. A trace outside the caller's scope is indistinguishable from one that does not exist.

The tenant is ``organization.id`` and the user ``user.id`` (ECS, see ``documents``); reads go to
the storage's pattern (``<traces>-*``: the data stream and every dated index), each through the
traces door (``door.TracesDoor``), which checks the caller's scope in the body before sending.
"""

from __future__ import annotations

from typing import Any

from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.errors import BadQueryError, TraceNotFoundError
from hybrid_es.models import Principal
from hybrid_es.traces.documents import NS
from hybrid_es.traces.door import TracesDoor, scope_filter
from hybrid_es.traces.storage import TraceStorage

ID_CHARS = 12
"""Trace ids are shown (and may be given to ``show``) as their first 12 characters."""
PACKET_OPERATIONS = ("packet_build", "packet_validate")
TRACE_ID = "trace.id"
ACTION = "event.action"


class TraceReader:
    """Queries over the traces for one caller at a time (``client``: an
    :class:`~hybrid_es.cluster.engine.Engine` or a client it wraps; ``storage``: the deployment's
    :class:`~hybrid_es.traces.storage.TraceStorage`, whose pattern is read, or an index, data
    stream or pattern by name). The engine's traces are guarded from then on: a body read of
    them by any other way than a door is refused (``door``)."""

    def __init__(self, client: Engine | Any, storage: TraceStorage | str, *, url: str = "") -> None:
        self.client = as_engine(client, url=url)
        self.door = TracesDoor(self.client, storage)
        self.index = self.door.index
        self.url = url

    def _search(
        self,
        principal: Principal,
        body: dict[str, Any],
        tenant: str | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """One search of the traces index for ``principal`` through the door; ``params`` are URL
        parameters. Raises PolicyViolationError for a body outside the caller's scope, and the
        package's errors (``EngineError`` and its subclasses)."""
        return self.door.search(principal, body, tenant=tenant, **params)

    def tail(
        self,
        principal: Principal,
        *,
        n: int = 20,
        errors: bool = False,
        tenant: str | None = None,
        candidates: bool = True,
    ) -> list[dict[str, Any]]:
        """The caller's ``n`` most recent traces, oldest first (like tail)."""
        if not 1 <= n <= 1000:
            raise BadQueryError(f"n must be 1..1000, got {n}")
        filters = scope_filter(principal, tenant)
        if errors:
            filters.append({"exists": {"field": "error.message"}})
        body: dict[str, Any] = {
            "query": {"bool": {"filter": filters}},
            "sort": [
                {"@timestamp": "desc"},
                {TRACE_ID: {"order": "asc", "unmapped_type": "keyword"}},
            ],
            "size": n,
        }
        if not candidates:
            body["_source"] = {"excludes": [f"{NS}.candidates", f"{NS}.query_text"]}
        docs = [h["_source"] for h in self._search(principal, body, tenant)["hits"]["hits"]]
        docs.reverse()
        return docs

    def show(self, principal: Principal, trace_id: str) -> dict[str, Any]:
        """One of the caller's traces by id or id prefix. Raises TraceNotFoundError when the
        caller has none by that id (whether or not someone else has), BadQueryError when the
        prefix is empty or matches more than one."""
        wanted = trace_id.strip().lower()
        if not wanted:
            raise BadQueryError("give a trace id (see `hybrid-es traces tail`)")
        match = {"prefix": {TRACE_ID: wanted}} if len(wanted) < 32 else {"term": {TRACE_ID: wanted}}
        docs = [
            h["_source"]
            for h in self._search(
                principal,
                {
                    "query": {"bool": {"filter": [match, *scope_filter(principal)]}},
                    "size": 2,
                    "sort": [{"@timestamp": "desc"}],
                },
            )["hits"]["hits"]
        ]
        if not docs:
            raise TraceNotFoundError(
                f"no trace {trace_id!r}", hint="`hybrid-es traces tail` lists recent ones"
            )
        if len(docs) > 1:
            raise BadQueryError(f"{trace_id!r} matches more than one trace; give more characters")
        return dict(docs[0])

    def packet_stats(self, principal: Principal, *, tenant: str | None = None) -> dict[str, Any]:
        """Reuse rate, verdict counts and packet build/validate p50/p95 over the caller's
        traces: ``{"reuse_rate", "verdicts", "latency_ms": {op: {count, p50, p95}}}``."""
        filters = [
            {"terms": {ACTION: list(PACKET_OPERATIONS)}},
            *scope_filter(principal, tenant),
        ]
        aggs: dict[str, Any] = {
            "reuse_rate": {"avg": {"field": f"{NS}.packet.reuse"}},
            "verdicts": {"terms": {"field": f"{NS}.packet.verdict", "size": 10}},
        }
        for op in PACKET_OPERATIONS:
            ms = {"percentiles": {"field": f"{NS}.latency_ms.{op}", "percents": [50, 95]}}
            aggs[op] = {"filter": {"term": {ACTION: op}}, "aggs": {"ms": ms}}
        found = self._search(
            principal,
            {"size": 0, "query": {"bool": {"filter": filters}}, "aggs": aggs},
            tenant,
            ignore_unavailable=True,
        )
        out = found.get("aggregations", {})
        ops: dict[str, dict[str, Any]] = {}
        for op in PACKET_OPERATIONS:
            values = out.get(op, {}).get("ms", {}).get("values", {})
            ops[op] = {
                "count": out.get(op, {}).get("doc_count", 0),
                "p50": values.get("50.0"),
                "p95": values.get("95.0"),
            }
        return {
            "reuse_rate": out.get("reuse_rate", {}).get("value"),
            "verdicts": {
                b["key"]: b["doc_count"] for b in out.get("verdicts", {}).get("buckets", [])
            },
            "latency_ms": ops,
        }
