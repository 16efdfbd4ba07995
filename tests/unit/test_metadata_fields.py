"""Declared filterable fields (``HYBRID_ES_FILTERABLE_FIELDS``), their values, and what metadata
can be stored (``hybrid_es.metadata_fields``). Pure."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime

import pytest
from pydantic import ValidationError

from hybrid_es.cluster.templates import load_templates
from hybrid_es.errors import ConfigurationError
from hybrid_es.ingest.documents import Document
from hybrid_es.metadata_fields import (
    MAX_FILTERABLE_FIELDS,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_VALUES,
    POLICY_FIELDS,
    FilterableField,
    check_metadata,
    fields_from_mapping,
    filter_values,
    parse_filterable_fields,
    value_problem,
)
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.settings import Settings

DECLARED = "team:keyword,year:number,published:date,draft:boolean"
FIELDS = (
    FilterableField("team", "keyword"),
    FilterableField("year", "number"),
    FilterableField("published", "date"),
    FilterableField("draft", "boolean"),
)

# --- the declaration -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        DECLARED,
        " team : keyword , year:number,, published:date ,draft:boolean ",
        {"team": "keyword", "year": "number", "published": "date", "draft": "boolean"},
        ["team:keyword", "year:number", "published:date", "draft:boolean"],
        FIELDS,
    ],
)
def test_the_declaration_in_every_form(value):
    assert parse_filterable_fields(value) == FIELDS


@pytest.mark.parametrize("value", [None, "", " , ", (), {}])
def test_nothing_declared(value):
    assert parse_filterable_fields(value) == ()


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("team", "'team' is not name:type"),
        ("team:", "'team:' is not name:type"),
        (":keyword", "':keyword' is not name:type"),
        ("team:text", "team: unknown type 'text'; use keyword, number, date, boolean"),
        ("team:Keyword", "unknown type 'Keyword'"),
        ("meta.team:keyword", "'meta.team' is not a filterable name"),
        ("_team:keyword", "'_team' is not a filterable name"),
        ("1team:keyword", "'1team' is not a filterable name"),
        ("té:keyword", "'té' is not a filterable name"),
        ("t" * 65 + ":keyword", "is not a filterable name"),
        ("team:keyword,team:number", "team is declared twice"),
        ("tenant:keyword", "tenant is a policy field"),
        ("acl_groups:keyword", "acl_groups is a policy field"),
        ([1], "expected 'name:type' entries, got the number 1"),
        (5, "expected text such as"),
    ],
)
def test_a_bad_declaration_names_the_entry(value, needle):
    with pytest.raises(ConfigurationError) as info:
        parse_filterable_fields(value)
    assert needle in info.value.message
    assert info.value.message.startswith("invalid HYBRID_ES_FILTERABLE_FIELDS: ")
    assert "team:keyword,year:number" in (info.value.hint or "")


def test_the_number_of_fields_is_bounded():
    many = ",".join(f"f{i}:keyword" for i in range(MAX_FILTERABLE_FIELDS))
    assert len(parse_filterable_fields(many)) == MAX_FILTERABLE_FIELDS
    with pytest.raises(ConfigurationError, match="at most 64"):
        parse_filterable_fields(many + ",one_more:keyword")


def test_settings_read_the_variable(monkeypatch):
    monkeypatch.setenv("HYBRID_ES_FILTERABLE_FIELDS", DECLARED)
    assert Settings().filterable_fields == FIELDS
    assert Settings(filterable_fields="team:keyword").filterable_fields == FIELDS[:1]
    monkeypatch.delenv("HYBRID_ES_FILTERABLE_FIELDS")
    assert Settings().filterable_fields == ()


def test_settings_refuse_a_bad_declaration(monkeypatch):
    monkeypatch.setenv("HYBRID_ES_FILTERABLE_FIELDS", "deleted:boolean")
    with pytest.raises(ConfigurationError, match="deleted is a policy field"):
        Settings()


def _fields_in(node, out):  # type: ignore[no-untyped-def]
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("term", "terms", "range") and isinstance(value, dict):
                out.update(value)
            elif key == "exists":
                out.add(value["field"])
            else:
                _fields_in(value, out)
    elif isinstance(node, list):
        for item in node:
            _fields_in(item, out)
    return out


def test_every_field_the_policy_reads_is_a_policy_field():
    # The broadest policy: every optional rule in force.
    scope = RequestScope(
        booking_ids=("B-1",),
        property_ids=("P-1",),
        jurisdictions=("JP",),
        source_types=("contract",),
        as_of=date(2026, 4, 1),
    )
    now = datetime(2026, 4, 1, tzinfo=UTC)
    read = _fields_in(policy_filter(Principal(tenant="t", user_id="u"), scope, now), set())
    read |= _fields_in(
        policy_filter(Principal(tenant="t", user_id="u"), RequestScope(), now), set()
    )
    assert read <= POLICY_FIELDS, sorted(read - POLICY_FIELDS)
    (chunks,) = [t for t in load_templates() if t.name == "hybrid-es-chunks"]
    assert set(chunks.body["template"]["mappings"]["properties"]) >= POLICY_FIELDS


# --- values of declared fields ------------------------------------------------------------------


def test_filter_values_keep_declared_fields_only():
    metadata = {
        "team": "ops",
        "year": 2026,
        "published": "2026-04-01",
        "draft": False,
        "path": "a.md",
        "acl_groups": ["*"],
    }
    assert filter_values(metadata, FIELDS) == {
        "team": "ops",
        "year": 2026,
        "published": "2026-04-01",
        "draft": False,
    }
    assert filter_values(metadata, ()) == {}


def test_filter_values_lists_nulls_and_dates():
    metadata = {"team": ["ops", "sales"], "year": None, "published": date(2026, 4, 1), "draft": []}
    assert filter_values(metadata, FIELDS) == {
        "team": ["ops", "sales"],
        "published": "2026-04-01",
    }


@pytest.mark.parametrize(
    ("metadata", "needle"),
    [
        ({"year": "2026"}, "metadata.year is declared filterable as number"),
        ({"year": True}, "needs a number, got the boolean true"),
        ({"team": 7}, "metadata.team is declared filterable as keyword"),
        ({"team": ["ops", 7]}, "needs text, got the number 7"),
        ({"team": {"name": "ops"}}, "needs text, got an object"),
        ({"draft": "no"}, "needs true or false, got the text 'no'"),
        ({"published": "April 2026"}, "needs an ISO 8601 date"),
        ({"published": "2026-04-01T25:00"}, "needs an ISO 8601 date"),
        ({"team": ["x"] * (MAX_VALUES + 1)}, f"holds {MAX_VALUES + 1} values"),
    ],
)
def test_filter_values_refuse_the_wrong_type(metadata, needle):
    with pytest.raises(ValueError) as info:
        filter_values(metadata, FIELDS)
    assert needle in str(info.value)
    assert "HYBRID_ES_FILTERABLE_FIELDS" in str(info.value) or "values" in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "2026-04-01",
        "2026-04-01T09:30",
        "2026-04-01T09:30:15",
        "2026-04-01T09:30:15.123456789Z",
        "2026-04-01T09:30:15+02:00",
        "2024-02-29",
    ],
)
def test_iso_dates_that_the_engines_read(text):
    assert value_problem("date", text) is None


@pytest.mark.parametrize(
    "text",
    ["2026-4-1", "20260401", "2026-04-01 09:30", "2023-02-29", "2026-04-01T09:30+25:00", ""],
)
def test_dates_the_engines_would_not_read(text):
    assert value_problem("date", text) is not None


def test_numbers():
    assert value_problem("number", 1) is None and value_problem("number", -0.5) is None
    assert value_problem("number", math.inf) == "needs a finite number, got inf"


def test_fields_from_a_mapping():
    meta_filter = {
        "dynamic": "false",
        "properties": {
            "year": {"type": "double"},
            "team": {"type": "keyword"},
            "draft": {"type": "boolean"},
            "published": {"type": "date"},
            "count": {"type": "long"},
        },
    }
    assert fields_from_mapping(meta_filter) == (
        FilterableField("count", "number"),
        FilterableField("draft", "boolean"),
        FilterableField("published", "date"),
        FilterableField("team", "keyword"),
        FilterableField("year", "number"),
    )
    assert fields_from_mapping(None) == ()
    with pytest.raises(ConfigurationError, match=r"maps meta_filter.body as 'text'"):
        fields_from_mapping({"properties": {"body": {"type": "text"}}}, index="i")


# --- what metadata can be stored ----------------------------------------------------------------


def test_storable_metadata_is_kept_as_given():
    metadata = {
        "path": "a/b.md",
        "url": "https://example.com/x",
        "a.b": 1,
        "_private": True,
        "": "empty key",
        "nested": {"list": [1, 2.5, None, {"x": "y"}]},
    }
    assert check_metadata(metadata) == metadata
    assert check_metadata(None) == {}


def test_dates_and_tuples_become_json():
    assert check_metadata({"d": date(2026, 4, 1), "t": (1, 2)}) == {
        "d": "2026-04-01",
        "t": [1, 2],
    }


def _nested(levels: int) -> dict[str, object]:
    out: dict[str, object] = {"leaf": 1}
    for _ in range(levels - 1):
        out = {"n": out}
    return out


@pytest.mark.parametrize(
    ("metadata", "needle"),
    [
        ({"blob": b"\x00\x01"}, "metadata.blob: binary data cannot be stored"),
        ({"s": {1, 2}}, "metadata.s: 'set' is not a JSON value"),
        ({"x": float("nan")}, "metadata.x: nan is not a JSON number"),
        ({"x": [1, float("inf")]}, "metadata.x[1]: inf is not a JSON number"),
        ({"x": 2**64}, "outside 64 bits"),
        ({"x": "\ud800"}, "metadata.x: not valid Unicode"),
        ({"\udfff": 1}, "key: not valid Unicode"),
        ({1: "x"}, "key 1 is not text"),
        ({"o": object()}, "metadata.o: 'object' is not a JSON value"),
        (_nested(MAX_METADATA_DEPTH + 1), f"nested deeper than {MAX_METADATA_DEPTH} levels"),
        ({"big": "x" * MAX_METADATA_BYTES}, "the limit is 65,536"),
        (["not", "an", "object"], "metadata must be a JSON object, got a list"),
    ],
)
def test_what_cannot_be_stored_is_refused_with_the_key_path(metadata, needle):
    with pytest.raises(ValueError) as info:
        check_metadata(metadata)
    assert needle in str(info.value)


def test_a_document_refuses_unstorable_metadata():
    assert check_metadata(_nested(MAX_METADATA_DEPTH)) == _nested(MAX_METADATA_DEPTH)
    with pytest.raises(ValidationError, match="binary data cannot be stored"):
        Document(id="d", tenant="t", body="text", metadata={"b": b"x"})
    doc = Document(id="d", tenant="t", body="text", metadata={"when": date(2026, 4, 1)})
    assert doc.metadata == {"when": "2026-04-01"}
