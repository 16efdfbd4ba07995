"""The Kibana import's requests (issue 14, item 1): the cluster's TLS settings and credentials, a
space, the user-agent; and its failures as one error each. Kibana cannot run on the build
machines (test_kibana.py checks the saved objects themselves), so a local HTTPS stand-in for its
import API receives them (tests/fixtures/https_stand_in.py)."""

from __future__ import annotations

import base64
import hashlib
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from hybrid_es.cluster.kibana import import_path, import_saved_objects, kibana_headers
from hybrid_es.errors import AuthenticationError, ConfigurationError, EngineUnavailableError
from hybrid_es.settings import Settings
from tests.fixtures.https_stand_in import HttpsStandIn

FILES = sorted((Path(__file__).resolve().parents[2] / "es_templates" / "kibana").glob("*.ndjson"))


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("HYBRID_ES_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def ca(tmp_path: Path) -> Iterator[tuple[trustme.CA, Path]]:
    authority = trustme.CA()
    path = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    yield authority, path


def test_the_import_path_per_space():
    assert import_path() == "/api/saved_objects/_import"
    assert import_path("default") == "/api/saved_objects/_import"
    assert import_path("ops-team_2") == "/s/ops-team_2/api/saved_objects/_import"
    for bad in ("Ops Team", "../x", ""):
        with pytest.raises(ConfigurationError):
            import_path(bad)


def test_credentials_in_order_url_api_key_bearer_user():
    both = Settings(api_key="K", bearer_auth="T", username="u", password="p")
    assert kibana_headers(both, None)["authorization"] == "ApiKey K"
    url_auth = kibana_headers(both, ("kb", "pw"))["authorization"]
    assert url_auth == "Basic " + base64.b64encode(b"kb:pw").decode()
    assert kibana_headers(Settings(bearer_auth="T"), None)["authorization"] == "Bearer T"
    assert "authorization" not in kibana_headers(Settings(), None)
    assert kibana_headers(Settings(), None)["kbn-xsrf"] == "hybrid-es"


def test_imports_into_a_space_over_tls_with_the_api_key(ca):
    authority, ca_file = ca
    with HttpsStandIn(authority.issue_cert("127.0.0.1")) as kibana:
        n = import_saved_objects(
            kibana.url, Settings(ca_certs=ca_file, api_key="S3cret-key"), space="ops"
        )
    assert n == len(FILES) and len(kibana.requests) == len(FILES)
    for request in kibana.requests:
        assert request["path"] == "/s/ops/api/saved_objects/_import?overwrite=true"
        assert request["headers"]["authorization"] == "ApiKey S3cret-key"
        assert request["headers"]["kbn-xsrf"] == "hybrid-es"
        assert request["headers"]["user-agent"].startswith("hybrid-es/")
        assert request["headers"]["content-type"].startswith("multipart/form-data; boundary=")
        assert b'"type":"index-pattern"' in request["body"] or b"visualization" in request["body"]


def test_imports_with_the_fingerprint_alone(ca):
    authority, _ = ca
    with HttpsStandIn(authority.issue_cert("127.0.0.1")) as kibana:
        served = ssl.get_server_certificate(("127.0.0.1", int(kibana.url.rsplit(":", 1)[1])))
        pin = hashlib.sha256(ssl.PEM_cert_to_DER_cert(served)).hexdigest()
        assert import_saved_objects(kibana.url, Settings(ssl_assert_fingerprint=pin)) == len(FILES)
        with pytest.raises(ConfigurationError) as info:
            import_saved_objects(kibana.url, Settings(ssl_assert_fingerprint="ab" * 32))
    assert "HYBRID_ES_SSL_ASSERT_FINGERPRINT" in info.value.message


def test_a_wrong_ca_is_one_error_naming_the_setting(ca, tmp_path):
    authority, _ = ca
    other = tmp_path / "other.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    served = authority.issue_cert("127.0.0.1")
    with HttpsStandIn(served) as kibana, pytest.raises(ConfigurationError) as info:
        import_saved_objects(kibana.url, Settings(ca_certs=other, max_retries=0))
    assert "the TLS certificate of Kibana" in info.value.message
    assert "HYBRID_ES_CA_CERTS" in str(info.value)


@pytest.mark.parametrize(
    ("status", "error", "says"),
    [
        (401, AuthenticationError, "rejected the credentials"),
        (403, AuthenticationError, "may not manage saved objects in space 'ops'"),
        (404, ConfigurationError, "has no space 'ops'"),
    ],
)
def test_kibana_refusals_are_one_error_each(ca, status, error, says):
    authority, ca_file = ca
    kibana = HttpsStandIn(authority.issue_cert("127.0.0.1"), answer=(status, {"message": "no"}))
    with kibana, pytest.raises(error) as info:
        import_saved_objects(kibana.url, Settings(ca_certs=ca_file), space="ops")
    assert says in info.value.message


def test_an_unreachable_kibana_is_named():
    with pytest.raises(EngineUnavailableError) as info:
        import_saved_objects("http://127.0.0.1:1", Settings(max_retries=0))
    assert "Kibana at http://127.0.0.1:1" in info.value.message
