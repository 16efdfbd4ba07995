"""What an existing index needs (``cluster.index_status``): current, new fields, a rebuild with
the command that does it, or a conflict with the settings; and the pure parts around it (the
names the indices serve, the tenant of an index name, the models an embedder setting serves,
a rebuild refused in the shared layout)."""

from __future__ import annotations

import copy
from typing import Any
from unittest.mock import MagicMock

import pytest

from hybrid_es.cluster.generations import Generation, names_served
from hybrid_es.cluster.index_status import (
    Wanted,
    analysis_differs,
    classify,
    missing_properties,
    rebuild_command,
    tenant_index,
)
from hybrid_es.encoders.embedder import MINILM_ID, MINILM_INT8_ID, E5Embedder
from hybrid_es.encoders.embedder_choice import embedder_setting, models_served, reindex_command
from hybrid_es.errors import ConfigurationError
from hybrid_es.ingest.rebuild import Rebuild
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.models import WRITER_ROLE, Principal
from hybrid_es.tenancy import IndexLayout, index_part, tenant_of_part

LAYOUT = IndexLayout()
NAME = LAYOUT.chunks_for("demo-A")  # hybrid-es-chunks-t-demo-_a
LIVE = Generation(NAME, f"{NAME}+g1", 1, True)
STANDARD = {
    "analyzer": {
        "hes_text": {"type": "standard", "stopwords": "_english_"},
        "hes_cjk": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase"]},
    },
    "normalizer": {"hes_id": {"type": "custom", "filter": ["lowercase"]}},
}
FULL = {
    **STANDARD,
    "analyzer": {
        **STANDARD["analyzer"],
        "hes_text": {
            "type": "custom",
            "tokenizer": "standard",
            "filter": ["lowercase", "hes_english_stemmer"],
        },
    },
    "filter": {"hes_english_stemmer": {"type": "stemmer", "language": "english"}},
}
PROPERTIES: dict[str, Any] = {
    "tenant": {"type": "keyword"},
    "acl_groups": {"type": "keyword"},
    "acl_users": {"type": "keyword"},
    "deleted": {"type": "boolean"},
    "valid_from": {"type": "date"},
    "valid_to": {"type": "date"},
    "search_payload": {"type": "text", "analyzer": "hes_text"},
    "embedding": {"type": "dense_vector", "dims": 384},
    "meta_filter": {"properties": {"team": {"type": "keyword"}}},
}


def template(properties: dict[str, Any] | None = None, analysis: Any = None) -> dict[str, Any]:
    """A simulate answer's ``template``: what the installed templates give a new index."""
    return {
        "mappings": {"properties": properties or PROPERTIES},
        "settings": {"index": {"analysis": analysis or STANDARD}},
    }


def mapping(properties: dict[str, Any] | None = None, model: str | None = None) -> dict[str, Any]:
    meta = {"embedding_model": model, "embedding_dims": 384} if model else {}
    return {"properties": copy.deepcopy(properties or PROPERTIES), "_meta": meta}


def wanted(**kw: Any) -> Wanted:
    return Wanted(layout=kw.pop("layout", LAYOUT), chunks_patterns=("hybrid-es-chunks*",), **kw)


def test_an_index_as_a_new_one_would_be_is_current():
    status = classify(LIVE, mapping(), STANDARD, template(), wanted())
    assert (status.state, status.command, status.note) == ("current", "", "")


def test_an_index_short_of_fields_needs_only_them_and_bootstrap_adds_them():
    have = {k: v for k, v in PROPERTIES.items() if k != "valid_to"}
    have["meta_filter"] = {"properties": {}}
    status = classify(LIVE, mapping(have), STANDARD, template(), wanted())
    assert status.state == "new-fields"
    assert status.missing == {
        "valid_to": {"type": "date"},
        "meta_filter": {"properties": {"team": {"type": "keyword"}}},
    }
    assert status.command == "hybrid-es bootstrap"
    assert status.note.startswith("missing fields: meta_filter, valid_to")


def test_another_analysis_needs_a_rebuild_of_the_tenants_index_named_by_its_command():
    status = classify(LIVE, mapping(), STANDARD, template(analysis=FULL), wanted())
    assert status.state == "rebuild"
    assert status.command == "hybrid-es reindex --tenant demo-A"
    (reason,) = status.reasons
    assert "analyzer hes_text" in reason and "filter hes_english_stemmer" in reason
    assert "analyzer hes_cjk" not in reason
    assert not status.refused  # bootstrap goes on: the index serves until it is rebuilt
    assert "run: hybrid-es reindex --tenant demo-A" in status.note


