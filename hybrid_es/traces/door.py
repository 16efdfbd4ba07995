"""The one door to the traces: every body that reads a traces index is checked for its caller's
scope here, as every body that reads chunks is checked for its policy (``retrieval.door``).

A trace records what one caller saw (the chunk ids of their hits, their packet verdicts), so a
read is confined to what its caller may see (:func:`scope_filter`): a principal reads the traces
of their own tenant and user id; a principal with the operator role (``models.OPERATOR_ROLE``)
reads every tenant's traces, or the one tenant they name. :func:`check_scope` refuses, before
anything is sent, a body whose ``query.bool.filter`` lacks a clause of that scope, and a body
that could read around its query (a ``global`` aggregation, a ``terms`` bucket of documents the
query did not match, ``suggest``, ``knn``, a ``retriever``, ...). Only then does the request pass
(``cluster.guard.opened_traces``): an engine that a door was opened on refuses every body read of
the traces indices that did not come this way (:meth:`Engine.guard_traces`), so a module cannot
go around the door (``tests/unit/test_trace_door.py``).

The tenant is ``organization.id`` and the user ``user.id`` (ECS, see ``documents``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.guard import opened_traces
from hybrid_es.errors import PolicyViolationError
from hybrid_es.models import Principal
from hybrid_es.traces.storage import TraceStorage

TENANT = "organization.id"
USER = "user.id"

BODY_KEYS = frozenset({"query", "size", "from", "sort", "_source", "aggs", "track_total_hits"})
"""What a trace read's body may hold: anything else (``suggest``, ``knn``, ``retriever``,
``post_filter``, ``runtime_mappings``, ``rescore``, ...) either reads outside the query or is no
part of what the readers ask, and is refused rather than judged."""
AGGREGATIONS = frozenset(
    {
        "avg",
        "sum",
        "min",
        "max",
        "value_count",
        "cardinality",
        "stats",
        "percentiles",
        "terms",
        "filter",
        "date_histogram",
    }
)
"""Aggregations that count only the documents the query matched. ``global`` (every document),
``significant_terms`` and ``significant_text`` (the whole index as background) do not, and a
``terms`` aggregation with ``min_doc_count: 0`` lists values of documents it did not match."""


def scope_filter(principal: Principal, tenant: str | None = None) -> list[dict[str, Any]]:
    """The filter that confines a trace query to what ``principal`` may read (pure).

    ``tenant`` narrows an operator's view to one tenant; for anyone else it can only narrow
    their own view further (another tenant gives nothing).
    """
    if principal.is_operator:
        return [] if tenant is None else [{"term": {TENANT: tenant}}]
    own = [
        {"term": {TENANT: principal.tenant}},
        {"term": {USER: principal.user_id}},
    ]
    return own if tenant in (None, principal.tenant) else [*own, {"term": {TENANT: tenant}}]


def _refuse(why: str) -> PolicyViolationError:
    return PolicyViolationError(
        f"a trace read {why}; nothing was sent",
        hint="build the body with the filter of hybrid_es.traces.door.scope_filter(principal) in "
        "query.bool.filter, and only the keys and aggregations TracesDoor allows",
    )


def _check_aggs(aggs: Any, path: str = "aggs") -> None:
    if not isinstance(aggs, Mapping):
        raise _refuse(f"has {path} that is not an object")
    for name, agg in aggs.items():
        if not isinstance(agg, Mapping):
            raise _refuse(f"has aggregation {path}.{name} that is not an object")
        for kind, spec in agg.items():
            if kind in ("aggs", "aggregations"):
                _check_aggs(spec, f"{path}.{name}.{kind}")
            elif kind == "meta":
                continue
            elif kind not in AGGREGATIONS:
                raise _refuse(
                    f"has a {kind!r} aggregation ({path}.{name}), which may count documents "
                    f"outside the caller's scope; allowed: {', '.join(sorted(AGGREGATIONS))}"
                )
            elif kind == "terms" and isinstance(spec, Mapping) and spec.get("min_doc_count") == 0:
                raise _refuse(
                    f"asks {path}.{name} for terms with min_doc_count 0, which lists the values "
                    "of documents outside the caller's scope"
                )


def check_scope(body: Mapping[str, Any], principal: Principal, tenant: str | None = None) -> None:
    """Refuse (PolicyViolationError, before anything is sent) a body that could read a trace
    outside ``principal``'s scope (:func:`scope_filter` with ``tenant``): every clause of that
    scope must be in its ``query.bool.filter`` (the rest of the ``bool`` can only narrow or
    score), its keys must be :data:`BODY_KEYS` and its aggregations :data:`AGGREGATIONS`.

    An operator reading every tenant's traces has no scope clause to carry; anyone else always
    has their tenant and user id. Pure."""
    extra = sorted(set(body) - BODY_KEYS)
    if extra:
        raise _refuse(f"holds {', '.join(extra)}, which a trace read does not send")
    if "aggs" in body:
        _check_aggs(body["aggs"])
    wanted = scope_filter(principal, tenant)
    if not wanted:
        return
    query = body.get("query")
    inner = query.get("bool") if isinstance(query, Mapping) and len(query) == 1 else None
    filters = inner.get("filter") if isinstance(inner, Mapping) else None
    if not isinstance(filters, list):
        raise _refuse("has no query.bool.filter list to carry the caller's scope")
    missing = [clause for clause in wanted if clause not in filters]
    if missing:
        raise _refuse(f"lacks the caller's scope in query.bool.filter: {missing}")


class TracesDoor:
    """Reads of one deployment's traces over ``engine`` (``storage``: its
    :class:`~hybrid_es.traces.storage.TraceStorage`, whose pattern is read, or an index, data
    stream or pattern by name), each body checked for its caller's scope first.

    Opening the door guards the traces on ``engine`` (:meth:`Engine.guard_traces`): from then
    on the engine refuses a body read of them that does not come through a door."""

    def __init__(self, engine: Engine, storage: TraceStorage | str) -> None:
        self.engine = engine
        self.index = storage.pattern if isinstance(storage, TraceStorage) else storage
        base = storage.base if isinstance(storage, TraceStorage) else None
        self.bases = (base,) if base else tuple(_prefixes(self.index))
        engine.guard_traces(*self.bases)

    def search(
        self,
        principal: Principal,
        body: dict[str, Any],
        *,
        tenant: str | None = None,
        index: str | None = None,
        what: str = "",
        **params: Any,
    ) -> dict[str, Any]:
        """One search of the traces for ``principal`` (``tenant``: the narrowing of
        :func:`scope_filter`); ``index``: a part of them to read instead of all (a data stream,
        a dated index); ``params`` are URL parameters. Raises PolicyViolationError for a body
        :func:`check_scope` refuses or an ``index`` that is not these traces, before sending,
        and the package's errors (``EngineError`` and its subclasses)."""
        target = index or self.index
        if not _within(target, self.bases):
            raise PolicyViolationError(
                f"{target!r} is not one of the traces indices {self.index!r}",
                hint="the traces door reads the deployment's traces only",
            )
        check_scope(body, principal, tenant)
        with opened_traces():
            return self.engine.search(
                target, body, what=what or f"reading traces from {target}", **params
            )


def _within(index: str, bases: tuple[str, ...]) -> bool:
    """Whether every name of ``index`` (a name, a comma list or a pattern) is one of the traces
    that ``bases`` name: never ``*``, ``_all`` or a pattern wider than a base."""
    names = [name.strip() for name in index.split(",")]
    return all(name and any(name.startswith(base) for base in bases) for name in names)


def _prefixes(index: str) -> list[str]:
    """The fixed start of each name of ``index`` (``hybrid-es-traces-*`` gives
    ``hybrid-es-traces-``): what :func:`~hybrid_es.cluster.guard.is_guarded` takes as a base."""
    return [name.strip().split("*", 1)[0] for name in index.split(",") if name.strip()]
