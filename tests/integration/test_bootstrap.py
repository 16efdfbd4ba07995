"""Bootstrap, the capability report and the chunk template, against the real cluster."""

from __future__ import annotations

import subprocess
import sys

import pytest
from elasticsearch import ApiError

from hybrid_es.cluster.bootstrap import bootstrap, installed_template
from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.client import make_client
from hybrid_es.cluster.templates import load_templates
from hybrid_es.errors import AuthenticationError, EngineUnavailableError, TemplateConflictError
from hybrid_es.settings import Settings

pytestmark = pytest.mark.integration
INTEG_ZIP_MODULES = ("apm", "transport-netty4", "x-pack-core", "x-pack-security")


def test_bootstrap_installs_everything_and_a_second_run_changes_nothing(
    es, caps, settings, bootstrapped
):
    bootstrap(es, caps, settings)
    second = bootstrap(es, caps, settings)
    assert second.applied
    assert not second.changed, [(a.name, a.status) for a in second.actions]
    for t in load_templates(caps.analysis_profile, settings.templates_dir):
        assert installed_template(es, t) is not None, t.name
    check = bootstrap(es, caps, settings, check=True)
    assert {a.status for a in check.actions} == {"unchanged"}


def test_a_conflicting_template_is_refused_and_nothing_is_overwritten(
    es, caps, settings, bootstrapped
):
    bootstrap(es, caps, settings)
    tampered = {
        "template": {"settings": {"index": {"refresh_interval": "30s"}}},
        "_meta": {"managed_by": "someone-else"},
    }
    es.cluster.put_component_template(name="hybrid-es-settings", body=tampered)
    try:
        with pytest.raises(TemplateConflictError) as err:
            bootstrap(es, caps, settings)
        assert "hybrid-es-settings" in err.value.diffs
        assert "30s" in err.value.diffs["hybrid-es-settings"]
        current = es.cluster.get_component_template(name="hybrid-es-settings")
        body = current["component_templates"][0]["component_template"]
        assert body["_meta"] == {"managed_by": "someone-else"}  # untouched
        check = bootstrap(es, caps, settings, check=True)
        assert any(a.status == "conflict" for a in check.actions)
    finally:
        report = bootstrap(es, caps, settings, force=True)
    assert any(a.name == "hybrid-es-settings" and a.status == "update" for a in report.actions)
    assert not bootstrap(es, caps, settings).changed


def test_capability_report_matches_independent_checks(es, caps):
    lic = es.license.get()["license"]["type"]
    assert caps.license_type == lic
    try:
        es.search(
            index="hybrid-es-nonexistent*",
            allow_no_indices=True,
            retriever={
                "rrf": {
                    "retrievers": [
                        {"standard": {"query": {"match_all": {}}}},
                        {"standard": {"query": {"match_all": {}}}},
                    ]
                }
            },
        )
        rrf_ok = True
    except ApiError:
        rrf_ok = False
    assert caps.native_rrf is rrf_ok
    for analyzer in ("english", "cjk"):
        try:
            es.indices.analyze(analyzer=analyzer, text="x")
            works = True
        except ApiError:
            works = False
        assert (analyzer in caps.analyzers) is works
    assert caps.security_enabled
    assert caps.knn and "int8_hnsw" in caps.index_options


def test_capability_report_for_the_integ_test_zip(caps):
    if caps.modules != INTEG_ZIP_MODULES:
        pytest.skip(f"not the integ-test zip (modules {caps.modules}); the exact report differs")
    assert not caps.native_rrf
    assert not caps.linear_retriever
    assert caps.analyzers == ("standard", "simple", "whitespace")
    assert caps.analysis_profile == "standard"
    assert caps.security_enabled
    assert caps.license_type == "trial"
    # The security index needs analysis-common, so native roles and API keys cannot be stored.
    assert not caps.native_security_store


def test_a_chunk_is_searchable_by_bm25_and_by_knn_with_a_filter(es, fresh_indices):
    index = fresh_indices["chunks"]
    vec = [0.0] * 384
    vec[0] = 1.0
    other = [0.0] * 384
    other[1] = 1.0
    es.index(
        index=index,
        id="a",
        document={
            "chunk_id": "a",
            "tenant": "t1",
            "search_payload": "roll-in shower rate",
            "embedding": vec,
            "ids": ["KYO-H12"],
        },
    )
    es.index(
        index=index,
        id="b",
        document={
            "chunk_id": "b",
            "tenant": "t2",
            "search_payload": "roll-in shower rate",
            "embedding": vec,
        },
    )
    es.index(
        index=index,
        id="c",
        document={
            "chunk_id": "c",
            "tenant": "t1",
            "search_payload": "brochure",
            "embedding": other,
        },
    )
    es.indices.refresh(index=index)
    bm25 = es.search(
        index=index,
        query={
            "bool": {
                "must": {"match": {"search_payload": "shower"}},
                "filter": {"term": {"tenant": "t1"}},
            }
        },
    )
    assert [h["_id"] for h in bm25["hits"]["hits"]] == ["a"]
    exact = es.search(index=index, query={"term": {"ids": "kyo-h12"}})  # normalizer lowercases
    assert [h["_id"] for h in exact["hits"]["hits"]] == ["a"]
    knn = es.search(
        index=index,
        knn={
            "field": "embedding",
            "query_vector": vec,
            "k": 3,
            "num_candidates": 10,
            "filter": {"term": {"tenant": "t1"}},
        },
    )
    assert [h["_id"] for h in knn["hits"]["hits"]] == ["a", "c"]


def test_unreachable_cluster_is_one_clear_error():
    s = Settings(url="http://127.0.0.1:9", max_retries=0, request_timeout=2)
    with pytest.raises(EngineUnavailableError) as err:
        probe(make_client(s), url=s.redacted_url())
    assert "http://127.0.0.1:9" in str(err.value)
    assert "scripts/es.sh start" in str(err.value)


def test_wrong_credentials_are_a_clear_error(settings):
    s = settings.model_copy(update={"password": None})
    bad = make_client(s, basic_auth=("elastic", "not-the-password"))
    with pytest.raises(AuthenticationError) as err:
        probe(bad, url=s.redacted_url())
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
    assert r.returncode == 2
    assert "error:" in r.stderr and "credentials" in r.stderr
    assert "Traceback" not in r.stderr and "wrong-password-123" not in r.stderr + r.stdout