def test_an_index_of_an_earlier_release_is_adopted_first():
    legacy = Generation(NAME, NAME, 0, False)
    status = classify(legacy, mapping(), STANDARD, template(analysis=FULL), wanted())
    assert status.command == (
        "hybrid-es reindex --adopt --tenant demo-A && hybrid-es reindex --tenant demo-A"
    )


def test_a_fixed_embedder_rebuilds_an_index_of_another_model_but_not_of_another_minilm_runtime():
    minilm = wanted(embedder="minilm", models=models_served("minilm"))
    for served in (MINILM_ID, MINILM_INT8_ID):
        assert classify(LIVE, mapping(model=served), STANDARD, template(), minilm).state == (
            "current"
        )
    status = classify(LIVE, mapping(model=E5Embedder.model_id), STANDARD, template(), minilm)
    assert status.state == "rebuild"
    assert status.command == "hybrid-es reindex --tenant demo-A --embedder minilm"
    assert E5Embedder.model_id in status.reasons[0]
    # auto: each index's own model serves it, whichever it is.
    assert classify(LIVE, mapping(model="some/model"), STANDARD, template(), wanted()).state == (
        "current"
    )
    # an analysis change alone rebuilds with the model the index records: no --embedder.
    again = classify(LIVE, mapping(model=MINILM_ID), STANDARD, template(analysis=FULL), minilm)
    assert again.command == "hybrid-es reindex --tenant demo-A"


def test_a_vector_field_this_engine_cannot_use_or_of_other_dims_needs_a_rebuild():
    faiss = {**PROPERTIES, "embedding": {"type": "knn_vector", "dimension": 384}}
    lucene = {
        **PROPERTIES,
        "embedding": {"type": "knn_vector", "dimension": 384, "method": {"engine": "lucene"}},
    }
    status = classify(LIVE, mapping(faiss), STANDARD, template(lucene), wanted(flavor="opensearch"))
    assert status.state == "rebuild" and status.refused and "lucene" in status.refused[0]
    other = {**PROPERTIES, "embedding": {"type": "dense_vector", "dims": 768}}
    status = classify(LIVE, mapping(other), STANDARD, template(), wanted())
    assert status.state == "rebuild" and not status.refused
    assert status.reasons == ("its vector field holds 768 dimensions, a new index's 384",)


def test_a_policy_field_of_another_type_is_a_rebuild_that_bootstrap_refuses_to_write_over():
    text = {**PROPERTIES, "acl_groups": {"type": "text"}}
    status = classify(LIVE, mapping(text), STANDARD, template(), wanted())
    assert status.state == "rebuild"
    assert status.refused == (
        "it maps the policy fields otherwise than the chunks template: acl_groups is text "
        "(needs keyword)",
    )
    assert status.command == "hybrid-es reindex --tenant demo-A"


def test_a_filterable_field_typed_otherwise_than_a_new_index_or_the_settings():
    now = {**PROPERTIES, "meta_filter": {"properties": {"team": {"type": "double"}}}}
    status = classify(LIVE, mapping(), STANDARD, template(now), wanted())
    assert status.state == "rebuild"
    assert status.reasons == ("it maps meta_filter.team as keyword, a new index as double",)
    declared = wanted(filterable=tuple(parse_filterable_fields("team:number")))
    status = classify(LIVE, mapping(), STANDARD, template(), declared)
    assert status.state == "conflict"
    assert status.conflicts == ("it maps team (mapped as keyword, declared number)",)
    assert "HYBRID_ES_FILTERABLE_FIELDS" in status.command


def test_packets_and_corpus_state_are_checked_for_fields_only():
    live = Generation(LAYOUT.packets, LAYOUT.packets, 0, False)
    odd = {"owner": {"type": "keyword"}, "embedding": {"type": "dense_vector", "dims": 3}}
    status = classify(live, {"properties": odd}, {}, template(analysis=FULL), wanted())
    assert status.state == "new-fields"  # no analysis, vector or model check


