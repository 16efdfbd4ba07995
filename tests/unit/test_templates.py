"""The JSON under es_templates/: parses, composes, maps every policy field, renders roles."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from hybrid_es.cluster.template_bodies import HASH_KEY, diff, fingerprint, merge_patch
from hybrid_es.cluster.templates import (
    ANALYSIS_TEMPLATE,
    DEPLOYMENT_ROLES,
    PIPELINES,
    TENANT_PLACEHOLDER,
    Template,
    adapt_pipeline,
    backend_role,
    load_pipelines,
    load_templates,
    pipeline_definition,
    render_deployment_role,
    render_role,
    templates_dir,
    vector_dims,
    vector_field_problem,
    with_fingerprint,
)
from hybrid_es.cluster.trace_storage import STREAM_TEMPLATE
from hybrid_es.errors import ConfigurationError
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.policy import authorize, policy_filter
from hybrid_es.tenancy import IndexLayout
from tests.constants import NOW

ROOT = Path(__file__).resolve().parents[2] / "es_templates"
JSON_FILES = sorted(ROOT.rglob("*.json"))
NDJSON_FILES = sorted(ROOT.rglob("*.ndjson"))


def _chunks_template(profile="standard"):
    (t,) = [
        t for t in load_templates(profile) if t.kind == "index" and t.name == "hybrid-es-chunks"
    ]
    return t


def _chunk_properties():
    return _chunks_template().body["template"]["mappings"]["properties"]


def test_the_source_tree_templates_are_found():
    assert templates_dir() == ROOT
    assert JSON_FILES  # guards the parametrisation below against an empty glob


@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_json_template_parses_to_an_object(path):
    assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict)


@pytest.mark.parametrize("path", NDJSON_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_ndjson_line_parses(path):
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert lines
    assert all(isinstance(json.loads(ln), dict) for ln in lines)


@pytest.mark.parametrize("profile", ["standard", "full"])
def test_components_come_before_index_templates(profile):
    kinds = [t.kind for t in load_templates(profile)]
    assert kinds == sorted(kinds, key=["component", "index"].index)
    assert kinds.count("component") >= 1 and kinds.count("index") >= 1


@pytest.mark.parametrize("profile", ["standard", "full"])
def test_exactly_one_analysis_template_from_the_chosen_profile(profile):
    templates = load_templates(profile)
    (analysis,) = [t for t in templates if t.name == ANALYSIS_TEMPLATE]
    assert analysis.source.name == f"{ANALYSIS_TEMPLATE}-{profile}.json"
    # The profile files themselves are never installed under their own names.
    assert not [t for t in templates if t.name.startswith(ANALYSIS_TEMPLATE + "-")]


def test_profiles_differ_only_in_the_analysis_template():
    standard = {t.name: t.body for t in load_templates("standard")}
    full = {t.name: t.body for t in load_templates("full")}
    assert standard.keys() == full.keys()
    assert [n for n in standard if standard[n] != full[n]] == [ANALYSIS_TEMPLATE]


@pytest.mark.parametrize("profile", ["standard", "full"])
def test_every_composed_component_exists(profile):
    templates = load_templates(profile)
    components = {t.name for t in templates if t.kind == "component"}
    for t in templates:
        if t.kind == "index":
            assert set(t.body["composed_of"]) <= components, t.name


def test_unknown_component_is_refused(tmp_path):
    (tmp_path / "component").mkdir()
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "x.json").write_text('{"composed_of": ["missing"]}', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="unknown component templates"):
        load_templates(directory=tmp_path)


def test_invalid_json_is_a_configuration_error(tmp_path):
    (tmp_path / "component").mkdir()
    (tmp_path / "index").mkdir()
    (tmp_path / "component" / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        load_templates(directory=tmp_path)


def _fields(node):
    """Every field name a query clause refers to."""
    if isinstance(node, list):
        return {f for n in node for f in _fields(n)}
    if not isinstance(node, dict):
        return set()
    out = set()
    for key, value in node.items():
        if key in ("term", "terms", "range"):
            out |= {f for f in value if f != "boost"}
        elif key == "exists":
            out.add(value["field"])
        else:
            out |= _fields(value)
    return out


FULL_SCOPE = RequestScope(
    stay_from=date(2026, 4, 10),
    stay_to=date(2026, 4, 14),
    booking_ids=("JPN-2026-0417",),
    property_ids=("PROP-KYO-12",),
    jurisdictions=("JP",),
    source_types=("contract",),
)
PRINCIPAL = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))


def test_chunk_mapping_has_every_field_the_policy_filter_references():
    # A policy clause on an unmapped field matches nothing (or everything, for must_not) without
    # any error from Elasticsearch: the mapping must know every field.
    used = _fields(policy_filter(PRINCIPAL, FULL_SCOPE, NOW))
    used |= _fields(policy_filter(PRINCIPAL, RequestScope(), NOW))
    assert {"tenant", "acl_users", "acl_groups", "superseded_by", "jurisdiction"} <= used
    assert sorted(used - set(_chunk_properties())) == []


def test_policy_fields_are_keyword_date_or_boolean():
    # Exact matching: a text field would be analysed and match fragments of a tenant or group.
    props = _chunk_properties()
    used = _fields(policy_filter(PRINCIPAL, FULL_SCOPE, NOW))
    assert {props[f]["type"] for f in used} <= {"keyword", "date", "boolean"}


@pytest.mark.parametrize(
    ("field", "scope_key"),
    [
        ("booking_ids", "booking_ids"),
        ("property_ids", "property_ids"),
        ("jurisdiction", "jurisdictions"),
    ],
)
def test_recheck_and_index_agree_on_case(field, scope_key):
    # authorize() must judge a record as the Elasticsearch clause does. If the re-check admits a
    # value that differs only in case, the keyword field has to lowercase through a normalizer
    # (so `terms` matches it too); otherwise the two drift apart.
    scope = RequestScope(**{scope_key: ("ab-12",)})
    src = {"tenant": "demo-A", "acl_groups": ["*"], field: ["AB-12"]}
    if field != "booking_ids":
        src["booking_ids"] = []
    recheck_ignores_case = authorize(PRINCIPAL, scope, NOW, src).allowed
    props = _chunk_properties()
    analysis = next(t for t in load_templates() if t.name == ANALYSIS_TEMPLATE).body
    normalizer = analysis["template"]["settings"]["analysis"]["normalizer"].get(
        props[field].get("normalizer"), {}
    )
    index_ignores_case = "lowercase" in normalizer.get("filter", [])
    assert recheck_ignores_case == index_ignores_case


@pytest.mark.parametrize("field", ["booking_ids", "property_ids", "jurisdiction", "source_type"])
def test_scope_fields_compare_exactly_in_the_index(field):
    # Issue 36, item 7: the scope fields lowercased through the hes_id normalizer, so `terms`
    # matched a booking id in any case; a scope decides what a caller reads, and the re-check
    # (policy._scoped) compares exactly.
    assert _chunk_properties()[field] == {"type": "keyword"}


def test_dense_vector_has_384_dims_and_explicit_index_options():
    vectors = {n: p for n, p in _chunk_properties().items() if p["type"] == "dense_vector"}
    assert list(vectors) == ["embedding"]
    embedding = vectors["embedding"]
    assert embedding["dims"] == 384
    assert embedding["index"] is True
    assert embedding["similarity"] == "cosine"
    # Explicit, so a server default change cannot silently change the index.
    assert embedding["index_options"]["type"]


def test_chunk_mapping_is_strict():
    assert _chunks_template().body["template"]["mappings"]["dynamic"] == "strict"


def test_render_role_fills_the_tenant_everywhere():
    name, body = render_role("demo-A")
    assert name == "hybrid-es-tenant-reader-demo-A"
    text = json.dumps(body)
    assert TENANT_PLACEHOLDER not in text
    assert "description" not in body
    for entry in body["indices"]:
        assert entry["query"] == {"term": {"tenant": "demo-A"}}
    assert body["metadata"]["tenant"] == "demo-A"


@pytest.mark.parametrize("tenant", ['demo"A', "demo{A", "demo}A", "demo\\A", "", " demo-A"])
def test_render_role_refuses_unsafe_tenant_ids(tenant):
    with pytest.raises(ConfigurationError, match="not a valid tenant id"):
        render_role(tenant)


def test_fingerprint_is_stable_and_key_order_free():
    body = {"b": [1, 2], "a": {"y": 1, "x": "é"}}
    reordered = {"a": {"x": "é", "y": 1}, "b": [1, 2]}
    assert fingerprint(body) == fingerprint(reordered)
    assert len(fingerprint(body)) == 64
    assert fingerprint(body) != fingerprint({**body, "b": [2, 1]})


def test_fingerprint_ignores_the_recorded_hash():
    body = {"_meta": {"managed_by": "hybrid-es"}, "x": 1}
    stamped = {"_meta": {"managed_by": "hybrid-es", HASH_KEY: "0" * 64}, "x": 1}
    assert fingerprint(stamped) == fingerprint(body)
    # Other _meta keys still count.
    assert fingerprint({"_meta": {"managed_by": "other"}, "x": 1}) != fingerprint(body)


def test_fingerprint_does_not_modify_its_argument():
    stamped = {"_meta": {HASH_KEY: "abc"}}
    fingerprint(stamped)
    assert stamped == {"_meta": {HASH_KEY: "abc"}}


def test_with_fingerprint_stamps_a_copy():
    t = _chunks_template()
    stamped = with_fingerprint(t)
    assert stamped["_meta"][HASH_KEY] == t.fingerprint
    assert HASH_KEY not in t.body["_meta"]
    assert fingerprint(stamped) == t.fingerprint


def test_file_fingerprints_are_distinct():
    templates = load_templates()
    prints = [t.fingerprint for t in templates]
    assert len(set(prints)) == len(prints)
    assert all(isinstance(t, Template) for t in templates)


def test_diff_shows_a_changed_value():
    desired = {"template": {"settings": {"number_of_replicas": 1}}}
    installed = {"template": {"settings": {"index": {"number_of_replicas": "0"}}}}
    text = diff(installed, desired, "hybrid-es-settings")
    assert "--- hybrid-es-settings (installed)" in text
    assert "+++ hybrid-es-settings (file)" in text
    assert '-      "number_of_replicas": "0"' in text
    assert '+      "number_of_replicas": "1"' in text


def test_diff_is_empty_for_the_same_body_as_elasticsearch_returns_it():
    # ES flattens settings under "index." and returns scalars as strings; the hash is ignored.
    desired = {
        "template": {"settings": {"number_of_shards": 1, "codec": "default"}},
        "_meta": {"managed_by": "hybrid-es"},
    }
    installed = {
        "template": {"settings": {"index": {"number_of_shards": "1", "codec": "default"}}},
        "_meta": {"managed_by": "hybrid-es", HASH_KEY: "abc"},
    }
    assert diff(installed, desired, "t") == ""


# --- the OpenSearch variants (es_templates/opensearch/) ---------------------------------------


def _os_chunks(profile="standard"):
    (t,) = [
        t
        for t in load_templates(profile, flavor="opensearch")
        if t.kind == "index" and t.name == "hybrid-es-chunks"
    ]
    return t


def test_merge_patch_follows_rfc_7386():
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "keep": [1, 2]}
    patch = {"a": "z", "c": {"f": None, "h": 1}, "new": {"x": None, "y": 2}}
    assert merge_patch(target, patch) == {
        "a": "z",
        "c": {"d": "e", "h": 1},
        "keep": [1, 2],
        "new": {"y": 2},
    }
    assert target["c"] == {"d": "e", "f": "g"}  # the target is not modified


def test_the_opensearch_chunk_template_swaps_only_the_vector_field():
    es_t, os_t = _chunks_template(), _os_chunks()
    es_props = es_t.body["template"]["mappings"]["properties"]
    os_props = os_t.body["template"]["mappings"]["properties"]
    assert set(es_props) == set(os_props)
    assert {k for k in es_props if es_props[k] != os_props[k]} == {"embedding"}
    assert os_props["embedding"] == {
        "type": "knn_vector",
        "dimension": 384,
        "method": {
            "name": "hnsw",
            "engine": "lucene",
            "space_type": "cosinesimil",
            "parameters": {"m": 16, "ef_construction": 100},
        },
    }
    assert os_t.body["template"]["settings"]["index"]["knn"] is True
    assert vector_field_problem("opensearch", os_props["embedding"]) is None
    assert vector_dims(os_props["embedding"]) == vector_dims(es_props["embedding"]) == 384


def test_every_other_template_is_the_same_on_both_engines():
    es_ts = {t.name: t.body for t in load_templates("full")}
    os_ts = {t.name: t.body for t in load_templates("full", flavor="opensearch")}
    assert set(es_ts) == set(os_ts)
    assert [n for n in es_ts if es_ts[n] != os_ts[n]] == ["hybrid-es-chunks", STREAM_TEMPLATE]
    # OpenSearch has no data stream lifecycle: its traces stream template drops only that.
    es_stream, os_stream = dict(es_ts[STREAM_TEMPLATE]), dict(os_ts[STREAM_TEMPLATE])
    assert es_stream.pop("template") == {"lifecycle": {"data_retention": "30d"}}
    assert "template" not in os_stream
    assert {k: v for k, v in es_stream.items() if k != "_meta"} == {
        k: v for k, v in os_stream.items() if k != "_meta"
    }


def _trace_templates(kind: str, days: int = 30) -> dict[str, dict]:
    from hybrid_es.cluster.trace_storage import trace_templates

    return {t.name: t.body for t in trace_templates(load_templates(), kind, days)}


def test_the_traces_data_stream_template_is_installed_only_where_there_are_data_streams():
    assert STREAM_TEMPLATE not in _trace_templates("dated-indices")
    assert STREAM_TEMPLATE in _trace_templates("data-stream")
    lifecycle = _trace_templates("data-stream-lifecycle", 7)[STREAM_TEMPLATE]["template"]
    assert lifecycle == {"lifecycle": {"data_retention": "7d"}}
    # The file is not changed by choosing a retention.
    assert _trace_templates("data-stream-lifecycle")[STREAM_TEMPLATE]["template"] == {
        "lifecycle": {"data_retention": "30d"}
    }


def test_the_traces_templates_cover_the_layouts_names_and_not_the_earlier_index():
    import fnmatch

    from hybrid_es.tenancy import IndexLayout

    ts = _trace_templates("data-stream")
    dated, stream = ts["hybrid-es-traces"], ts[STREAM_TEMPLATE]
    layout = IndexLayout()

    def winner(name: str) -> str | None:
        hits = [
            (body["priority"], n)
            for n, body in (("dated", dated), ("stream", stream))
            if any(fnmatch.fnmatchcase(name, p) for p in body["index_patterns"])
        ]
        return max(hits)[1] if hits else None

    assert winner(layout.traces_stream()) == "stream" and stream["data_stream"] == {}
    assert winner(layout.traces_on(date(2026, 4, 1))) == "dated" and "data_stream" not in dated
    assert winner("hybrid-es-traces-test-0123456789-stream") == "stream"
    assert winner("hybrid-es-traces") is None  # the earlier layout's index keeps its mapping
    assert dated["priority"] != stream["priority"]  # overlapping patterns need distinct ones


@pytest.mark.parametrize(
    ("field", "problem"),
    [
        ({"type": "knn_vector", "dimension": 4}, "faiss (the default)"),
        ({"type": "knn_vector", "dimension": 4, "method": {"engine": "faiss"}}, "'faiss'"),
        ({"type": "knn_vector", "dimension": 4, "method": {"engine": "nmslib"}}, "'nmslib'"),
        ({"type": "dense_vector", "dims": 4}, "not knn_vector"),
    ],
)
def test_a_vector_field_other_than_lucene_knn_is_refused_on_opensearch(field, problem):
    assert problem in (vector_field_problem("opensearch", field) or "")
    assert vector_field_problem("elasticsearch", field) is None


def test_the_opensearch_role_puts_the_tenant_into_the_dls_query():
    name, role = render_role("demo-A", flavor="opensearch")
    assert name == "hybrid-es-tenant-reader-demo-A"
    chunks, state = role["index_permissions"]
    for perm in (chunks, state):
        assert json.loads(perm["dls"]) == {"term": {"tenant": "demo-A"}}
    assert chunks["allowed_actions"] == ["read"]
    assert chunks["index_patterns"] == ["hybrid-es-chunks-t-demo-_a"]
    assert state["allowed_actions"] == ["indices:data/read/get"]  # its own state by id, no search
    assert state["index_patterns"] == ["hybrid-es-corpus-state"]
    assert TENANT_PLACEHOLDER not in json.dumps(role)
    assert backend_role("demo-A") == "hybrid-es-tenant-demo-A"


@pytest.mark.parametrize("flavor", ["elasticsearch", "opensearch"])
@pytest.mark.parametrize("tenant", ["demo-A", "demo-a", "t", "a.b_c-9", "demo-A1", "x" * 64])
def test_a_reader_role_names_exactly_its_own_indices_and_no_other_tenants(tenant, flavor):
    """Issue 23: the reader role named ``hybrid-es-chunks*``, every tenant's index. Now every
    name is exact (no wildcard, regex or date math) and is the tenant's own, so no other
    tenant's index (``demo-a`` beside ``demo-A``, ``demo-A1`` beside ``demo-A``) matches."""
    layout = IndexLayout(chunks="hybrid-es-chunks", corpus_state="hybrid-es-corpus-state")
    _, role = render_role(tenant, layout, flavor=flavor)  # type: ignore[arg-type]
    names = (
        [n for i in role["indices"] for n in i["names"]]
        if flavor == "elasticsearch"
        else [n for p in role["index_permissions"] for n in p["index_patterns"]]
    )
    assert names == [layout.chunks_for(tenant), layout.corpus_state]
    for name in names:
        assert not set(name) & set("*?/<>{}[],") and not name.startswith("_")


