"""Search filters on declared metadata fields: a neutral grammar, translated into one clause. Pure.

A filter narrows a search to records whose metadata matches. It is written in a neutral form
(the filter language of Chroma and LangChain, so the LangChain adapter passes its ``filter``
through; Haystack's and LlamaIndex's languages translate into it), never as Elasticsearch or
OpenSearch query JSON, and :func:`translate_filter` turns it into one clause that the searcher
places **inside the policy filter** (``policy.policy_filter(..., narrowed_by=...)``): in the same
``bool.filter`` as the policy's rules, so in both legs, in the native fusion bodies and in the
read of the head's records, and checked with the policy by ``queries.assert_policy``.

Grammar (a JSON object)::

    filter  := { entry, ... }                 every entry holds (AND)
    entry   := FIELD: VALUE                   equality: {"team": "ops"}
             | FIELD: { OP: VALUE, ... }      every operator holds: {"year": {"$gte": 2024}}
             | "$and": [ filter, ... ]        all of them hold
             | "$or":  [ filter, ... ]        at least one holds
             | "$not": filter                 it does not hold
    OP      := "$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte" | "$in" | "$nin"

``FIELD`` is a field declared filterable (``HYBRID_ES_FILTERABLE_FIELDS``:
``hybrid_es.metadata_fields``), and ``VALUE`` one value of its type: text for a keyword, a number,
ISO 8601 text (or a date object) for a date, ``true``/``false`` for a boolean. ``$in`` and ``$nin``
take a list of 1 to :data:`MAX_IN_VALUES` values; ``$gt``, ``$gte``, ``$lt`` and ``$lte`` apply to
number and date fields only. Keyword values match exactly (case included).

What each operator means, for a record whose field holds several values (a list) or none:

- ``$eq`` / equality, ``$in``, ``$gt`` ...: some value of the record matches; a record without
  the field never matches.
- ``$ne``, ``$nin``: no value of the record matches; a record without the field matches.
- ``$not``: the inner filter does not match (a record without the field matches
  ``{"$not": {"team": "ops"}}``).

Translation (``meta_filter.<name>`` is where the chunks index holds a declared field):

=============================  ===========================================================
neutral                        clause
=============================  ===========================================================
``{"f": v}``, ``$eq``          ``{"term": {"meta_filter.f": v}}``
``$ne``                        ``{"bool": {"must_not": [{"term": ...}]}}``
``$gt`` ``$gte`` ``$lt``       ``{"range": {"meta_filter.f": {"gt": v}}}`` (one per operator)
``$in``                        ``{"terms": {"meta_filter.f": [v, ...]}}``
``$nin``                       ``{"bool": {"must_not": [{"terms": ...}]}}``
``$and``, several entries      ``{"bool": {"filter": [...]}}``
``$or``                        ``{"bool": {"should": [...], "minimum_should_match": 1}}``
``$not``                       ``{"bool": {"must_not": [...]}}``
=============================  ===========================================================

The whole filter is one ``{"bool": {"filter": [...]}}`` (its entries, in order).

**A filter only narrows.** It is ANDed with the policy, and its ``$or`` and ``$not`` apply to
its own clauses only, never to the policy's. It may name declared metadata fields only: a policy
field (tenant, the ACL fields, deletion, embargo, retention, validity, version, supersession,
booking and property scope, source type, jurisdiction: ``metadata_fields.POLICY_FIELDS``) or any
other undeclared name is refused, and so is anything that is not this grammar (an
Elasticsearch clause such as ``terms`` lookup or ``script``, which could read another index or
run code). Every refusal is a :class:`~hybrid_es.errors.FilterError` (a BadQueryError) raised
before any request, naming the field, operator or value, with the filterable fields in its hint.

Bounds: at most :data:`MAX_DEPTH` levels of ``$and``/``$or``/``$not``, :data:`MAX_CONDITIONS`
comparisons in all, :data:`MAX_IN_VALUES` values in one ``$in``/``$nin``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hybrid_es.errors import FilterError
from hybrid_es.metadata_fields import (
    ENV_NAME,
    POLICY_FIELDS,
    FilterableField,
    as_stored,
    describe,
    value_problem,
)

COMPARISONS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin")
LOGICAL = ("$and", "$or", "$not")
RANGES = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
ORDERED_TYPES = ("number", "date")
"""The field types whose values are ordered: the only ones ``$gt``...``$lte`` apply to."""

MAX_DEPTH = 8
"""Nesting of ``$and``/``$or``/``$not`` (the top-level object is level 1)."""
MAX_CONDITIONS = 64
"""Comparisons in one filter (each operator on a field counts one). With the policy and a
query at its 150-term cap, the leaf stays under OpenSearch 2.19's 1,024 clauses."""
MAX_IN_VALUES = 256
"""Values of one ``$in`` or ``$nin``."""


