"""LlamaIndex ``MetadataFilters``, translated into hybrid-es's neutral filter grammar. Pure.

A LlamaIndex filter is a ``MetadataFilters`` (``llama_index.core.vector_stores.types``): a list
of ``MetadataFilter(key, value, operator)`` and nested ``MetadataFilters``, combined by its
``condition`` (AND, the default; OR; NOT)::

    MetadataFilters(
        filters=[
            MetadataFilter(key="team", value="ops"),
            MetadataFilters(filters=[MetadataFilter(key="year", value=2024, operator=">=")]),
        ],
        condition="or",
    )

:func:`translate_llamaindex_filters` turns one into the neutral grammar of
:mod:`hybrid_es.retrieval.filters`, which the searcher checks against the declared fields and
places inside the policy filter (a filter only ever narrows what the caller may read):

==========================================  =================================================
LlamaIndex                                  neutral
==========================================  =================================================
``EQ`` ``NE`` ``GT`` ``GTE`` ``LT`` ``LTE``  ``$eq`` ``$ne`` ``$gt`` ``$gte`` ``$lt`` ``$lte``
``IN``, ``NIN`` (a list)                    ``$in``, ``$nin``
``ANY`` (a list)                            ``$in``
``ALL`` (a list)                            ``{"$and": [{key: v1}, {key: v2}, ...]}``
``CONTAINS`` (one value)                    ``$eq``
condition ``AND`` (or None) / ``OR``        ``{"$and": [...]}`` / ``{"$or": [...]}``
condition ``NOT``                           ``{"$not": {"$or": [...]}}``: none of them holds
==========================================  =================================================

``ANY``, ``ALL`` and ``CONTAINS`` are LlamaIndex's operators on a metadata *list* ("contains any
/ all of these", "contains this"; ``SimpleVectorStore``'s reference evaluator:
``any(v in record for v in value)``, ``all(...)``, ``value in record``). The neutral grammar
reads a record's list the same way: ``$eq`` and ``$in`` match when *some* value of the record
matches, so ``CONTAINS v`` is ``$eq v``, ``ANY [..]`` is ``$in [..]`` and ``ALL [..]`` is one
``$eq`` per value. One difference: on a record whose field holds one text (not a list),
``SimpleVectorStore`` tests a substring; hybrid-es keyword values match exactly, whole and case
included (a substring is ``TEXT_MATCH``, refused below). ``NOT`` is "none of them holds", as
``SimpleVectorStore`` and the other LlamaIndex stores evaluate it.

Refused, with :class:`LlamaIndexFilterError` (a hybrid-es :class:`FilterError`, and a
``ValueError`` as LlamaIndex's own stores raise for a filter they cannot apply), naming the
operator and the supported ones:

- ``TEXT_MATCH``, ``TEXT_MATCH_INSENSITIVE`` (substring match) and ``IS_EMPTY`` (the field is
  missing): the neutral grammar has no substring and no ``$exists``;
- a ``None`` value (LlamaIndex reads ``== None`` as "missing", which cannot be said either);
- ``IN``, ``NIN``, ``ANY``, ``ALL`` with a single value, ``CONTAINS`` with a list;
- an empty nested ``MetadataFilters`` (AND of nothing holds, OR of nothing does not: refused
  rather than guessed); an empty top-level one is no filter, as LlamaIndex treats it;
- anything that is not a ``MetadataFilters`` (a dict, a bare ``MetadataFilter``).

Whether each key is declared filterable (a policy field never is) and whether each value fits
its type is the neutral translator's to check: :func:`check_llamaindex_filters` runs both, so
everything wrong with a filter is raised before any request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from hybrid_es.errors import FilterError
from hybrid_es.metadata_fields import ENV_NAME, FilterableField
from hybrid_es.retrieval.filters import MAX_DEPTH, translate_filter

COMPARISONS: dict[FilterOperator, str] = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
    FilterOperator.ANY: "$in",
    FilterOperator.CONTAINS: "$eq",
}
"""Each LlamaIndex operator that is one neutral comparison (``ALL`` is several: see above)."""
LIST_OPERATORS = (FilterOperator.IN, FilterOperator.NIN, FilterOperator.ANY, FilterOperator.ALL)
SUPPORTED = (*COMPARISONS, FilterOperator.ALL)
"""Every operator translated; the others (``TEXT_MATCH``, ``IS_EMPTY``, ...) are refused."""

_EXAMPLE = 'MetadataFilters(filters=[MetadataFilter(key="team", value="ops")])'


class LlamaIndexFilterError(FilterError, ValueError):
    """A LlamaIndex filter refused before any request: hybrid-es's
    :class:`~hybrid_es.errors.FilterError` (a BadQueryError) and a ``ValueError``, which is what
    LlamaIndex's own vector stores raise for a filter they cannot apply."""


