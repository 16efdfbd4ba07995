"""LlamaIndex ``MetadataFilters`` into the neutral grammar (``adapters.llamaindex_filters``). Pure.

Every expected neutral filter is written out, and each is also run through the neutral
translator over declared fields, so a translation the searcher would refuse fails here."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="the adapters extra is not installed (llamaindex)")

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from hybrid_es.adapters.llamaindex_filters import (
    SUPPORTED,
    LlamaIndexFilterError,
    check_llamaindex_filters,
    translate_llamaindex_filters,
)
from hybrid_es.errors import BadQueryError, FilterError
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.retrieval.filters import MAX_DEPTH, translate_filter

FIELDS = parse_filterable_fields("team:keyword,year:number,published:date,draft:boolean")


def one(key: str, value: Any, op: FilterOperator = FilterOperator.EQ) -> MetadataFilters:
    return MetadataFilters(filters=[MetadataFilter(key=key, value=value, operator=op)])


def neutral(filters: MetadataFilters) -> dict[str, Any] | None:
    """The translation, checked to be accepted by the neutral translator too."""
    out = translate_llamaindex_filters(filters)
    assert check_llamaindex_filters(filters, FIELDS) == out
    translate_filter(out, FIELDS)
    return out


def test_no_filter_is_none():
    assert translate_llamaindex_filters(None) is None
    assert translate_llamaindex_filters(MetadataFilters(filters=[])) is None
    assert check_llamaindex_filters(None, FIELDS) is None


@pytest.mark.parametrize(
    ("key", "value", "op", "expected"),
    [
        ("team", "ops", FilterOperator.EQ, {"team": {"$eq": "ops"}}),
        ("team", "ops", FilterOperator.NE, {"team": {"$ne": "ops"}}),
        ("year", 2023, FilterOperator.GT, {"year": {"$gt": 2023}}),
        ("year", 2024, FilterOperator.GTE, {"year": {"$gte": 2024}}),
        ("year", 2.5, FilterOperator.LT, {"year": {"$lt": 2.5}}),
        ("year", 2026, FilterOperator.LTE, {"year": {"$lte": 2026}}),
        ("team", ["ops", "sales"], FilterOperator.IN, {"team": {"$in": ["ops", "sales"]}}),
        ("team", ["ops"], FilterOperator.NIN, {"team": {"$nin": ["ops"]}}),
        ("published", "2026-01-01", FilterOperator.GTE, {"published": {"$gte": "2026-01-01"}}),
        # The list operators: a record's list matches when some value does (module docstring).
        ("team", ["ops", "sales"], FilterOperator.ANY, {"team": {"$in": ["ops", "sales"]}}),
        ("team", "ops", FilterOperator.CONTAINS, {"team": {"$eq": "ops"}}),
        (
            "team",
            ["ops", "sales"],
            FilterOperator.ALL,
            {"$and": [{"team": {"$eq": "ops"}}, {"team": {"$eq": "sales"}}]},
        ),
    ],
)
def test_each_operator(key, value, op, expected):
    assert neutral(one(key, value, op)) == expected


def test_several_filters_are_anded_by_default_and_when_condition_is_none():
    items = [MetadataFilter(key="team", value="ops"), MetadataFilter(key="year", value=2026)]
    expected = {"$and": [{"team": {"$eq": "ops"}}, {"year": {"$eq": 2026}}]}
    assert neutral(MetadataFilters(filters=items)) == expected
    assert neutral(MetadataFilters(filters=items, condition=None)) == expected
    assert neutral(MetadataFilters(filters=items, condition=FilterCondition.AND)) == expected


def test_or_and_not():
    items = [MetadataFilter(key="team", value="ops"), MetadataFilter(key="year", value=2026)]
    either = [{"team": {"$eq": "ops"}}, {"year": {"$eq": 2026}}]
    assert neutral(MetadataFilters(filters=items, condition=FilterCondition.OR)) == {"$or": either}
    # LlamaIndex's NOT: none of them holds.
    assert neutral(MetadataFilters(filters=items, condition=FilterCondition.NOT)) == {
        "$not": {"$or": either}
    }
    assert neutral(MetadataFilters(filters=items[:1], condition="not")) == {  # type: ignore[arg-type]
        "$not": {"team": {"$eq": "ops"}}
    }


def test_nested_filters():
    inner = MetadataFilters(
        filters=[
            MetadataFilter(key="year", value=2024, operator=FilterOperator.GTE),
            MetadataFilter(key="draft", value="x", operator=FilterOperator.NE),
        ],
        condition=FilterCondition.OR,
    )
    outer = MetadataFilters(filters=[MetadataFilter(key="team", value="ops"), inner])
    assert translate_llamaindex_filters(outer) == {
        "$and": [
            {"team": {"$eq": "ops"}},
            {"$or": [{"year": {"$gte": 2024}}, {"draft": {"$ne": "x"}}]},
        ]
    }
    # draft is a boolean field: the neutral translator refuses the text value, as this error.
    with pytest.raises(LlamaIndexFilterError, match="draft is a boolean field") as refused:
        check_llamaindex_filters(outer, FIELDS)
    assert refused.value.field == "draft"


@pytest.mark.parametrize(
    "op",
    [
        FilterOperator.TEXT_MATCH,
        FilterOperator.TEXT_MATCH_INSENSITIVE,
        FilterOperator.IS_EMPTY,
    ],
)
def test_operators_the_grammar_cannot_express_are_refused_by_name(op):
    with pytest.raises(LlamaIndexFilterError) as refused:
        translate_llamaindex_filters(one("team", "ops", op))
    message = str(refused.value)
    assert op.name in message and "not supported" in message
    assert all(o.name in message for o in SUPPORTED)
    assert refused.value.field == "team"


def test_the_error_is_a_hybrid_es_filter_error_and_a_value_error():
    with pytest.raises(FilterError):
        translate_llamaindex_filters(one("team", "ops", FilterOperator.TEXT_MATCH))
    with pytest.raises(BadQueryError):
        translate_llamaindex_filters(one("team", "ops", FilterOperator.TEXT_MATCH))
    with pytest.raises(ValueError):
        translate_llamaindex_filters(one("team", "ops", FilterOperator.TEXT_MATCH))


@pytest.mark.parametrize(
    ("value", "op", "match"),
    [
        (None, FilterOperator.EQ, "cannot test whether a field is missing"),
        ("ops", FilterOperator.IN, "takes a list"),
        ("ops", FilterOperator.NIN, "takes a list"),
        ("ops", FilterOperator.ANY, "takes a list"),
        ("ops", FilterOperator.ALL, "takes a list"),
        ([], FilterOperator.ALL, "non-empty list"),
        (["ops"], FilterOperator.EQ, "compares one value"),
        (["ops"], FilterOperator.CONTAINS, "compares one value"),
    ],
)
def test_values_of_the_wrong_shape_are_refused(value, op, match):
    with pytest.raises(LlamaIndexFilterError, match=match):
        translate_llamaindex_filters(one("team", value, op))


def test_an_empty_nested_group_is_refused():
    filters = MetadataFilters(
        filters=[MetadataFilter(key="team", value="ops"), MetadataFilters(filters=[])],
        condition=FilterCondition.OR,
    )
    with pytest.raises(LlamaIndexFilterError, match="empty MetadataFilters"):
        translate_llamaindex_filters(filters)


def test_anything_but_metadata_filters_is_refused():
    for bad in ({"team": "ops"}, MetadataFilter(key="team", value="ops")):
        with pytest.raises(LlamaIndexFilterError, match="must be a llama_index MetadataFilters"):
            translate_llamaindex_filters(bad)  # type: ignore[arg-type]


def test_nesting_is_bounded():
    filters = MetadataFilters(filters=[MetadataFilter(key="team", value="ops")])
    for _ in range(MAX_DEPTH):
        filters = MetadataFilters(filters=[filters])
    with pytest.raises(LlamaIndexFilterError, match="deeper than"):
        translate_llamaindex_filters(filters)


@pytest.mark.parametrize("key", ["tenant", "acl_groups", "deleted", "unknown"])
def test_policy_and_undeclared_keys_are_refused_by_the_check(key):
    filters = one(key, "x")
    assert translate_llamaindex_filters(filters) == {key: {"$eq": "x"}}  # syntax is fine
    with pytest.raises(LlamaIndexFilterError) as refused:
        check_llamaindex_filters(filters, FIELDS)
    assert refused.value.field == key
    assert "team (keyword)" in str(refused.value)  # the hint names the filterable fields


def test_an_or_cannot_reach_past_the_policy_field_refusal():
    """A policy field inside an OR is refused as well: a filter never names one anywhere."""
    filters = MetadataFilters(
        filters=[MetadataFilter(key="team", value="ops"), MetadataFilter(key="tenant", value="B")],
        condition=FilterCondition.OR,
    )
    with pytest.raises(LlamaIndexFilterError, match="policy field"):
        check_llamaindex_filters(filters, FIELDS)