def test_no_reader_role_in_the_shared_layout():
    with pytest.raises(ConfigurationError, match="shared tenancy") as info:
        render_role("demo-A", IndexLayout(mode="shared"))
    assert "index-per-tenant" in (info.value.hint or "")


def test_the_two_role_templates_grant_the_same_indices_with_the_same_filter():
    _, es_role = render_role("t1")
    _, os_role = render_role("t1", flavor="opensearch")
    es_grants = {
        (n, json.dumps(i["query"], sort_keys=True)) for i in es_role["indices"] for n in i["names"]
    }
    os_grants = {
        (n, json.dumps(json.loads(p["dls"]), sort_keys=True))
        for p in os_role["index_permissions"]
        for n in p["index_patterns"]
    }
    assert es_grants == os_grants


def test_pipeline_definitions_come_from_the_installed_files():
    (rrf_file,) = [p for p in load_pipelines() if p.name == PIPELINES["rrf"]]
    (lin_file,) = [p for p in load_pipelines() if p.name == PIPELINES["linear"]]
    # The searcher's inline pipeline, at the files' parameters, is the file's processors.
    assert pipeline_definition("rrf", rank_constant=60, alpha=0.6) == {
        "phase_results_processors": rrf_file.body["phase_results_processors"]
    }
    assert pipeline_definition("linear", rank_constant=60, alpha=0.6) == {
        "phase_results_processors": lin_file.body["phase_results_processors"]
    }
    rrf = pipeline_definition("rrf", rank_constant=7, alpha=0.6)["phase_results_processors"]
    assert rrf[0]["score-ranker-processor"]["combination"] == {
        "technique": "rrf",
        "parameters": {"rank_constant": 7},
    }
    lin = pipeline_definition("linear", rank_constant=60, alpha=0.3)["phase_results_processors"]
    spec = lin[0]["normalization-processor"]
    assert spec["normalization"] == {"technique": "min_max"}
    assert spec["combination"]["parameters"]["weights"] == [0.7, 0.3]
    with pytest.raises(ConfigurationError, match="unknown fusion method"):
        pipeline_definition("borda", rank_constant=60, alpha=0.5)