@pytest.mark.parametrize(
    ("name", "layout", "command"),
    [
        (NAME, LAYOUT, "hybrid-es reindex --tenant demo-A"),
        (
            "hybrid-es-chunks-rx-t-acme__x",
            LAYOUT,
            "HYBRID_ES_CHUNKS_INDEX=hybrid-es-chunks-rx hybrid-es reindex --tenant acme_x",
        ),
        (
            NAME,
            IndexLayout(mode="shared"),
            "HYBRID_ES_TENANCY=index-per-tenant hybrid-es reindex --tenant demo-A",
        ),
    ],
)
def test_the_command_names_the_settings_of_an_index_of_another_layout(name, layout, command):
    assert rebuild_command(Generation(name, f"{name}+g1", 1, True), layout) == command


def test_a_shared_index_is_no_tenants_own_and_the_command_says_what_to_do_instead():
    shared = IndexLayout(mode="shared")
    assert tenant_index(shared.chunks, shared) is None
    text = rebuild_command(Generation(shared.chunks, shared.chunks, 0, False), shared)
    assert "--tenant" not in text and "HYBRID_ES_CHUNKS_INDEX" in text


@pytest.mark.parametrize("tenant", ["demo-A", "a_b", "a_X", "A", "x.y-Z_z", "a__b"])
def test_an_index_part_reads_back_as_its_tenant(tenant):
    assert tenant_of_part(index_part(tenant)) == tenant
    assert LAYOUT.tenant_of(LAYOUT.chunks_for(tenant)) == tenant
    assert IndexLayout(mode="shared").tenant_of(LAYOUT.chunks_for(tenant)) is None


@pytest.mark.parametrize("part", ["A", "a_", "a_1", "_a-", "a b", ""])
def test_a_string_no_tenant_gives_reads_as_none(part):
    assert tenant_of_part(part) is None


def test_analysis_settings_compare_as_the_engines_answer_them():
    assert analysis_differs({"filter": {"s": {"max": 2}}}, {"filter": {"s": {"max": "2"}}}) == []
    assert analysis_differs({}, {}) == []
    (reason,) = analysis_differs(STANDARD, {})
    assert "analyzer hes_cjk, analyzer hes_text, normalizer hes_id" in reason


def test_missing_properties_at_any_depth():
    want = {"a": {"type": "keyword"}, "o": {"properties": {"x": {"type": "long"}}}}
    assert missing_properties(want, {"a": {"type": "keyword"}, "o": {"properties": {}}}) == {
        "o": {"properties": {"x": {"type": "long"}}}
    }
    assert missing_properties(want, want) == {}


def test_what_an_embedder_setting_serves_and_the_reindex_flag_of_a_model():
    assert models_served("auto") is None
    assert models_served("minilm") == {MINILM_ID, MINILM_INT8_ID}
    assert models_served("e5") == {E5Embedder.model_id}
    assert models_served("BAAI/bge-small-en") == {"BAAI/bge-small-en"}
    assert embedder_setting(MINILM_INT8_ID) == embedder_setting(MINILM_ID) == "minilm"
    assert embedder_setting(E5Embedder.model_id) == "e5"
    assert reindex_command("acme", E5Embedder.model_id) == (
        "hybrid-es reindex --tenant acme --embedder e5"
    )
    assert reindex_command(None, "my/model") == (
        "hybrid-es reindex --tenant <tenant> --embedder my/model"
    )


def test_the_names_indices_serve_leave_out_generations_no_alias_points_at():
    answer = {
        "a+g1": {"aliases": {}},  # the one before a switch, kept for switching back
        "a+g2": {"aliases": {"a": {}}},
        "b": {"aliases": {}},  # an earlier release's index
        "c+g1": {"aliases": {}},  # a rebuild's next generation of nothing served
        "d+g1": {"aliases": {"d": {}, "someone-elses": {}}},
    }
    assert names_served(answer) == {
        "a": Generation("a", "a+g2", 2, True),
        "b": Generation("b", "b", 0, False),
        "d": Generation("d", "d+g1", 1, True),
    }


def test_a_rebuild_is_refused_in_the_shared_layout_before_anything_is_read():
    engine = MagicMock()
    writer = Principal(tenant="acme", user_id="ops", roles=(WRITER_ROLE,))
    work = Rebuild(engine, IndexLayout(mode="shared"), MagicMock())
    for call in (work.run, work.switch_back):
        with pytest.raises(ConfigurationError, match="shared tenancy layout") as err:
            call(writer)
        assert "index-per-tenant" in (err.value.hint or "")
    assert not engine.request.called and not engine.get_mapping.called
