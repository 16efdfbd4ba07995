"""The policy fields a chunks index must map as the chunks template does (issue 36, item 4): which
fields, read how, refused with what, and the chunks index names bootstrap accepts."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from hybrid_es.cluster.bootstrap import check_chunks_names
from hybrid_es.cluster.policy_fields import (
    CHUNKS_SETTING,
    POLICY_FIELDS,
    check_mapped,
    chunks_patterns,
    field_types,
    field_types_by_index,
    field_types_from_caps,
    matches,
    required_types,
    wrong_types,
)
from hybrid_es.cluster.source_connection import ENV_PREFIX as SOURCE_PREFIX
from hybrid_es.cluster.source_connection import SourceSettings
from hybrid_es.cluster.templates import CHUNKS_TEMPLATE, load_templates
from hybrid_es.errors import ConfigurationError
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.door import tenant_policy
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout
from tests.constants import NOW

PACKAGE = Path(__file__).resolve().parents[2] / "hybrid_es"
PRINCIPAL = Principal(tenant="demo-A", user_id="agent-1", groups=("managers",))
SCOPES = [
    RequestScope(),
    RequestScope(historical=True),
    RequestScope(
        stay_from=date(2026, 4, 10),
        stay_to=date(2026, 4, 14),
        booking_ids=("JPN-2026-0417",),
        property_ids=("PROP-KYO-12",),
        jurisdictions=("JP",),
        source_types=("contract",),
    ),
]
# What an index gets where no template matched its name: dynamic mappings.
DYNAMIC = {
    "tenant": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}},
    "acl_groups": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
}


def _fields(node: object) -> set[str]:
    """Every field name a query clause names."""
    if isinstance(node, list):
        return {f for n in node for f in _fields(n)}
    if not isinstance(node, dict):
        return set()
    out: set[str] = set()
    for key, value in node.items():
        if key in ("term", "terms", "range"):
            out |= {f for f in value if f != "boost"}
        elif key == "exists":
            out.add(value["field"])
        else:
            out |= _fields(value)
    return out


def _template_properties() -> dict[str, dict[str, object]]:
    (t,) = [t for t in load_templates() if t.kind == "index" and t.name == CHUNKS_TEMPLATE]
    return t.body["template"]["mappings"]["properties"]  # type: ignore[no-any-return]


def test_every_field_a_policy_clause_names_is_checked():
    used = _fields(tenant_policy("demo-A"))
    for scope in SCOPES:
        used |= _fields(policy_filter(PRINCIPAL, scope, NOW))
    assert {"tenant", "acl_groups", "superseded_by", "jurisdiction"} <= used
    assert sorted(used - set(POLICY_FIELDS)) == []


def test_the_required_types_are_the_chunks_templates_own():
    props = _template_properties()
    assert required_types() == {f: props[f]["type"] for f in POLICY_FIELDS}
    assert required_types()["acl_groups"] == "keyword"
    assert required_types()["valid_from"] == "date"
    assert chunks_patterns() == ("hybrid-es-chunks*",)


def test_the_templates_own_mapping_passes_and_a_dynamic_one_is_named_field_by_field():
    check_mapped("good", {"good": field_types(_template_properties())})
    types = field_types({**_template_properties(), **DYNAMIC})
    assert wrong_types(types) == {"tenant": "text", "acl_groups": "text"}
    with pytest.raises(ConfigurationError) as err:
        check_mapped("my-chunks", {"my-chunks": types}, writing=True)
    message = str(err.value)
    assert "my-chunks" in message
    assert "acl_groups is text (needs keyword)" in message
    assert "tenant is text (needs keyword)" in message
    assert "nothing was written" in message
    assert "hybrid-es bootstrap" in (err.value.hint or "")
    assert "hybrid-es reindex --tenant" in (err.value.hint or "")


def test_an_unmapped_field_is_wrong_except_where_bootstrap_adds_it():
    props = {k: v for k, v in _template_properties().items() if k != "embargo_until"}
    assert wrong_types(field_types(props)) == {"embargo_until": None}
    assert wrong_types(field_types(props), unmapped=False) == {}
    with pytest.raises(ConfigurationError, match=r"embargo_until is not mapped \(needs date\)"):
        check_mapped("i", {"i": field_types(props)})


def test_an_object_where_a_keyword_belongs_is_wrong():
    props = {**_template_properties(), "tenant": {"properties": {"id": {"type": "keyword"}}}}
    assert wrong_types(field_types(props)) == {"tenant": "object"}


def test_each_index_behind_an_alias_is_checked_and_named():
    good = {"properties": _template_properties()}
    bad = {"properties": {**_template_properties(), **DYNAMIC}}
    types = field_types_by_index({"chunks-a": good, "chunks-b": bad})
    with pytest.raises(ConfigurationError, match=r"chunks index chunks-b \(behind chunks\) "):
        check_mapped("chunks", types)


def test_field_caps_are_read_per_index_with_unmapped_fields():
    same = {"type": "keyword", "searchable": True, "aggregatable": True}
    caps = {
        "indices": ["a", "b"],
        "fields": {
            "tenant": {"keyword": same},
            "acl_groups": {
                "keyword": {**same, "indices": ["a"]},
                "text": {"type": "text", "indices": ["b"]},
            },
            "deleted": {
                "boolean": {"type": "boolean", "indices": ["a"]},
                "unmapped": {"type": "unmapped", "indices": ["b"]},
            },
        },
    }
    types = field_types_from_caps(caps)
    assert (types["a"]["tenant"], types["a"]["acl_groups"], types["a"]["deleted"]) == (
        "keyword",
        "keyword",
        "boolean",
    )
    assert (types["b"]["tenant"], types["b"]["acl_groups"], types["b"]["deleted"]) == (
        "keyword",
        "text",
        None,
    )
    assert types["a"]["valid_from"] is None  # not in the answer: not mapped


@pytest.mark.parametrize(
    ("name", "patterns", "expected"),
    [
        ("hybrid-es-chunks", ["hybrid-es-chunks*"], True),
        ("hybrid-es-chunks-t-demo-_a", ["hybrid-es-chunks*"], True),
        ("my-chunks", ["hybrid-es-chunks*"], False),
        ("my-chunks-t-demo-_a", ["hybrid-es-chunks*"], False),
        ("x-hybrid-es-chunks", ["hybrid-es-chunks*"], False),
        ("a.b", ["a*b"], True),
        ("axb", ["a.b"], False),
        ("my-chunks", ["x*", "my-*"], True),
    ],
)
def test_template_patterns_match_as_the_engine_matches_them(name, patterns, expected):
    assert matches(name, patterns) is expected


def _chunks_templates():  # type: ignore[no-untyped-def]
    return [t for t in load_templates() if t.name == CHUNKS_TEMPLATE]


@pytest.mark.parametrize("mode", ["index-per-tenant", "shared"])
def test_bootstrap_refuses_chunks_names_the_chunks_template_does_not_match(mode):
    check_chunks_names(IndexLayout(mode=mode), _chunks_templates())  # type: ignore[arg-type]
    check_chunks_names(IndexLayout(chunks="hybrid-es-chunks-x", mode=mode), _chunks_templates())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError) as err:
        check_chunks_names(IndexLayout(chunks="my-chunks", mode=mode), _chunks_templates())  # type: ignore[arg-type]
    pattern = "my-chunks" if mode == "shared" else "my-chunks-t-*"
    assert f"chunks indices {pattern} ({CHUNKS_SETTING}=my-chunks" in err.value.message
    assert "nothing was written" in err.value.message
    assert CHUNKS_SETTING in (err.value.hint or "")


def test_every_hybrid_es_variable_the_package_names_is_one_it_reads():
    # Bootstrap's hint named HYBRID_ES_INDEX_PREFIX, a setting that never existed: a user who
    # followed it changed nothing.
    settings = {f"HYBRID_ES_{name.upper()}" for name in Settings.model_fields}
    # An index sync's source has settings of its own (cluster.source_connection).
    settings |= {f"{SOURCE_PREFIX}{name.upper()}" for name in SourceSettings.model_fields}
    sources = {p: p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}
    # Read by name from the environment rather than through Settings.
    read = {
        m
        for text in sources.values()
        for line in text.splitlines()
        if "environ" in line or "getenv" in line or re.match(r"\s*[A-Z_]+ = \"HYBRID_ES_", line)
        for m in re.findall(r"HYBRID_ES_[A-Z0-9_]+", line)
    }
    named = {
        f"{p.relative_to(PACKAGE)}: {m}"
        for p, text in sources.items()
        for m in re.findall(r"HYBRID_ES_[A-Z0-9_]+", text)
        if m not in settings | read
    }
    assert sorted(named) == []