@dataclass
class _Walk:
    fields: dict[str, FilterableField]
    declared: Sequence[FilterableField]
    conditions: int = 0
    used: set[str] = field(default_factory=set)

    def error(self, message: str, *, name: str | None = None) -> FilterError:
        return FilterError(
            message,
            field=name,
            hint=f"filterable fields: {describe(self.declared)} (declared in {ENV_NAME}); "
            'a filter is a JSON object such as {"team": "ops", "year": {"$gte": 2024}}, '
            "combined with $and, $or and $not",
        )


def translate_filter(
    filters: Mapping[str, Any] | None, fields: Sequence[FilterableField]
) -> dict[str, Any] | None:
    """The clause for ``filters`` (the grammar above) over the declared ``fields``: one
    ``{"bool": {"filter": [...]}}`` to place inside the policy filter, or None for no filter
    (None or ``{}``).

    Raises FilterError (a BadQueryError) for anything that is not the grammar, a field that is
    not declared (a policy field never is), an operator that does not exist or does not apply
    to the field's type, a value of the wrong type, or a filter over the bounds."""
    walk = _Walk({f.name: f for f in fields}, fields)
    if filters is None:
        return None
    if not isinstance(filters, Mapping):
        raise walk.error(f"a filter must be a JSON object, got {_kind(filters)}")
    if not filters:
        return None
    return {"bool": {"filter": _entries(filters, walk, 1)}}


def filter_summary(filters: Mapping[str, Any] | None) -> tuple[str, ...]:
    """What a filter (already accepted by :func:`translate_filter`) names, without its values:
    ``field:operator`` pairs and the logical operators used, sorted (``("$or", "team:$eq",
    "year:$gte")``). For traces and logs, where the values may be sensitive."""
    out: set[str] = set()

    def walk(node: Any) -> None:
        if not isinstance(node, Mapping):
            return
        for key, value in node.items():
            if key in LOGICAL:
                out.add(key)
                for sub in value if isinstance(value, list | tuple) else [value]:
                    walk(sub)
            elif _is_operators(value):
                out.update(f"{key}:{op}" for op in value)
            else:
                out.add(f"{key}:$eq")

    walk(filters)
    return tuple(sorted(out))


def _entries(node: Mapping[str, Any], walk: _Walk, depth: int) -> list[dict[str, Any]]:
    """The clauses of one filter object's entries, in order."""
    if depth > MAX_DEPTH:
        raise walk.error(f"the filter nests deeper than {MAX_DEPTH} levels of $and/$or/$not")
    out: list[dict[str, Any]] = []
    for key, value in node.items():
        if not isinstance(key, str):
            raise walk.error(f"a filter's keys are field names or operators, got {key!r}")
        if key.startswith("$"):
            out.append(_logical(key, value, walk, depth))
        else:
            out.extend(_field(key, value, walk))
    return out


def _one(node: Any, walk: _Walk, depth: int, where: str) -> dict[str, Any]:
    """A nested filter as one clause (a single entry as itself, several ANDed)."""
    if not isinstance(node, Mapping) or not node:
        raise walk.error(f"{where} takes a non-empty filter object, got {_kind(node)}")
    clauses = _entries(node, walk, depth)
    return clauses[0] if len(clauses) == 1 else {"bool": {"filter": clauses}}


