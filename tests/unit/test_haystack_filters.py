"""Haystack 2.x filters into the neutral grammar (``hybrid_es.adapters.haystack_filters``): every
operator, the logical nodes, and every refusal with what it names. Pure: no engine."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("haystack", reason="the adapters extra is not installed (haystack)")

from haystack.errors import FilterError as HaystackFilterError

from hybrid_es.adapters.haystack_filters import (
    check_haystack_filters,
    translate_haystack_filters,
)
from hybrid_es.errors import FilterError
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.retrieval.filters import translate_filter

FIELDS = parse_filterable_fields("team:keyword,year:number,published:date,draft:boolean")


def comparison(field: str, op: str, value: Any) -> dict[str, Any]:
    return {"field": field, "operator": op, "value": value}


@pytest.mark.parametrize(
    ("op", "neutral"),
    [
        ("==", "$eq"),
        ("!=", "$ne"),
        (">", "$gt"),
        (">=", "$gte"),
        ("<", "$lt"),
        ("<=", "$lte"),
    ],
)
def test_each_comparison_becomes_its_neutral_operator(op, neutral):
    assert translate_haystack_filters(comparison("meta.year", op, 2024)) == {
        "year": {neutral: 2024}
    }


@pytest.mark.parametrize(("op", "neutral"), [("in", "$in"), ("not in", "$nin")])
def test_in_and_not_in_take_a_list(op, neutral):
    got = translate_haystack_filters(comparison("meta.team", op, ["ops", "sales"]))
    assert got == {"team": {neutral: ["ops", "sales"]}}


def test_logical_nodes_nest():
    filters = {
        "operator": "AND",
        "conditions": [
            comparison("meta.team", "==", "ops"),
            {
                "operator": "OR",
                "conditions": [
                    comparison("meta.year", ">=", 2024),
                    comparison("meta.draft", "==", True),
                ],
            },
        ],
    }
    assert translate_haystack_filters(filters) == {
        "$and": [
            {"team": {"$eq": "ops"}},
            {"$or": [{"year": {"$gte": 2024}}, {"draft": {"$eq": True}}]},
        ]
    }


def test_not_negates_the_and_of_its_conditions():
    # Haystack's NOT: not (all conditions hold), as its in-memory store evaluates it.
    two = {
        "operator": "NOT",
        "conditions": [comparison("meta.team", "==", "ops"), comparison("meta.year", "==", 1)],
    }
    assert translate_haystack_filters(two) == {
        "$not": {"$and": [{"team": {"$eq": "ops"}}, {"year": {"$eq": 1}}]}
    }
    one = {"operator": "NOT", "conditions": [comparison("meta.team", "==", "ops")]}
    assert translate_haystack_filters(one) == {"$not": {"team": {"$eq": "ops"}}}


def test_no_filter_is_none():
    assert translate_haystack_filters(None) is None
    assert translate_haystack_filters({}) is None
    assert check_haystack_filters(None, FIELDS) is None


def test_the_result_is_what_the_neutral_translator_takes():
    filters = {
        "operator": "OR",
        "conditions": [
            comparison("meta.published", ">", "2026-01-01T00:00:00"),
            comparison("meta.team", "not in", ["ops"]),
        ],
    }
    neutral = check_haystack_filters(filters, FIELDS)
    assert translate_filter(neutral, FIELDS) == {
        "bool": {
            "filter": [
                {
                    "bool": {
                        "should": [
                            {"range": {"meta_filter.published": {"gt": "2026-01-01T00:00:00"}}},
                            {"bool": {"must_not": [{"terms": {"meta_filter.team": ["ops"]}}]}},
                        ],
                        "minimum_should_match": 1,
                    }
                }
            ]
        }
    }


REFUSED = [
    # (filter, words the message must hold)
    ("not a dict", "a filter must be a dict"),
    ({"conditions": [comparison("meta.team", "==", "x")]}, "has no 'operator'"),
    ({"meta.team": "ops"}, "1.x form"),
    ({"operator": "AND"}, "needs 'conditions'"),
    ({"operator": "AND", "conditions": []}, "non-empty list"),
    ({"operator": "AND", "conditions": {"field": "meta.team"}}, "non-empty list"),
    ({"operator": "XOR", "conditions": [comparison("meta.team", "==", "x")]}, "unknown operator"),
    ({"operator": "AND", "conditions": [{"operator": "==", "value": "x"}]}, "missing 'field'"),
    ({"operator": "AND", "conditions": [{"field": "meta.team", "value": "x"}]}, "no 'operator'"),
    ({"operator": "AND", "conditions": [{"field": "meta.team", "operator": "=="}]}, "'value'"),
    (comparison("meta.team", "~=", "x"), "unknown comparison operator '~='"),
    ({**comparison("meta.team", "==", "x"), "boost": 2}, "also got ['boost']"),
    (comparison("meta.team", "==", None), "cannot test whether a field is missing"),
    (comparison("meta.year", ">", None), "None"),
    (comparison("meta.year", "in", 9), "takes a list of values, got int"),
    (comparison("meta.year", "not in", (1, 2)), "takes a list of values, got tuple"),
    (comparison("id", "==", "doc-1"), "'id' is not filterable"),
    (comparison("content", "==", "hello"), "'content' is not filterable"),
    (comparison("team", "==", "ops"), "written meta.<name>"),
    (comparison("meta.", "==", "ops"), "is not filterable"),
    (comparison("meta.a.b", "==", 1), "nested key"),
    (comparison(["meta.team"], "==", "x"), "'field' must be text"),
    ({"operator": ["AND"], "conditions": []}, "'operator' must be text"),
    (
        {"operator": "AND", "conditions": [comparison("meta.team", "==", "x"), "oops"]},
        "condition 2 of AND must be a dict",
    ),
]


@pytest.mark.parametrize(("filters", "needle"), REFUSED)
def test_malformed_filters_are_refused_saying_what_was_wrong(filters, needle):
    with pytest.raises(FilterError) as info:
        translate_haystack_filters(filters)
    assert needle in info.value.message
    # Haystack's own stores raise haystack.errors.FilterError: a pipeline catches either.
    assert isinstance(info.value, HaystackFilterError)
    assert "meta.<name>" in (info.value.hint or "")


def test_depth_is_bounded():
    node: dict[str, Any] = comparison("meta.team", "==", "x")
    for _ in range(9):
        node = {"operator": "AND", "conditions": [node]}
    with pytest.raises(FilterError, match="deeper than 8"):
        translate_haystack_filters(node)


@pytest.mark.parametrize(
    ("filters", "needle", "field"),
    [
        (comparison("meta.colour", "==", "red"), "'colour' is not a filterable field", "colour"),
        (comparison("meta.tenant", "==", "demo-B"), "tenant is a policy field", "tenant"),
        (comparison("meta.acl_groups", "in", ["*"]), "acl_groups is a policy field", "acl_groups"),
        (comparison("meta.year", ">", "1"), "year is a number field", "year"),
        (comparison("meta.year", ">=", [1]), "compares one value, got a list", "year"),
        (comparison("meta.team", ">", "a"), "needs a number or date field", "team"),
    ],
)
def test_checked_against_the_declared_fields(filters, needle, field):
    with pytest.raises(HaystackFilterError) as info:
        check_haystack_filters(filters, FIELDS)
    err = info.value
    assert isinstance(err, FilterError) and needle in err.message and err.field == field
    # The hint names the declared fields as Haystack writes them.
    assert "meta.team (keyword)" in (err.hint or "") and "meta.year (number)" in (err.hint or "")