def test_the_rank_constant_moves_into_the_combination_for_opensearch_3():
    v2 = pipeline_definition("rrf", rank_constant=7, alpha=0.5)
    v3 = pipeline_definition("rrf", rank_constant=7, alpha=0.5, rank_constant_at="combination")
    assert v3["phase_results_processors"][0]["score-ranker-processor"]["combination"] == {
        "technique": "rrf",
        "rank_constant": 7,
    }
    assert adapt_pipeline(v2, "combination") == v3
    assert adapt_pipeline(v2, "parameters") == v2
    # linear fusion's weights stay in the parameters on every version
    lin = pipeline_definition("linear", rank_constant=7, alpha=0.5, rank_constant_at="combination")
    assert adapt_pipeline(lin, "parameters") == lin


@pytest.mark.parametrize("flavor", ["elasticsearch", "opensearch"])
def test_deployment_roles_follow_the_configured_index_names(flavor):
    layout = IndexLayout(
        chunks="acme-chunks", packets="acme-packets", traces="acme-traces", corpus_state="acme-cs"
    )
    for name in DEPLOYMENT_ROLES:
        body = render_deployment_role(name, layout, flavor=flavor)  # type: ignore[arg-type]
        entries = body["index_permissions" if flavor == "opensearch" else "indices"]
        patterns = [
            p for e in entries for p in e["index_patterns" if flavor == "opensearch" else "names"]
        ]
        assert patterns and all(p.startswith("acme-") for p in patterns), patterns
        assert render_deployment_role(name, flavor=flavor) != body  # the default names differ
    with pytest.raises(ConfigurationError, match="not a hybrid-es role"):
        render_deployment_role("superuser")