def _logical(op: str, value: Any, walk: _Walk, depth: int) -> dict[str, Any]:
    if op == "$not":
        return {"bool": {"must_not": [_one(value, walk, depth + 1, "$not")]}}
    if op in ("$and", "$or"):
        if not isinstance(value, list | tuple) or not value:
            raise walk.error(f"{op} takes a non-empty list of filters, got {_kind(value)}")
        subs = [_one(v, walk, depth + 1, f"each item of {op}") for v in value]
        if op == "$and":
            return {"bool": {"filter": subs}}
        return {"bool": {"should": subs, "minimum_should_match": 1}}
    if op in COMPARISONS:
        raise walk.error(
            f'{op} compares a field: write it under the field, e.g. {{"team": {{"{op}": ...}}}}'
        )
    raise walk.error(f"unsupported operator {op!r}; operators: {', '.join(LOGICAL + COMPARISONS)}")


def _field(name: str, value: Any, walk: _Walk) -> list[dict[str, Any]]:
    f = walk.fields.get(name)
    if f is None:
        if name in POLICY_FIELDS:
            raise walk.error(
                f"{name} is a policy field: who may see a record is decided by the caller's "
                "principal and request scope, never by a filter",
                name=name,
            )
        raise walk.error(f"{name!r} is not a filterable field", name=name)
    if not _is_operators(value):
        if isinstance(value, Mapping):
            bad = ", ".join(repr(k) for k in value if not str(k).startswith("$"))
            raise walk.error(
                f"{name}: {bad or 'an empty object'} is not an operator; write "
                f'{{"{name}": value}} or {{"{name}": {{"$gte": value}}}} '
                f"(operators: {', '.join(COMPARISONS)})",
                name=name,
            )
        return [_compare(f, "$eq", value, walk)]
    return [_compare(f, op, v, walk) for op, v in value.items()]


def _is_operators(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, str) and k.startswith("$") for k in value)
    )


def _compare(f: FilterableField, op: str, value: Any, walk: _Walk) -> dict[str, Any]:
    if op not in COMPARISONS:
        raise walk.error(
            f"{f.name}: unsupported operator {op!r}; operators: {', '.join(COMPARISONS)}",
            name=f.name,
        )
    walk.conditions += 1
    if walk.conditions > MAX_CONDITIONS:
        raise walk.error(f"the filter has more than {MAX_CONDITIONS} comparisons")
    if op in RANGES and f.type not in ORDERED_TYPES:
        raise walk.error(
            f"{f.name}: {op} needs a number or date field, and {f.name} is a {f.type} field "
            "(use $eq, $ne, $in or $nin)",
            name=f.name,
        )
    if op in ("$in", "$nin"):
        if not isinstance(value, list | tuple) or not value:
            raise walk.error(
                f"{f.name}: {op} takes a non-empty list of values, got {_kind(value)}",
                name=f.name,
            )
        if len(value) > MAX_IN_VALUES:
            raise walk.error(
                f"{f.name}: {op} has {len(value)} values; at most {MAX_IN_VALUES}", name=f.name
            )
        clause: dict[str, Any] = {"terms": {f.path: [_value(f, op, v, walk) for v in value]}}
    elif op in RANGES:
        clause = {"range": {f.path: {RANGES[op]: _value(f, op, value, walk)}}}
    else:
        clause = {"term": {f.path: _value(f, op, value, walk)}}
    if op in ("$ne", "$nin"):
        return {"bool": {"must_not": [clause]}}
    return clause


def _value(f: FilterableField, op: str, value: Any, walk: _Walk) -> Any:
    if isinstance(value, list | tuple) and op not in ("$in", "$nin"):
        raise walk.error(
            f"{f.name}: {op} compares one value, got a list (for any of several values use "
            '{"$in": [...]})',
            name=f.name,
        )
    problem = value_problem(f.type, value)
    if problem:
        raise walk.error(f"{f.name} is a {f.type} field and {op} {problem}", name=f.name)
    return as_stored(f.type, value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an empty object" if not value else "an object"
    if isinstance(value, list | tuple):
        return "an empty list" if not value else "a list"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"
