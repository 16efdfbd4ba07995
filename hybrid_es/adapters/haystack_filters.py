"""Haystack 2.x filters, translated into hybrid-es's neutral filter grammar. Pure.

A Haystack filter is a comparison or a logical node (``haystack.document_stores`` "Metadata
filtering")::

    {"field": "meta.team", "operator": "==", "value": "ops"}
    {"operator": "AND", "conditions": [comparison or logical, ...]}      AND | OR | NOT

:func:`translate_haystack_filters` turns one into the neutral grammar of
:mod:`hybrid_es.retrieval.filters`, which the searcher then checks against the declared fields
and places inside the policy filter (a filter only ever narrows what the caller may read):

=============================================  ==============================================
Haystack                                       neutral
=============================================  ==============================================
``meta.team == "ops"``                         ``{"team": {"$eq": "ops"}}``
``!=``, ``>``, ``>=``, ``<``, ``<=``           ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``
``in [..]``, ``not in [..]``                   ``$in``, ``$nin`` (the value must be a list)
``AND`` / ``OR`` of conditions                 ``{"$and": [...]}`` / ``{"$or": [...]}``
``NOT`` of conditions                          ``{"$not": {"$and": [...]}}``: none of them all
=============================================  ==============================================

What is refused, with :class:`HaystackFilterError` (a hybrid-es :class:`FilterError` and a
Haystack ``FilterError`` at once, so both ``except`` clauses catch it), naming what was wrong:

- a field other than ``meta.<name>``: ``id``, ``content``, ``embedding``, ``score`` and any
  Document attribute are not filterable in hybrid-es (the records are filtered by declared
  metadata fields only, ``HYBRID_ES_FILTERABLE_FIELDS``); a nested ``meta.a.b`` is not a
  declared name either (names have no dots). Whether ``<name>`` is declared, and its value's
  type, is checked by the neutral translator against the declared fields
  (:func:`check_haystack_filters` runs both at once);
- a ``None`` value: Haystack reads ``== None`` as "the field is missing", which the neutral
  grammar cannot say (it has no ``$exists``), and ``> None`` as "matches nothing": a filter that
  would silently mean something else is refused instead;
- ``in`` / ``not in`` with anything but a list (a tuple, a single value), as Haystack's own
  stores refuse it;
- malformed nodes: no ``operator``, a comparison without ``field`` or ``value``, a logical node
  without a non-empty ``conditions`` list, unknown operators or keys, and the legacy (1.x)
  ``{"meta.team": "ops"}`` form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from haystack.errors import FilterError as HaystackBaseFilterError

from hybrid_es.errors import FilterError
from hybrid_es.metadata_fields import ENV_NAME, FilterableField, describe
from hybrid_es.retrieval.filters import MAX_DEPTH, translate_filter

COMPARISONS = {
    "==": "$eq",
    "!=": "$ne",
    ">": "$gt",
    ">=": "$gte",
    "<": "$lt",
    "<=": "$lte",
    "in": "$in",
    "not in": "$nin",
}
"""Each Haystack comparison operator and its neutral operator."""
LOGICAL = ("AND", "OR", "NOT")
META_PREFIX = "meta."

_EXAMPLE = '{"field": "meta.team", "operator": "==", "value": "ops"}'


class HaystackFilterError(FilterError, HaystackBaseFilterError):
    """A Haystack filter refused before any request: both hybrid-es's
    :class:`~hybrid_es.errors.FilterError` (a BadQueryError) and ``haystack.errors.FilterError``,
    so a pipeline's own error handling catches it as Haystack's stores raise it."""


def translate_haystack_filters(filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The neutral filter (``hybrid_es.retrieval.filters``) for a Haystack 2.x filter; None for
    None or ``{}`` (no filter).

    Raises :class:`HaystackFilterError` for a malformed filter, a field that is not
    ``meta.<name>``, a ``None`` value, or ``in``/``not in`` without a list (module docstring).
    Whether the names are declared filterable and the values fit their types is the neutral
    translator's to check: :func:`check_haystack_filters` does both."""
    if filters is None:
        return None
    if not isinstance(filters, Mapping):
        raise _error(f"a filter must be a dict, got {type(filters).__name__}")
    if not filters:
        return None
    return _node(filters, "the filter", 1)


def check_haystack_filters(
    filters: Mapping[str, Any] | None, fields: Sequence[FilterableField]
) -> dict[str, Any] | None:
    """:func:`translate_haystack_filters`, then the neutral translator over the declared
    ``fields`` (undeclared or policy fields, values of the wrong type, the bounds), so that
    everything wrong with a filter is raised here, before any request, as a
    :class:`HaystackFilterError`. Returns the neutral filter (None: no filter)."""
    neutral = translate_haystack_filters(filters)
    try:
        translate_filter(neutral, fields)
    except FilterError as exc:
        raise as_haystack_error(exc, fields) from None
    return neutral


def as_haystack_error(
    exc: FilterError, fields: Sequence[FilterableField] | None = None
) -> HaystackFilterError:
    """``exc`` (raised by the neutral translator) as a :class:`HaystackFilterError` with the
    same message and field; its hint names the declared ``fields`` as Haystack writes them
    (``meta.team``) where they are given. Itself when it is one already."""
    if isinstance(exc, HaystackFilterError):
        return exc
    hint = exc.hint
    if fields is not None:
        hint = (
            f"filterable fields: {describe_fields(fields)} (declared in {ENV_NAME}); e.g. "
            f"{_EXAMPLE}, combined with AND, OR and NOT"
        )
    return HaystackFilterError(exc.message, hint=hint, field=exc.field)


