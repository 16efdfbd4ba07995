"""The neutral filter grammar and its translation into one clause (``retrieval.filters``). Pure.

Every expected clause is written out: what a reviewer reads against the module's table."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from hybrid_es.errors import BadQueryError, FilterError
from hybrid_es.metadata_fields import POLICY_FIELDS, parse_filterable_fields
from hybrid_es.retrieval.filters import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_IN_VALUES,
    filter_summary,
    translate_filter,
)

FIELDS = parse_filterable_fields("team:keyword,year:number,published:date,draft:boolean")


def clause(filters):  # type: ignore[no-untyped-def]
    """The single clause of a one-entry filter."""
    out = translate_filter(filters, FIELDS)
    assert out is not None and len(out["bool"]["filter"]) == 1, out
    return out["bool"]["filter"][0]


def test_no_filter_is_none():
    assert translate_filter(None, FIELDS) is None
    assert translate_filter({}, FIELDS) is None


def test_equality_is_a_term_on_the_typed_field():
    assert translate_filter({"team": "ops"}, FIELDS) == {
        "bool": {"filter": [{"term": {"meta_filter.team": "ops"}}]}
    }


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"team": {"$eq": "ops"}}, {"term": {"meta_filter.team": "ops"}}),
        (
            {"team": {"$ne": "ops"}},
            {"bool": {"must_not": [{"term": {"meta_filter.team": "ops"}}]}},
        ),
        ({"year": {"$gt": 2023}}, {"range": {"meta_filter.year": {"gt": 2023}}}),
        ({"year": {"$gte": 2024}}, {"range": {"meta_filter.year": {"gte": 2024}}}),
        ({"year": {"$lt": 2.5}}, {"range": {"meta_filter.year": {"lt": 2.5}}}),
        ({"year": {"$lte": 2026}}, {"range": {"meta_filter.year": {"lte": 2026}}}),
        (
            {"team": {"$in": ["ops", "sales"]}},
            {"terms": {"meta_filter.team": ["ops", "sales"]}},
        ),
        (
            {"team": {"$nin": ["ops"]}},
            {"bool": {"must_not": [{"terms": {"meta_filter.team": ["ops"]}}]}},
        ),
        (
            {"published": {"$gte": "2026-01-01"}},
            {"range": {"meta_filter.published": {"gte": "2026-01-01"}}},
        ),
        (
            {"published": "2026-04-01T09:30:00Z"},
            {"term": {"meta_filter.published": "2026-04-01T09:30:00Z"}},
        ),
        ({"draft": False}, {"term": {"meta_filter.draft": False}}),
        ({"draft": {"$in": [True, False]}}, {"terms": {"meta_filter.draft": [True, False]}}),
    ],
)
def test_every_operator(filters, expected):
    assert clause(filters) == expected


def test_several_operators_on_one_field_all_hold():
    assert translate_filter({"year": {"$gte": 2024, "$lt": 2027}}, FIELDS) == {
        "bool": {
            "filter": [
                {"range": {"meta_filter.year": {"gte": 2024}}},
                {"range": {"meta_filter.year": {"lt": 2027}}},
            ]
        }
    }


def test_several_entries_all_hold_in_order():
    assert translate_filter({"team": "ops", "year": {"$gte": 2024}}, FIELDS) == {
        "bool": {
            "filter": [
                {"term": {"meta_filter.team": "ops"}},
                {"range": {"meta_filter.year": {"gte": 2024}}},
            ]
        }
    }


def test_and_or_not_nest():
    filters = {
        "$or": [
            {"team": "ops"},
            {"$and": [{"team": "sales"}, {"year": {"$gte": 2025}}]},
        ],
        "$not": {"draft": True},
    }
    assert translate_filter(filters, FIELDS) == {
        "bool": {
            "filter": [
                {
                    "bool": {
                        "should": [
                            {"term": {"meta_filter.team": "ops"}},
                            {
                                "bool": {
                                    "filter": [
                                        {"term": {"meta_filter.team": "sales"}},
                                        {"range": {"meta_filter.year": {"gte": 2025}}},
                                    ]
                                }
                            },
                        ],
                        "minimum_should_match": 1,
                    }
                },
                {"bool": {"must_not": [{"term": {"meta_filter.draft": True}}]}},
            ]
        }
    }


def test_an_item_with_several_entries_is_anded():
    assert clause({"$or": [{"team": "ops", "draft": False}, {"year": 2020}]}) == {
        "bool": {
            "should": [
                {
                    "bool": {
                        "filter": [
                            {"term": {"meta_filter.team": "ops"}},
                            {"term": {"meta_filter.draft": False}},
                        ]
                    }
                },
                {"term": {"meta_filter.year": 2020}},
            ],
            "minimum_should_match": 1,
        }
    }


def test_date_objects_become_iso_text():
    assert clause({"published": {"$gte": date(2026, 1, 2)}}) == {
        "range": {"meta_filter.published": {"gte": "2026-01-02"}}
    }
    moment = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    assert clause({"published": {"$lt": moment}}) == {
        "range": {"meta_filter.published": {"lt": "2026-01-02T03:04:00+00:00"}}
    }


def test_tuples_are_lists():
    assert clause({"team": {"$in": ("a", "b")}}) == {"terms": {"meta_filter.team": ["a", "b"]}}


# --- refusals -----------------------------------------------------------------------------------


def refused(filters, fields=FIELDS) -> FilterError:  # type: ignore[no-untyped-def]
    with pytest.raises(FilterError) as info:
        translate_filter(filters, fields)
    err = info.value
    assert isinstance(err, BadQueryError)
    # Every refusal lists what may be filtered on.
    assert (
        "team (keyword), year (number), published (date), draft (boolean)" in (err.hint or "")
        or not fields
    )
    return err


@pytest.mark.parametrize("field", sorted(POLICY_FIELDS))
def test_a_policy_field_is_refused_by_name(field):
    err = refused({field: "x"})
    assert f"{field} is a policy field" in err.message and err.field == field


@pytest.mark.parametrize(
    "filters",
    [
        {"$or": [{"team": "x"}, {"tenant": "demo-B"}]},
        {"$not": {"acl_groups": "*"}},
        {"team": "x", "deleted": True},
        {"$and": [{"valid_to": {"$gte": "2020-01-01"}}]},
    ],
)
def test_a_policy_field_is_refused_anywhere(filters):
    assert "is a policy field" in refused(filters).message


@pytest.mark.parametrize(
    "name", ["colour", "title", "doc_id", "meta_filter.team", "metadata.team", "Team"]
)
def test_an_undeclared_field_is_refused_naming_it(name):
    err = refused({name: "x"})
    assert err.message == f"{name!r} is not a filterable field" and err.field == name


def test_with_no_field_declared_every_filter_is_refused():
    err = refused({"team": "x"}, fields=())
    assert "filterable fields: none" in (err.hint or "")


@pytest.mark.parametrize(
    "raw",
    [
        {"terms": {"acl_groups": {"index": "other", "id": "1", "path": "groups"}}},
        {"script": {"script": "true"}},
        {"bool": {"should": [{"match_all": {}}]}},
        {"match_all": {}},
    ],
)
def test_raw_engine_clauses_are_refused(raw):
    assert "is not a filterable field" in refused(raw).message


def test_a_raw_clause_under_a_field_is_refused():
    err = refused({"team": {"terms": {"index": "other", "id": "1", "path": "x"}}})
    assert "'terms' is not an operator" in err.message


@pytest.mark.parametrize("op", ["$regex", "$exists", "$where", "$contains", "$like"])
def test_an_unsupported_operator_is_refused_naming_it(op):
    err = refused({"team": {op: "x"}})
    assert f"unsupported operator {op!r}" in err.message


@pytest.mark.parametrize("op", ["$nor", "$xor", "$all"])
def test_an_unsupported_logical_operator_is_refused_naming_it(op):
    assert f"unsupported operator {op!r}" in refused({op: [{"team": "x"}]}).message


def test_a_comparison_at_the_top_needs_a_field():
    assert "$eq compares a field" in refused({"$eq": "x"}).message


@pytest.mark.parametrize(
    ("filters", "needle"),
    [
        ({"team": 5}, "team is a keyword field and $eq needs text, got the number 5"),
        ({"team": None}, "team is a keyword field and $eq needs text, got null"),
        ({"year": "2024"}, "year is a number field and $eq needs a number, got the text '2024'"),
        ({"year": True}, "year is a number field and $eq needs a number, got the boolean true"),
        ({"year": {"$gte": float("nan")}}, "needs a finite number"),
        ({"draft": "true"}, "draft is a boolean field and $eq needs true or false"),
        ({"published": "yesterday"}, "published is a date field and $eq needs an ISO 8601 date"),
        ({"published": "2026-02-30"}, "needs an ISO 8601 date"),
        ({"published": "2026/01/01"}, "needs an ISO 8601 date"),
        ({"team": {"$in": ["a", 1]}}, "team is a keyword field and $in needs text"),
        ({"team": "x" * 9000}, "takes at most 8192 UTF-8 bytes"),
        ({"team": "\ud800"}, "valid Unicode"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_field_and_type(filters, needle):
    assert needle in refused(filters).message


@pytest.mark.parametrize("op", ["$gt", "$gte", "$lt", "$lte"])
@pytest.mark.parametrize("field", ["team", "draft"])
def test_ranges_need_a_number_or_date_field(op, field):
    err = refused({field: {op: "a" if field == "team" else True}})
    assert f"{op} needs a number or date field" in err.message


@pytest.mark.parametrize(
    ("filters", "needle"),
    [
        ({"team": ["a", "b"]}, 'got a list (for any of several values use {"$in": [...]})'),
        ({"team": {"$in": []}}, "$in takes a non-empty list"),
        ({"team": {"$nin": "ops"}}, "$nin takes a non-empty list of values, got text"),
        ({"team": {}}, "an empty object is not an operator"),
        ({"team": {"$eq": "a", "raw": 1}}, "'raw' is not an operator"),
        ({"$and": []}, "$and takes a non-empty list"),
        ({"$or": {"team": "x"}}, "$or takes a non-empty list of filters, got an object"),
        ({"$or": ["team"]}, "each item of $or takes a non-empty filter object, got text"),
        ({"$not": {}}, "$not takes a non-empty filter object"),
        ({"$not": [{"team": "x"}]}, "$not takes a non-empty filter object, got a list"),
    ],
)
def test_malformed_filters_are_refused(filters, needle):
    assert needle in refused(filters).message


@pytest.mark.parametrize("value", [["team", "x"], "team=x", 5])
def test_a_filter_is_an_object(value):
    assert "a filter must be a JSON object" in refused(value).message


def test_depth_is_bounded():
    ok: dict[str, object] = {"team": "x"}
    for _ in range(MAX_DEPTH - 1):
        ok = {"$not": ok}
    assert translate_filter(ok, FIELDS) is not None
    assert f"deeper than {MAX_DEPTH} levels" in refused({"$not": ok}).message


def test_conditions_are_bounded():
    many = [{"year": i} for i in range(MAX_CONDITIONS)]
    assert translate_filter({"$or": many}, FIELDS) is not None
    err = refused({"$or": [*many, {"year": -1}]})
    assert f"more than {MAX_CONDITIONS} comparisons" in err.message


def test_in_lists_are_bounded():
    values = [str(i) for i in range(MAX_IN_VALUES)]
    assert translate_filter({"team": {"$in": values}}, FIELDS) is not None
    err = refused({"team": {"$nin": [*values, "one more"]}})
    assert f"$nin has {MAX_IN_VALUES + 1} values; at most {MAX_IN_VALUES}" in err.message


def test_the_summary_names_fields_and_operators_never_values():
    filters = {
        "team": "secret-team",
        "$or": [{"year": {"$gte": 2024}}, {"$not": {"draft": True}}],
    }
    summary = filter_summary(filters)
    assert summary == ("$not", "$or", "draft:$eq", "team:$eq", "year:$gte")
    assert "secret-team" not in repr(summary)
    assert filter_summary(None) == ()