def translate_llamaindex_filters(filters: MetadataFilters | None) -> dict[str, Any] | None:
    """The neutral filter (``hybrid_es.retrieval.filters``) for a LlamaIndex ``MetadataFilters``;
    None for None or one without filters (no filter).

    Raises :class:`LlamaIndexFilterError` for an operator the grammar cannot express, a
    ``None`` value, a list where one value belongs (or the reverse), an empty nested group, or
    anything that is not a ``MetadataFilters`` (module docstring). Whether the keys are declared
    filterable and the values fit their types is checked by :func:`check_llamaindex_filters`."""
    if filters is None:
        return None
    if not isinstance(filters, MetadataFilters):
        raise _error(
            f"filters must be a llama_index MetadataFilters, got {type(filters).__name__} "
            f"(e.g. {_EXAMPLE})"
        )
    if not filters.filters:
        return None
    return _group(filters, "the filters", 1)


def check_llamaindex_filters(
    filters: MetadataFilters | None, fields: Sequence[FilterableField]
) -> dict[str, Any] | None:
    """:func:`translate_llamaindex_filters`, then the neutral translator over the declared
    ``fields`` (undeclared or policy keys, values of the wrong type, the bounds), each refusal
    raised as a :class:`LlamaIndexFilterError`. Returns the neutral filter (None: no filter)."""
    neutral = translate_llamaindex_filters(filters)
    try:
        translate_filter(neutral, fields)
    except FilterError as exc:
        if isinstance(exc, LlamaIndexFilterError):
            raise
        raise LlamaIndexFilterError(exc.message, hint=exc.hint, field=exc.field) from None
    return neutral


def _group(group: MetadataFilters, where: str, depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise _error(f"the filters nest deeper than {MAX_DEPTH} levels of MetadataFilters")
    if not group.filters:
        raise _error(
            f"{where} is an empty MetadataFilters: give it at least one filter, or leave it out"
        )
    subs = []
    for i, item in enumerate(group.filters):
        at = f"filter {i + 1} of {where}"
        if isinstance(item, MetadataFilters):
            subs.append(_group(item, at, depth + 1))
        else:
            subs.append(_comparison(item, at))
    condition = group.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return subs[0] if len(subs) == 1 else {"$and": subs}
    if condition == FilterCondition.OR:
        return subs[0] if len(subs) == 1 else {"$or": subs}
    if condition == FilterCondition.NOT:
        # LlamaIndex's NOT: none of the filters holds.
        return {"$not": subs[0] if len(subs) == 1 else {"$or": subs}}
    raise _error(  # a condition added by a later LlamaIndex
        f"{where}: unsupported condition {condition!r}; conditions: and, or, not"
    )


def _comparison(item: MetadataFilter, where: str) -> dict[str, Any]:
    op, key, value = item.operator, item.key, item.value
    if op not in SUPPORTED:
        raise _error(
            f"{where}: operator {op.name} ({op.value!r}) on {key!r} is not supported by "
            f"hybrid-es filters; supported: {', '.join(o.name for o in SUPPORTED)}",
            field=key,
        )
    if value is None:
        raise _error(
            f"{where}: {key} {op.name} None: hybrid-es filters cannot test whether a field is "
            "missing; compare with a value, or leave the filter out",
            field=key,
        )
    if op in LIST_OPERATORS and not isinstance(value, list):
        raise _error(
            f"{where}: {op.name} on {key!r} takes a list of values, got "
            f"{type(value).__name__} (for one value use EQ)",
            field=key,
        )
    if op not in LIST_OPERATORS and isinstance(value, list):
        raise _error(
            f"{where}: {op.name} on {key!r} compares one value, got a list (for any of several "
            "values use IN)",
            field=key,
        )
    if op == FilterOperator.ALL:
        assert isinstance(value, list)  # checked above
        if not value:
            raise _error(f"{where}: ALL on {key!r} takes a non-empty list", field=key)
        return {"$and": [{key: {"$eq": v}} for v in value]}
    return {key: {COMPARISONS[op]: value}}


def _error(message: str, *, field: str | None = None) -> LlamaIndexFilterError:
    return LlamaIndexFilterError(
        message,
        field=field,
        hint=f"filter on the declared metadata fields ({ENV_NAME}), e.g. {_EXAMPLE}; nest "
        "MetadataFilters with condition and, or, not",
    )
