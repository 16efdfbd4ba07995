"""The declared filterable fields in the chunks index template: the overlay bootstrap computes
over the fixed JSON (``cluster.templates.with_filterable_fields``), and the type conflicts it
refuses on existing indices. Pure."""

from __future__ import annotations

import copy

import pytest

from hybrid_es.cluster.bootstrap import templates_for
from hybrid_es.cluster.capabilities import Capabilities
from hybrid_es.cluster.templates import (
    CHUNKS_TEMPLATE,
    filter_field_conflicts,
    filter_mapping,
    load_templates,
    with_filterable_fields,
)
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.settings import Settings

FIELDS = parse_filterable_fields("team:keyword,year:number,published:date,draft:boolean")
META_FILTER = {
    "type": "object",
    "dynamic": False,
    "properties": {
        "team": {"type": "keyword"},
        "year": {"type": "double"},
        "published": {"type": "date"},
        "draft": {"type": "boolean"},
    },
}


def _chunks(templates):  # type: ignore[no-untyped-def]
    (t,) = [t for t in templates if t.name == CHUNKS_TEMPLATE]
    return t


def test_the_filter_mapping_is_typed_and_indexes_nothing_else():
    assert filter_mapping(FIELDS) == META_FILTER


def test_no_declared_field_leaves_the_templates_as_the_files_have_them():
    templates = load_templates()
    assert with_filterable_fields(templates, ()) == templates
    assert "meta_filter" not in _chunks(templates).body["template"]["mappings"]["properties"]


@pytest.mark.parametrize("flavor", ["elasticsearch", "opensearch"])
def test_the_overlay_adds_meta_filter_to_the_chunks_template_only(flavor):
    templates = load_templates("full", flavor=flavor)
    before = copy.deepcopy([t.body for t in templates])
    out = with_filterable_fields(templates, FIELDS)
    assert [t.body for t in templates] == before  # the input is not changed
    for old, new in zip(templates, out, strict=True):
        if new.name != CHUNKS_TEMPLATE:
            assert new == old
            continue
        props = new.body["template"]["mappings"]["properties"]
        assert props["meta_filter"] == META_FILTER
        # The fixed part is the file's: everything but meta_filter is unchanged.
        rest = copy.deepcopy(new.body)
        del rest["template"]["mappings"]["properties"]["meta_filter"]
        assert rest == old.body
        # A changed declaration is a changed template (bootstrap --force shows the diff).
        assert new.fingerprint != old.fingerprint
        assert (
            new.fingerprint
            != with_filterable_fields(templates, FIELDS[:1])[out.index(new)].fingerprint
        )
        # The metadata itself stays stored only.
        assert props["metadata"] == {"type": "object", "enabled": False}


def test_bootstrap_installs_the_declared_fields_of_the_settings():
    caps = Capabilities(
        flavor="elasticsearch",
        server_version="9.5.4",
        license_type="trial",
        security_enabled=True,
        native_rrf=False,
        linear_retriever=False,
        knn=True,
        index_options=("hnsw",),
        analyzers=("standard",),
        native_security_store=False,
    )
    declared = Settings(filterable_fields="team:keyword,year:number")
    chunks = _chunks(templates_for(caps, declared)).body
    assert chunks["template"]["mappings"]["properties"]["meta_filter"] == {
        "type": "object",
        "dynamic": False,
        "properties": {"team": {"type": "keyword"}, "year": {"type": "double"}},
    }
    plain = _chunks(templates_for(caps, Settings(filterable_fields=""))).body
    assert "meta_filter" not in plain["template"]["mappings"]["properties"]


def test_a_mapped_type_that_differs_is_a_conflict():
    # As GET <index>/_mapping returns it: no "type": "object", dynamic as text.
    props = {
        "meta_filter": {
            "dynamic": "false",
            "properties": {"team": {"type": "keyword"}, "year": {"type": "keyword"}},
        }
    }
    assert filter_field_conflicts(FIELDS, props) == ["year (mapped as keyword, declared number)"]
    assert filter_field_conflicts(FIELDS[:1], props) == []
    assert filter_field_conflicts(FIELDS, {}) == []  # not mapped yet: bootstrap adds them
