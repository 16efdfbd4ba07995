"""Bootstrap, the capability report and the chunk template, against the real cluster."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from pydantic import SecretStr

from hybrid_es.cluster.bootstrap import bootstrap, installed_template, templates_for
from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.engine import connect
from hybrid_es.errors import (
    AuthenticationError,
    EngineError,
    EngineUnavailableError,
    TemplateConflictError,
)
from tests.conftest import unguarded

pytestmark = pytest.mark.integration
INTEG_ZIP_MODULES = ("apm", "transport-netty4", "x-pack-core", "x-pack-security")
OPENSEARCH_ZIP_PLUGINS = ("opensearch-knn", "opensearch-neural-search", "opensearch-security")


def test_bootstrap_installs_everything_and_a_second_run_changes_nothing(
    es, caps, settings, bootstrapped
):
    bootstrap(es, caps, settings)
    second = bootstrap(es, caps, settings)
    assert second.applied
    assert not second.changed, [(a.name, a.status) for a in second.actions]
    templates = templates_for(caps, settings)
    assert {"hybrid-es-settings", "hybrid-es-chunks"} <= {t.name for t in templates}
    for t in templates:
        assert installed_template(es, t) is not None, t.name
    check = bootstrap(es, caps, settings, check=True)
    # `legacy`: a traces index of the earlier layout that a long-lived test node may still hold.
    assert {a.status for a in check.actions} - {"legacy"} == {"unchanged"}


def test_a_conflicting_template_is_refused_and_nothing_is_overwritten(
    es, caps, settings, bootstrapped
):
    bootstrap(es, caps, settings)
    tampered = {
        "template": {"settings": {"index": {"refresh_interval": "30s"}}},
        "_meta": {"managed_by": "someone-else"},
    }
    es.put_component_template("hybrid-es-settings", tampered)
    try:
        with pytest.raises(TemplateConflictError) as err:
            bootstrap(es, caps, settings)
        assert "hybrid-es-settings" in err.value.diffs
        assert "30s" in err.value.diffs["hybrid-es-settings"]
        current = es.get_component_template("hybrid-es-settings")
        assert current is not None
        assert current["_meta"] == {"managed_by": "someone-else"}  # untouched
        check = bootstrap(es, caps, settings, check=True)
        assert any(a.status == "conflict" for a in check.actions)
    finally:
        report = bootstrap(es, caps, settings, force=True)
    assert any(a.name == "hybrid-es-settings" and a.status == "update" for a in report.actions)
    assert not bootstrap(es, caps, settings).changed


PROBE_PATTERN = "hybrid-es-nonexistent*"


def _accepted(call: Callable[[], Any]) -> bool:
    """Whether the cluster accepts a request (an error of the package's: it refused it)."""
    try:
        call()
    except EngineError:
        return False
    return True


def _index_accepted(es, body: dict[str, Any]) -> bool:  # type: ignore[no-untyped-def]
    name = f"hybrid-es-test-probe-{uuid.uuid4().hex[:10]}"
    try:
        return _accepted(lambda: es.create_index(name, body))
    finally:
        es.delete_index(name)


def test_capability_report_matches_independent_checks(es, caps):
    # Each answer of the probe against a request of the test's own, in the engine's own terms.
    assert caps.flavor == es.flavor
    nodes = es.request("GET", "/_cat/nodes", params={"h": "version", "format": "json"})
    assert caps.server_version == nodes[0]["version"]
    for analyzer in ("english", "cjk"):
        body = {"analyzer": analyzer, "text": "x"}
        works = _accepted(lambda body=body: es.request("POST", "/_analyze", body=body))
        assert (analyzer in caps.analyzers) is works
    if es.flavor == "elasticsearch":
        _elasticsearch_checks(es, caps)
    else:
        _opensearch_checks(es, caps)


def _elasticsearch_checks(es, caps) -> None:  # type: ignore[no-untyped-def]
    assert caps.license_type == es.request("GET", "/_license")["license"]["type"]
    leaf = {"standard": {"query": {"match_all": {}}}}
    rrf = {"retriever": {"rrf": {"retrievers": [leaf, leaf]}}}
    rrf_ok = _accepted(lambda: es.search(PROBE_PATTERN, rrf, allow_no_indices=True))
    assert caps.native_rrf is rrf_ok
    assert caps.security_enabled  # scripts/es.sh runs the node with security on
    assert _accepted(lambda: es.request("GET", "/_security/_authenticate"))
    int8 = {"type": "dense_vector", "dims": 8, "index_options": {"type": "int8_hnsw"}}
    assert _index_accepted(es, {"mappings": {"properties": {"v": int8}}})
    assert caps.knn and "int8_hnsw" in caps.index_options


def _opensearch_checks(es, caps) -> None:  # type: ignore[no-untyped-def]
    assert caps.license_type is None  # no licence API: `_license` reads as an index name
    assert not _accepted(lambda: es.request("GET", "/_license"))
    plugins = es.request("GET", "/_cat/plugins", params={"h": "component", "format": "json"})
    assert set(caps.plugins) == {p["component"] for p in plugins}
    # Native fusion is a `hybrid` query through a search pipeline (inline here).
    hybrid = {"hybrid": {"queries": [{"match_all": {}}, {"match_all": {}}]}}
    rrf = {"score-ranker-processor": {"combination": {"technique": "rrf"}}}
    linear = {
        "normalization-processor": {
            "normalization": {"technique": "min_max"},
            "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.5, 0.5]}},
        }
    }
    for processor, reported in ((rrf, caps.native_rrf), (linear, caps.linear_retriever)):
        body = {"query": hybrid, "search_pipeline": {"phase_results_processors": [processor]}}
        ran = _accepted(lambda body=body: es.search(PROBE_PATTERN, body, allow_no_indices=True))
        assert reported is ran, processor
    assert caps.security_enabled  # scripts/opensearch.sh runs the security plugin
    assert _accepted(lambda: es.request("GET", "/_plugins/_security/authinfo"))
    # Roles with document-level security: store one through the security plugin's API.
    role = f"hybrid-es-test-role-{uuid.uuid4().hex[:8]}"
    path = f"/_plugins/_security/api/roles/{role}"
    permission = {"index_patterns": ["none"], "dls": '{"term": {"tenant": "x"}}'}
    body = {"index_permissions": [{**permission, "allowed_actions": ["read"]}]}
    stored = _accepted(lambda: es.request("PUT", path, body=body))
    if stored:
        es.request("DELETE", path)
    assert caps.native_security_store is stored
    method = {"name": "hnsw", "engine": "lucene", "space_type": "l2"}
    lucene = {"type": "knn_vector", "dimension": 8, "method": method}
    knn_index = {"settings": {"index": {"knn": True}}, "mappings": {"properties": {"v": lucene}}}
    assert caps.knn is _index_accepted(es, knn_index)
    assert caps.index_options == (("lucene",) if caps.knn else ())


@pytest.mark.engine(
    "elasticsearch",
    reason="the integ-test zip is an Elasticsearch distribution (scripts/es.sh); the OpenSearch "
    "zip's exact report is test_capability_report_for_the_opensearch_zip",
)
def test_capability_report_for_the_integ_test_zip(caps):
    if caps.modules != INTEG_ZIP_MODULES:
        pytest.skip(f"not the integ-test zip (modules {caps.modules}); the exact report differs")
    assert caps.flavor == "elasticsearch"
    assert not caps.native_rrf
    assert not caps.linear_retriever
    assert caps.analyzers == ("standard", "simple", "whitespace")
    assert caps.analysis_profile == "standard"
    assert caps.security_enabled
    assert caps.license_type == "trial"
    # The security index needs analysis-common, so native roles and API keys cannot be stored.
    assert not caps.native_security_store


@pytest.mark.engine(
    "opensearch",
    reason="the OpenSearch 2.19 zip that scripts/opensearch.sh runs; the Elasticsearch node's "
    "exact report is test_capability_report_for_the_integ_test_zip",
)
def test_capability_report_for_the_opensearch_zip(caps):
    if not caps.server_version.startswith("2.19.") or set(OPENSEARCH_ZIP_PLUGINS) - set(
        caps.plugins
    ):
        pytest.skip(f"not the 2.19 zip (plugins {caps.plugins}); the exact report differs")
    assert caps.flavor == "opensearch"
    assert caps.native_rrf and caps.linear_retriever
    # The default fusion (min-max, weight per query) runs client-side; a fixed weight natively.
    assert caps.fusion_path == "client-linear (msearch; dense weight per query: spread)"
    fixed = caps.model_copy(update={"fusion_alpha": 0.4})
    assert fixed.fusion_path == "native-linear (hybrid query)"
    assert caps.path_for("rrf") == "native-rrf (hybrid query)"
    # analysis-common ships with OpenSearch: english and cjk, so the "full" profile.
    assert caps.analyzers == ("standard", "simple", "whitespace", "english", "cjk")
    assert caps.analysis_profile == "full"
    assert caps.security_enabled and caps.license_type is None
    assert caps.knn and caps.index_options == ("lucene",)
    # The tests connect as the security plugin's admin, which may manage roles.
    assert caps.native_security_store


def test_a_chunk_is_searchable_by_bm25_and_by_knn_with_a_filter(es, fresh_indices):
    index = fresh_indices["chunks"]
    vec = [0.0] * 384
    vec[0] = 1.0
    other = [0.0] * 384
    other[1] = 1.0
    es.index(
        index,
        {
            "chunk_id": "a",
            "tenant": "t1",
            "search_payload": "roll-in shower rate",
            "embedding": vec,
            "ids": ["KYO-H12"],
        },
        id="a",
    )
    es.index(
        index,
        {
            "chunk_id": "b",
            "tenant": "t2",
            "search_payload": "roll-in shower rate",
            "embedding": vec,
        },
        id="b",
    )
    es.index(
        index,
        {
            "chunk_id": "c",
            "tenant": "t1",
            "search_payload": "brochure",
            "embedding": other,
        },
        id="c",
    )
    es.refresh(index)
    vector_type = "knn_vector" if es.flavor == "opensearch" else "dense_vector"
    assert es.get_mapping(index)[index]["properties"]["embedding"]["type"] == vector_type
    bm25 = unguarded(es).search(
        index,
        {
            "query": {
                "bool": {
                    "must": {"match": {"search_payload": "shower"}},
                    "filter": {"term": {"tenant": "t1"}},
                }
            }
        },
    )
    assert [h["_id"] for h in bm25["hits"]["hits"]] == ["a"]
    exact = unguarded(es).search(
        index, {"query": {"term": {"ids": "kyo-h12"}}}
    )  # normalizer lowercases
    assert [h["_id"] for h in exact["hits"]["hits"]] == ["a"]
    tenant_t1 = {"term": {"tenant": "t1"}}
    if es.flavor == "opensearch":  # a knn query; the lucene engine applies the filter in-graph
        knn_query = {"embedding": {"vector": vec, "k": 3, "filter": tenant_t1}}
        knn_body: dict[str, Any] = {"size": 3, "query": {"knn": knn_query}}
    else:
        knn_body = {
            "knn": {
                "field": "embedding",
                "query_vector": vec,
                "k": 3,
                "num_candidates": 10,
                "filter": tenant_t1,
            }
        }
    knn = unguarded(es).search(index, knn_body)
    assert [h["_id"] for h in knn["hits"]["hits"]] == ["a", "c"]


def test_unreachable_cluster_is_one_clear_error(settings):
    # The environment's settings (scheme, CA, credentials) with a port nothing listens on.
    url = f"{urlsplit(settings.url).scheme}://127.0.0.1:9"
    s = settings.model_copy(update={"url": url, "max_retries": 0, "request_timeout": 2})
    with pytest.raises(EngineUnavailableError) as err:
        probe(connect(s))
    assert url in str(err.value)
    assert "scripts/es.sh start" in str(err.value)


def test_wrong_credentials_are_a_clear_error(settings):
    s = settings.model_copy(update={"password": SecretStr("not-the-password")})
    with pytest.raises(AuthenticationError) as err:
        probe(connect(s))
    assert "not-the-password" not in str(err.value)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "hybrid_es.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def test_cli_check_passes_after_bootstrap(bootstrapped):
    r = _cli("bootstrap", "--check", "--json")
    assert r.returncode == 0, r.stderr
    assert '"unchanged"' in r.stdout


def test_cli_wrong_password_prints_an_error_without_a_traceback():
    r = _cli("capabilities", env={"HYBRID_ES_PASSWORD": "wrong-password-123"})
    assert r.returncode == 77  # permission denied, as Elasticsearch's CLI exits
    assert "error:" in r.stderr and "credentials" in r.stderr
    assert "Traceback" not in r.stderr and "wrong-password-123" not in r.stderr + r.stdout
