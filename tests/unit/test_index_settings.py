"""Shards and replicas as settings: what bootstrap writes into the templates, and how the
capability report shows a cluster's nodes and each index's shards."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hybrid_es.cluster.bootstrap import templates_for
from hybrid_es.cluster.capabilities import Capabilities, IndexShards
from hybrid_es.cluster.templates import (
    CHUNKS_TEMPLATE,
    SETTINGS_TEMPLATE,
    load_templates,
    with_index_settings,
)
from hybrid_es.settings import Settings, configuration_error


def _index(body: dict) -> dict:  # type: ignore[type-arg]
    return body.get("template", {}).get("settings", {}).get("index", {})


def _caps(**update: object) -> Capabilities:
    base = Capabilities(
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
    return base.model_copy(update=update)


@pytest.fixture(autouse=True)
def _no_shard_settings(monkeypatch):  # type: ignore[no-untyped-def]
    for name in ("SHARDS", "CHUNKS_SHARDS", "REPLICAS"):
        monkeypatch.delenv(f"HYBRID_ES_{name}", raising=False)


@pytest.mark.parametrize("flavor", ["elasticsearch", "opensearch"])
def test_the_defaults_are_the_files_so_an_installed_template_stays_unchanged(flavor):
    files = load_templates(flavor=flavor)  # type: ignore[arg-type]
    defaults = Settings()
    set_ = with_index_settings(
        files,
        shards=defaults.shards,
        replicas=defaults.replicas,
        chunks_shards=defaults.chunks_shards,
    )
    assert [t.fingerprint for t in set_] == [t.fingerprint for t in files]
    shared = _index(next(t for t in files if t.name == SETTINGS_TEMPLATE).body)
    assert (shared["number_of_shards"], shared["auto_expand_replicas"]) == (1, "0-1")


def test_a_number_of_replicas_turns_auto_expansion_off_and_chunks_shards_win_for_chunks():
    files = load_templates(flavor="opensearch")
    out = {
        t.name: t.body for t in with_index_settings(files, shards=2, replicas="1", chunks_shards=6)
    }
    assert _index(out[SETTINGS_TEMPLATE]) == {
        "number_of_shards": 2,
        "number_of_replicas": 1,
        "refresh_interval": "1s",
    }
    # The chunks template overrides the component's shards and keeps its own settings (k-NN).
    assert _index(out[CHUNKS_TEMPLATE]) == {"knn": True, "number_of_shards": 6}
    # Only those two change; the loaded files are not mutated.
    unchanged = {t.name: t.body for t in files}
    assert {n for n in out if out[n] != unchanged[n]} == {SETTINGS_TEMPLATE, CHUNKS_TEMPLATE}
    assert "number_of_replicas" not in _index(unchanged[SETTINGS_TEMPLATE])


def test_a_range_of_replicas_is_auto_expansion():
    (settings,) = [
        t
        for t in with_index_settings(load_templates(), replicas="1-all")
        if t.name == SETTINGS_TEMPLATE
    ]
    assert _index(settings.body)["auto_expand_replicas"] == "1-all"
    assert "number_of_replicas" not in _index(settings.body)


def test_bootstrap_takes_them_from_the_settings(monkeypatch):
    monkeypatch.setenv("HYBRID_ES_SHARDS", "3")
    monkeypatch.setenv("HYBRID_ES_REPLICAS", "2")
    bodies = {t.name: t.body for t in templates_for(_caps(), Settings())}
    assert _index(bodies[SETTINGS_TEMPLATE])["number_of_shards"] == 3
    assert _index(bodies[SETTINGS_TEMPLATE])["number_of_replicas"] == 2
    assert "number_of_shards" not in _index(bodies[CHUNKS_TEMPLATE])


def test_replicas_in_code_and_bad_values():
    assert Settings(replicas=1).replicas == "1"  # type: ignore[arg-type]
    for field, bad in [("replicas", v) for v in ("one", "-1", "1-", "0-1-2")] + [("shards", 0)]:
        with pytest.raises(ValidationError) as err:
            Settings(**{field: bad})
        assert f"HYBRID_ES_{field.upper()}" in str(configuration_error(err.value))


def test_the_report_shows_the_nodes_and_each_indexs_shards_and_replicas():
    caps = _caps(
        nodes=3,
        data_nodes=3,
        cluster_status="green",
        indices=(
            IndexShards(index="hybrid-es-chunks", shards=2, replicas=1),
            IndexShards(index="hybrid-es-packets", shards=1, replicas=1, auto_expand="0-1"),
        ),
    )
    rows = dict(caps.rows())
    assert rows["nodes"] == "3 (3 data), cluster green"
    assert rows["hybrid-es indices"] == (
        "hybrid-es-chunks: 2 shards, 1 replicas\nhybrid-es-packets: 1 shards, 1 replicas (auto 0-1)"
    )
    unknown = dict(_caps().rows())
    assert (unknown["nodes"], unknown["hybrid-es indices"]) == ("unknown", "unknown")
    assert dict(_caps(indices=()).rows())["hybrid-es indices"] == "none yet"