def _node(node: Any, where: str, depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise _error(f"the filter nests deeper than {MAX_DEPTH} levels of AND/OR/NOT")
    if not isinstance(node, Mapping):
        raise _error(f"{where} must be a dict, got {type(node).__name__}")
    if "operator" not in node:
        keys = ", ".join(repr(k) for k in node)
        raise _error(
            f"{where} has no 'operator' (keys: {keys}); a Haystack 2.x filter is a comparison "
            f"such as {_EXAMPLE} or a logical node "
            '{"operator": "AND", "conditions": [...]} (the 1.x form {"meta.team": "ops"} is '
            "not supported)"
        )
    if not isinstance(node["operator"], str):
        raise _error(f"{where}: 'operator' must be text, got {node['operator']!r}")
    if "field" in node or node["operator"] in COMPARISONS:
        return _comparison(node, where)
    return _logical(node, where, depth)


def _logical(node: Mapping[str, Any], where: str, depth: int) -> dict[str, Any]:
    op = node["operator"]
    if op not in LOGICAL:
        raise _error(
            f"{where}: unknown operator {op!r}; logical operators: {', '.join(LOGICAL)}; "
            f"comparisons: {', '.join(COMPARISONS)}"
        )
    extra = sorted(str(k) for k in node if k not in ("operator", "conditions"))
    if extra:
        raise _error(f"{where}: a logical node takes 'operator' and 'conditions', also got {extra}")
    conditions = node.get("conditions")
    if not isinstance(conditions, list) or not conditions:
        got = "none" if conditions is None else repr(conditions)[:60]
        raise _error(f"{where}: {op} needs 'conditions', a non-empty list of filters (got {got})")
    subs = [_node(c, f"condition {i + 1} of {op}", depth + 1) for i, c in enumerate(conditions)]
    if op == "AND":
        return {"$and": subs}
    if op == "OR":
        return {"$or": subs}
    # Haystack's NOT: the conditions do not all hold (NOT of their AND).
    return {"$not": subs[0] if len(subs) == 1 else {"$and": subs}}


def _comparison(node: Mapping[str, Any], where: str) -> dict[str, Any]:
    missing = [k for k in ("field", "operator", "value") if k not in node]
    if missing:
        raise _error(
            f"{where}: a comparison needs 'field', 'operator' and 'value'; missing "
            f"{', '.join(repr(k) for k in missing)} (e.g. {_EXAMPLE})"
        )
    extra = sorted(str(k) for k in node if k not in ("field", "operator", "value"))
    if extra:
        raise _error(
            f"{where}: a comparison takes 'field', 'operator' and 'value', also got {extra}"
        )
    op, value = node["operator"], node["value"]
    name = field_name(node["field"], where)
    if op not in COMPARISONS:
        raise _error(
            f"{where}: unknown comparison operator {op!r} on {node['field']}; operators: "
            f"{', '.join(repr(o) for o in COMPARISONS)}",
            field=name,
        )
    if value is None:
        raise _error(
            f"{where}: {node['field']} {op} None: hybrid-es filters cannot test whether a field "
            "is missing, and a comparison with None would match nothing; compare with a value, "
            "or leave the condition out",
            field=name,
        )
    if op in ("in", "not in") and not isinstance(value, list):
        raise _error(
            f"{where}: {node['field']} {op!r} takes a list of values, got {type(value).__name__}",
            field=name,
        )
    return {name: {COMPARISONS[op]: value}}


def field_name(field: Any, where: str = "the filter") -> str:
    """The declared field name that a Haystack ``field`` names (``meta.team`` -> ``team``);
    raises :class:`HaystackFilterError` for any other field."""
    if not isinstance(field, str):
        raise _error(f"{where}: 'field' must be text such as 'meta.team', got {field!r}")
    name = field.removeprefix(META_PREFIX)
    if not field.startswith(META_PREFIX) or not name:
        raise _error(
            f"{where}: {field!r} is not filterable: hybrid-es filters on declared metadata "
            f"fields only, written meta.<name> (e.g. 'meta.{field or 'team'}'); a Document's id, "
            "content, embedding and score are not filterable",
            field=field,
        )
    if "." in name:
        raise _error(
            f"{where}: {field!r} names a nested key; filterable fields are top-level metadata "
            "keys (meta.<name>, no dots)",
            field=name,
        )
    return name


def _error(message: str, *, field: str | None = None) -> HaystackFilterError:
    return HaystackFilterError(
        message,
        field=field,
        hint=f"filter on the declared metadata fields ({ENV_NAME}) as meta.<name>, e.g. "
        f"{_EXAMPLE}; combine with AND, OR and NOT",
    )


def describe_fields(fields: Sequence[FilterableField]) -> str:
    """The declared fields as Haystack names them: ``meta.team (keyword), ...`` or ``none``."""
    return describe([FilterableField(f"{META_PREFIX}{f.name}", f.type) for f in fields])
