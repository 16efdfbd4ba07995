"""The source cluster's connection settings (``cluster.source_connection``), without a cluster:
each side's credentials stay on its side, and a source may never name the deployment's own
indices."""

from __future__ import annotations

import pytest

from hybrid_es.cluster import guard
from hybrid_es.cluster.client import es_client_kwargs, opensearch_client_kwargs
from hybrid_es.cluster.source_connection import (
    SourceSettings,
    read_source_settings,
    refuse_own_index,
)
from hybrid_es.errors import ConfigurationError, PolicyViolationError
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout

TARGET_SECRET = "target-pass-1"
SOURCE_SECRET = "source-pass-2"


@pytest.fixture
def both(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deployment and a source, each with its own user and password."""
    for name in list(__import__("os").environ):
        if name.startswith("HYBRID_ES_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HYBRID_ES_URL", "https://target:9200")
    monkeypatch.setenv("HYBRID_ES_USERNAME", "ingest")
    monkeypatch.setenv("HYBRID_ES_PASSWORD", TARGET_SECRET)
    monkeypatch.setenv("HYBRID_ES_API_KEY", "target-key")
    monkeypatch.setenv("HYBRID_ES_SOURCE_URL", "https://source:9200")
    monkeypatch.setenv("HYBRID_ES_SOURCE_USERNAME", "reader")
    monkeypatch.setenv("HYBRID_ES_SOURCE_PASSWORD", SOURCE_SECRET)


def _secrets(kwargs: dict[str, object]) -> str:
    return repr(kwargs)


def test_each_side_gets_its_own_credentials_only(both: None):
    target = es_client_kwargs(Settings())
    source_settings = SourceSettings().connection()
    assert source_settings is not None
    source = es_client_kwargs(source_settings)
    assert source["hosts"] == "https://source:9200" and target["hosts"] == "https://target:9200"
    assert source["basic_auth"] == ("reader", SOURCE_SECRET) and "api_key" not in source
    assert target["api_key"] == "target-key"
    assert SOURCE_SECRET not in _secrets(target) and "reader" not in _secrets(target)
    assert TARGET_SECRET not in _secrets(source) and "target-key" not in _secrets(source)
    os_source = opensearch_client_kwargs(source_settings)
    assert os_source["http_auth"] == ("reader", SOURCE_SECRET)
    assert "target-key" not in _secrets(os_source)


def test_a_source_url_without_credentials_gets_none_of_the_deployments(
    both: None, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("HYBRID_ES_SOURCE_USERNAME")
    monkeypatch.delenv("HYBRID_ES_SOURCE_PASSWORD")
    source = SourceSettings().connection()
    assert source is not None
    kwargs = es_client_kwargs(source)
    assert not {"basic_auth", "api_key", "bearer_auth"} & set(kwargs)


def test_a_source_credential_without_a_source_url_is_refused(
    both: None, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("HYBRID_ES_SOURCE_URL")
    with pytest.raises(ConfigurationError) as refused:
        SourceSettings().connection()
    text = str(refused.value)
    assert "HYBRID_ES_SOURCE_USERNAME and HYBRID_ES_SOURCE_PASSWORD are set" in text
    assert SOURCE_SECRET not in text and "HYBRID_ES_SOURCE_URL" in text
    monkeypatch.delenv("HYBRID_ES_SOURCE_USERNAME")
    monkeypatch.delenv("HYBRID_ES_SOURCE_PASSWORD")
    assert SourceSettings().own_cluster and SourceSettings().connection() is None


def test_a_bad_source_value_names_its_variable_never_the_value(both: None):
    with pytest.raises(ConfigurationError, match="HYBRID_ES_SOURCE_REQUEST_TIMEOUT"):
        read_source_settings(request_timeout=-1)
    with pytest.raises(ConfigurationError, match="HYBRID_ES_SOURCE_CA_CERTS") as missing:
        SourceSettings(ca_certs="/no/such/ca.pem").connection()  # type: ignore[arg-type]
    assert SOURCE_SECRET not in str(missing.value)
    assert "source" in repr(SourceSettings()) and SOURCE_SECRET not in repr(SourceSettings())
    in_url = SourceSettings(url=f"https://reader:{SOURCE_SECRET}@source:9200")
    assert SOURCE_SECRET not in repr(in_url) and "https://source:9200" in repr(in_url)
    assert in_url.credentials_named() == ["HYBRID_ES_SOURCE_USERNAME", "HYBRID_ES_SOURCE_PASSWORD",
                                          "HYBRID_ES_SOURCE_URL (user:password)"]  # fmt: skip


@pytest.mark.parametrize(
    "name",
    [
        "hybrid-es-chunks",
        "hybrid-es-chunks-t-acme",
        "hybrid-es-traces-stream",
        "hybrid-es-packets",
        "hybrid-es-corpus-state",
        "*",
        "_all",
        "hybrid-es-*",
        "legacy,hybrid-es-chunks-t-x",
        " ",
    ],
)
def test_a_source_may_never_name_the_deployments_own_indices(name):
    with pytest.raises(ConfigurationError):
        refuse_own_index(name, IndexLayout())


def test_a_source_of_its_own_is_fine():
    for name in ("legacy-docs", "tickets-*", "contracts,tickets"):
        refuse_own_index(name, IndexLayout())
    refuse_own_index("hybrid-es-chunks", IndexLayout(chunks="acme-chunks"))


def test_the_guard_lets_a_point_in_time_be_searched_and_closed_not_opened_on_chunks():
    bases = ("hybrid-es-chunks",)
    guard.check("/_search", bases, {"pit": {"id": "x"}, "query": {"match_all": {}}})
    guard.check("/_pit", bases, {"id": "x"})
    guard.check("/_search/point_in_time", bases, {"pit_id": ["x"]})
    guard.check("/legacy/_pit", bases)
    for path in ("/hybrid-es-chunks-t-a/_pit", "/hybrid-es-chunks-t-a/_search/point_in_time"):
        with pytest.raises(PolicyViolationError):
            guard.check(path, bases)
    with pytest.raises(PolicyViolationError):  # a search that names no pit reads _all
        guard.check("/_search", bases, {"query": {"match_all": {}}})
