"""The connection settings and what each client is built with (issue 14, item 1): no default
credentials, Elastic Cloud ids, start-local's ``.env``, certificate fingerprints, the client
options pass-through, both clients' keyword arguments, and TLS failures and a missing credential
as one error naming the setting. Pure: no cluster (tests/integration/test_tls.py and
test_connection.py take these to real nodes)."""

from __future__ import annotations

import base64
import json
import logging
import ssl
from datetime import date
from pathlib import Path
from typing import Any

import elastic_transport
import pytest
import urllib3
from pydantic import ValidationError

from hybrid_es.client_options import ALLOWED_CLIENT_OPTIONS, INSTEAD
from hybrid_es.cluster.client import (
    es_client_kwargs,
    make_client,
    opensearch_client_kwargs,
    package_version,
    unverified_warning,
    user_agent,
)
from hybrid_es.connection_strings import decode_cloud_id, normalize_fingerprint
from hybrid_es.errors import (
    ConfigurationError,
    EngineUnavailableError,
    missing_credentials,
    tls_error,
    translate_es_error,
)
from hybrid_es.settings import Settings, configuration_error, read_start_local

CLOUD_ID = (
    "my-deployment:"
    + base64.b64encode(b"europe-west1.gcp.cloud.es.io:443$0a1b2c3d4e$5f6a7b8c9d").decode()
)
FINGERPRINT = "c3" * 32


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No HYBRID_ES_* from the shell, and a working directory without a start-local file."""
    import os

    for name in list(os.environ):
        if name.startswith("HYBRID_ES_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _ca(tmp_path: Path) -> Path:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    return ca


# -- defaults ---------------------------------------------------------------------------------


def test_there_are_no_default_credentials():
    s = Settings()
    assert (s.username, s.password, s.api_key, s.bearer_auth) == (None, None, None, None)
    assert not s.has_credentials()
    assert "basic_auth" not in es_client_kwargs(s) and "api_key" not in es_client_kwargs(s)


def test_empty_variables_mean_unset(monkeypatch):
    monkeypatch.setenv("HYBRID_ES_USERNAME", "")
    monkeypatch.setenv("HYBRID_ES_PASSWORD", " ")
    monkeypatch.setenv("HYBRID_ES_CA_CERTS", "")
    s = Settings()
    assert (s.username, s.password, s.ca_certs) == (None, None, None)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"api_key": "k"}, True),
        ({"bearer_auth": "t"}, True),
        ({"username": "u", "password": "p"}, True),
        ({"username": "u"}, False),
        ({"url": "http://u:p@h:9200"}, True),
        ({"url": "http://u@h:9200"}, False),
    ],
)
def test_has_credentials(given, expected):
    assert Settings(**given).has_credentials() is expected


def test_a_missing_credential_names_every_variable():
    text = str(missing_credentials("https://h:9200"))
    for name in (
        "HYBRID_ES_API_KEY",
        "HYBRID_ES_BEARER_AUTH",
        "HYBRID_ES_USERNAME",
        "HYBRID_ES_PASSWORD",
        "HYBRID_ES_CLOUD_ID",
        "HYBRID_ES_START_LOCAL_ENV",
    ):
        assert name in text
    assert "HYBRID_ES_PASSWORD is not" in str(missing_credentials("h", username="elastic"))


def test_a_bad_value_is_one_error_naming_the_variable_never_the_value():
    with pytest.raises(ValidationError) as info:
        Settings(request_timeout="hunter2-not-a-number")
    err = configuration_error(info.value)
    assert "HYBRID_ES_REQUEST_TIMEOUT" in err.message and "hunter2" not in str(err)


# -- Elastic Cloud ----------------------------------------------------------------------------


def test_a_cloud_id_decodes_to_the_deployment_urls():
    es, kibana = decode_cloud_id(CLOUD_ID)
    assert es == "https://0a1b2c3d4e.europe-west1.gcp.cloud.es.io:443"
    assert kibana == "https://5f6a7b8c9d.europe-west1.gcp.cloud.es.io:443"
    port = "n:" + base64.b64encode(b"host.example:9243$es1").decode()
    assert decode_cloud_id(port) == ("https://es1.host.example:9243", None)


def test_settings_with_a_cloud_id_connect_there():
    s = Settings(cloud_id=CLOUD_ID)
    assert s.endpoint() == s.redacted_url() == decode_cloud_id(CLOUD_ID)[0]
    assert s.uses_tls()
    kwargs = es_client_kwargs(s)
    assert kwargs["cloud_id"] == CLOUD_ID and "hosts" not in kwargs


@pytest.mark.parametrize(
    "bad",
    [
        "garbage",
        "name:",
        "name:!!!not-base64!!!",
        "name:" + base64.b64encode(b"host.example").decode(),  # no Elasticsearch id
        "name:" + base64.b64encode(b"host.example:notaport$es$kb").decode(),
        "name:" + base64.b64encode("hôst$es".encode()).decode(),
    ],
)
def test_a_cloud_id_that_does_not_decode_is_one_error_naming_it(bad, monkeypatch):
    monkeypatch.setenv("HYBRID_ES_CLOUD_ID", bad)
    with pytest.raises(ConfigurationError) as info:
        Settings()
    assert info.value.message.startswith("HYBRID_ES_CLOUD_ID does not decode")
    assert "Cloud ID" in (info.value.hint or "")


def test_a_cloud_id_and_a_url_are_refused_together():
    with pytest.raises(ConfigurationError) as info:
        Settings(cloud_id=CLOUD_ID, url="https://elsewhere:9200")
    assert "HYBRID_ES_CLOUD_ID" in info.value.message and "HYBRID_ES_URL" in info.value.message


def test_opensearch_refuses_a_cloud_id():
    with pytest.raises(ConfigurationError) as info:
        opensearch_client_kwargs(Settings(cloud_id=CLOUD_ID))
    assert "HYBRID_ES_CLOUD_ID" in info.value.message


# -- fingerprints -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    [
        FINGERPRINT,
        ":".join(["C3"] * 32),  # as Elasticsearch prints it at its first start
        "sha256 Fingerprint=" + ":".join(["C3"] * 32),  # as openssl prints it
        " " + FINGERPRINT.upper() + "\n",
    ],
)
def test_a_fingerprint_is_normalized(written):
    assert normalize_fingerprint(written) == FINGERPRINT
    assert Settings(ssl_assert_fingerprint=written).ssl_assert_fingerprint == FINGERPRINT


@pytest.mark.parametrize("bad", ["c3" * 20, "zz" * 32, "c3" * 33])
def test_a_fingerprint_that_is_not_sha256_is_named(bad):
    with pytest.raises(ConfigurationError) as info:
        Settings(ssl_assert_fingerprint=bad)
    assert "HYBRID_ES_SSL_ASSERT_FINGERPRINT" in info.value.message


# -- client options ---------------------------------------------------------------------------


def test_client_options_pass_through_and_merge_last(monkeypatch):
    monkeypatch.setenv(
        "HYBRID_ES_CLIENT_OPTIONS",
        json.dumps(
            {"http_compress": True, "max_retries": 7, "headers": {"X-Hybrid-Es-Team": "search"}}
        ),
    )
    kwargs = es_client_kwargs(Settings())
    assert kwargs["http_compress"] is True and kwargs["max_retries"] == 7
    assert kwargs["headers"] == {
        "user-agent": user_agent("elasticsearch"),
        "x-hybrid-es-team": "search",
    }
    assert opensearch_client_kwargs(Settings())["http_compress"] is True


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"headers": "x"}', "'headers' must be an object"),
    ],
)
def test_bad_client_options_are_named(raw, says, monkeypatch):
    monkeypatch.setenv("HYBRID_ES_CLIENT_OPTIONS", raw)
    with pytest.raises(ConfigurationError) as info:
        Settings()
    assert "HYBRID_ES_CLIENT_OPTIONS" in info.value.message and says in info.value.message


@pytest.mark.parametrize("key", sorted(INSTEAD))
def test_client_options_may_not_override_address_credentials_or_tls(key, monkeypatch):
    monkeypatch.setenv("HYBRID_ES_CLIENT_OPTIONS", json.dumps({key: "x"}))
    with pytest.raises(ConfigurationError) as info:
        Settings()
    assert repr(key) in info.value.message
    assert INSTEAD[key] in (info.value.hint or "")


@pytest.mark.parametrize(
    "header",
    [
        "Authorization",
        "es-security-runas-user",  # Elasticsearch's run-as: every request as another user
        "ES-Security-RunAs-User",
        "opendistro_security_impersonate_as",  # OpenSearch's impersonation
        "securitytenant",  # OpenSearch Dashboards' tenant
        "x-proxy-user",  # OpenSearch proxy authentication (its names are configurable)
        "x-proxy-roles",
        "x-forwarded-for",
        "X-Opaque-Id",
        "ES-Secondary-Authorization",
        "X-Team",  # harmless-looking, but outside the namespace: an allowlist, not a denylist
        "x-hybrid-es-",  # the namespace alone is no name
        "x-hybrid-es-team\r\nAuthorization",
    ],
)
def test_client_options_may_set_no_header_outside_the_allowlist(header):
    with pytest.raises(ConfigurationError) as info:
        Settings(client_options={"headers": {header: "someone-else"}})
    assert "HYBRID_ES_CLIENT_OPTIONS" in info.value.message and header in info.value.message
    assert "someone-else" not in info.value.message + (info.value.hint or "")


@pytest.mark.parametrize(
    "options",
    [
        {"node_class": "requests"},  # honours HTTP_PROXY: where requests go
        {"sniff_on_start": True},  # goes wherever the nodes publish
        {"serializer": "x"},
        {"meta_header": False},
        {"no_such_option": 1},
        {"http_compress": "yes"},  # wrong type
        {"max_retries": True},  # a boolean is not a count
        {"node_selector_class": "my.module.Selector"},  # a class path: code from anywhere
        {"headers": {"X-Hybrid-Es-Team": 5}},
        {"headers": {"X-Hybrid-Es-Team": "a\r\nAuthorization: Basic eA=="}},
    ],
)
def test_client_options_outside_the_allowlist_are_refused_when_settings_are_read(options):
    with pytest.raises(ConfigurationError) as info:
        Settings(client_options=options)
    assert "HYBRID_ES_CLIENT_OPTIONS" in info.value.message
    assert next(iter(options)) in info.value.message + (info.value.hint or "")


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("X-Hybrid-Es-Team", "\u00e9quipe \u20ac", "outside Latin-1"),  # the euro sign
        ("X-Hybrid-Es-Team", "\u56e2\u961f", "outside Latin-1"),
        ("X-Hybrid-Es-\u212aey", "search", "not a header name"),  # the Kelvin sign, K folded
        ("X-Hybrid-Es-Te\u017fm", "search", "not a header name"),  # the long s, s folded
        ("X-Hybrid-Es-Team:", "search", "not a header name"),
        ("X-Hybrid-Es-Team", "a\nb", "control characters"),
    ],
    ids=["euro sign", "CJK", "Kelvin sign", "long s", "colon", "line feed"],
)
def test_a_header_http_cannot_carry_is_refused_when_settings_are_read(name, value, says):
    """Before: a value outside Latin-1 (or a name whose letters fold into the namespace) passed,
    and the client failed at the first request, an encoding error out of the connection."""
    with pytest.raises(ConfigurationError) as info:
        Settings(client_options=json.dumps({"headers": {name: value}}))
    assert "HYBRID_ES_CLIENT_OPTIONS" in info.value.message and says in info.value.message
    assert name in info.value.message and value not in info.value.message


def test_a_latin_1_header_value_is_sent_as_it_is():
    s = Settings(client_options={"headers": {"X-Hybrid-Es-Team": "\u00e9quipe caf\u00e9"}})
    assert es_client_kwargs(s)["headers"]["x-hybrid-es-team"] == "\u00e9quipe caf\u00e9"


def test_every_allowed_client_option_is_accepted_by_a_client():
    ok = {
        "request_timeout": 5,
        "max_retries": 2,
        "retry_on_status": [502],
        "retry_on_timeout": False,
        "http_compress": True,
        "connections_per_node": 4,
        "node_selector_class": "random",
        "randomize_nodes_in_pool": False,
        "dead_node_backoff_factor": 0.5,
        "max_dead_node_backoff": 10,
        "headers": {"X-Hybrid-Es-Team": "search"},
    }
    assert set(ok) | {"timeout", "pool_maxsize"} == set(ALLOWED_CLIENT_OPTIONS)
    make_client(Settings(client_options=ok))  # elasticsearch-py takes every one of them
    os_ok = {k: v for k, v in ok.items() if k not in ("request_timeout", "connections_per_node")}
    os_ok.update(timeout=5, pool_maxsize=4)
    os_ok.pop("node_selector_class")
    os_ok.pop("dead_node_backoff_factor")
    os_ok.pop("max_dead_node_backoff")
    os_ok.pop("randomize_nodes_in_pool")
    from opensearchpy import OpenSearch

    OpenSearch(**opensearch_client_kwargs(Settings(client_options=os_ok)))


def test_a_client_certificate_comes_from_its_own_settings(tmp_path):
    cert, key = tmp_path / "client.pem", tmp_path / "client.key"
    cert.write_text("x")
    key.write_text("y")
    s = Settings(url="https://es:9200", client_cert=cert, client_key=key)
    assert es_client_kwargs(s)["client_cert"] == str(cert)
    assert opensearch_client_kwargs(s)["client_key"] == str(key)
    with pytest.raises(ConfigurationError, match="HYBRID_ES_CLIENT_CERT"):
        es_client_kwargs(Settings(url="https://es:9200", client_key=key))
    with pytest.raises(ConfigurationError, match="not a file"):
        es_client_kwargs(Settings(url="https://es:9200", client_cert=tmp_path / "none.pem"))


# -- start-local ------------------------------------------------------------------------------

START_LOCAL = """START_LOCAL_VERSION=0.12.0
ES_LOCAL_VERSION=9.2.3
ES_LOCAL_CONTAINER_NAME=es-local-dev
ES_LOCAL_PASSWORD=Pw-from-file
ES_LOCAL_PORT=9201
ES_LOCAL_URL=http://localhost:${ES_LOCAL_PORT}
ES_LOCAL_JAVA_OPTS="-Xms128m -Xmx2g"
KIBANA_LOCAL_PORT=5601
ES_LOCAL_API_KEY=a2V5LWZyb20tZmlsZQ==
"""


def _start_local(where: Path, text: str = START_LOCAL) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / ".env").write_text(text)
    return where / ".env"


def test_read_start_local_expands_the_port_and_names_the_elastic_user(tmp_path):
    found = read_start_local(_start_local(tmp_path / "elastic-start-local"))
    assert found == {
        "url": "http://localhost:9201",
        "api_key": "a2V5LWZyb20tZmlsZQ==",
        "username": "elastic",
        "password": "Pw-from-file",
    }


def test_start_local_is_read_when_asked_for(tmp_path, monkeypatch):
    _start_local(tmp_path / "elastic-start-local")
    monkeypatch.setenv("HYBRID_ES_START_LOCAL_ENV", "auto")
    s = Settings()
    assert s.url == "http://localhost:9201" and s.start_local_env == "auto"
    assert s.api_key is not None and s.api_key.get_secret_value() == "a2V5LWZyb20tZmlsZQ=="
    assert s.username == "elastic" and s.password is not None
    assert es_client_kwargs(s)["api_key"] == "a2V5LWZyb20tZmlsZQ=="  # the key wins
    for name in ("HYBRID_ES_URL", "HYBRID_ES_USERNAME", "HYBRID_ES_PASSWORD"):
        monkeypatch.setenv(name, "")  # set but empty: unset, the file's values as one
    again = Settings()
    assert (again.url, again.username, again.password) == (s.url, s.username, s.password)


def test_a_dot_env_of_something_else_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRID_ES_START_LOCAL_ENV", "auto")
    _start_local(tmp_path, "DATABASE_URL=postgres://x\n")
    s = Settings()
    assert s.url == "http://127.0.0.1:9200" and s.api_key is None
    _start_local(tmp_path / "elastic-start-local")
    assert Settings().url == "http://localhost:9201"  # the next place looked at


@pytest.mark.parametrize("where", [".", "elastic-start-local"])
@pytest.mark.parametrize(
    "mine",
    [
        {"HYBRID_ES_PASSWORD": "mine", "HYBRID_ES_USERNAME": "reader"},
        {"HYBRID_ES_PASSWORD": "mine"},
        {"HYBRID_ES_API_KEY": "bXkta2V5"},
        {"HYBRID_ES_BEARER_AUTH": "my-token"},
        {},
    ],
    ids=["user and password", "password", "API key", "bearer token", "none"],
)
def test_a_dot_env_in_the_working_folder_never_redirects_the_users_credentials(
    tmp_path, monkeypatch, where, mine
):
    """A checked-out folder whose .env names a URL of the attacker's: unasked, the file is not
    read at all; asked for, it is never combined with the user's own credentials."""
    _start_local(tmp_path / where)
    for name, value in mine.items():
        monkeypatch.setenv(name, value)
    s = Settings()
    assert s.url == "http://127.0.0.1:9200" and s.start_local_env is None
    assert s.api_key is None or "HYBRID_ES_API_KEY" in mine
    assert s.password is None or s.password.get_secret_value() == "mine"

    monkeypatch.setenv("HYBRID_ES_START_LOCAL_ENV", "auto")
    if not mine:
        assert Settings().url == "http://localhost:9201"  # the file with its own credentials
        return
    with pytest.raises(ConfigurationError) as info:
        Settings()
    assert "HYBRID_ES_START_LOCAL_ENV" in info.value.message
    assert next(n for n in mine if n != "HYBRID_ES_USERNAME") in info.value.message
    assert "HYBRID_ES_URL" in (info.value.hint or "")
    for secret in ("mine", "bXkta2V5", "my-token", "Pw-from-file"):
        assert secret not in info.value.message + (info.value.hint or "")


def test_explicit_settings_win_over_start_local(tmp_path, monkeypatch):
    _start_local(tmp_path / "elastic-start-local")
    monkeypatch.setenv("HYBRID_ES_START_LOCAL_ENV", "auto")
    monkeypatch.setenv("HYBRID_ES_URL", "http://other:9200")
    s = Settings()
    assert s.url == "http://other:9200" and s.api_key is None and s.password is None
    monkeypatch.setenv("HYBRID_ES_PASSWORD", "mine")
    assert Settings().url == "http://other:9200"  # the user's URL with the user's password
    monkeypatch.delenv("HYBRID_ES_URL")
    assert Settings(url="http://given:9200").url == "http://given:9200"
    assert Settings(cloud_id=CLOUD_ID).api_key is None


def test_the_start_local_file_can_be_named_or_turned_off(tmp_path, monkeypatch):
    elsewhere = _start_local(tmp_path / "deploy" / "es")
    monkeypatch.setenv("HYBRID_ES_START_LOCAL_ENV", str(elsewhere))
    assert Settings().url == "http://localhost:9201"
    monkeypatch.delenv("HYBRID_ES_START_LOCAL_ENV")
    assert Settings(start_local_env=elsewhere).url == "http://localhost:9201"  # a Path in code
    monkeypatch.setenv("HYBRID_ES_START_LOCAL_ENV", str(tmp_path / "missing.env"))
    with pytest.raises(ConfigurationError) as info:
        Settings()
    assert "HYBRID_ES_START_LOCAL_ENV" in info.value.message
    _start_local(tmp_path / "elastic-start-local")
    monkeypatch.setenv("HYBRID_ES_START_LOCAL_ENV", "")
    assert Settings().url == "http://127.0.0.1:9200"


def test_settings_read_from_start_local_never_show_its_secrets(tmp_path):
    _start_local(tmp_path / "elastic-start-local")
    shown = repr(Settings(start_local_env="auto")) + str(Settings(start_local_env="auto"))
    assert "localhost:9201" in shown
    assert "Pw-from-file" not in shown and "a2V5LWZyb20tZmlsZQ==" not in shown


# -- the clients' keyword arguments -----------------------------------------------------------


def test_the_clients_made_here_leave_bodies_out_of_spans(monkeypatch):
    """The variable makes elasticsearch-py copy search bodies into its spans; the clients that
    hybrid-es builds (and their ``.options()`` copies) keep them out, and are still taken for
    elasticsearch-py's. On a real search: tests/integration/test_telemetry.py."""
    from elasticsearch import Elasticsearch

    from hybrid_es.cluster.client import BODY_CAPTURE_VARIABLE, SpanSafeAsyncElasticsearch
    from hybrid_es.cluster.engine import ElasticsearchEngine, as_engine

    monkeypatch.setenv(BODY_CAPTURE_VARIABLE, "raw")
    assert Elasticsearch("http://127.0.0.1:9")._otel.body_strategy == "raw"  # the variable
    client = make_client(Settings())
    assert client._otel.body_strategy == "omit"
    assert client.options(opaque_id="x")._otel.body_strategy == "omit"
    assert isinstance(as_engine(client), ElasticsearchEngine)
    aclient = SpanSafeAsyncElasticsearch("http://127.0.0.1:9")
    assert aclient.options(opaque_id="x")._otel.body_strategy == "omit"


def test_every_client_sends_the_hybrid_es_user_agent():
    ua = user_agent("elasticsearch")
    assert ua.startswith(f"hybrid-es/{package_version()} (elasticsearch/")
    assert es_client_kwargs(Settings())["headers"]["user-agent"] == ua
    assert opensearch_client_kwargs(Settings())["headers"]["user-agent"].startswith(
        f"hybrid-es/{package_version()} (opensearch-py/"
    )
    assert make_client(Settings())._headers["user-agent"] == ua


@pytest.mark.parametrize(
    ("given", "es", "os_header"),
    [
        (
            {"api_key": "K", "bearer_auth": "T", "username": "u", "password": "p"},
            ("api_key", "K"),
            "ApiKey K",
        ),
        ({"bearer_auth": "T", "username": "u", "password": "p"}, ("bearer_auth", "T"), "Bearer T"),
        ({"username": "u", "password": "p"}, ("basic_auth", ("u", "p")), None),
    ],
)
def test_credentials_in_order_api_key_bearer_user(given, es, os_header):
    s = Settings(**given)
    kwargs = es_client_kwargs(s)
    assert kwargs[es[0]] == es[1]
    assert not {"api_key", "bearer_auth", "basic_auth"} - {es[0]} & kwargs.keys()
    os_kwargs = opensearch_client_kwargs(s)
    assert os_kwargs["headers"].get("authorization") == os_header
    assert ("http_auth" in os_kwargs) is (os_header is None)


def test_a_callers_api_key_wins():
    kwargs = es_client_kwargs(Settings(username="u", password="p"), api_key="CALLER")
    assert kwargs["api_key"] == "CALLER" and "basic_auth" not in kwargs


def test_tls_options_only_over_https(tmp_path):
    ca = _ca(tmp_path)
    plain = es_client_kwargs(Settings(url="http://h:9200", ca_certs=ca, verify_certs=False))
    assert not {"ca_certs", "verify_certs", "ssl_assert_fingerprint"} & plain.keys()
    tls = es_client_kwargs(Settings(url="https://h:9200", ca_certs=ca))
    assert tls["ca_certs"] == str(ca) and "verify_certs" not in tls
    os_tls = opensearch_client_kwargs(Settings(url="https://h:9200", ca_certs=ca))
    assert os_tls["ca_certs"] == str(ca) and os_tls["timeout"] == 30.0


def test_a_fingerprint_replaces_the_ca_check():
    s = Settings(url="https://h:9200", ssl_assert_fingerprint=FINGERPRINT)
    assert es_client_kwargs(s)["ssl_assert_fingerprint"] == FINGERPRINT
    os_kwargs = opensearch_client_kwargs(s)
    assert os_kwargs["ssl_assert_fingerprint"] == FINGERPRINT
    context = os_kwargs["ssl_context"]
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname
    assert unverified_warning(s) is None  # pinned is checked


def test_a_ca_file_and_a_fingerprint_are_refused_together(tmp_path):
    s = Settings(url="https://h:9200", ca_certs=_ca(tmp_path), ssl_assert_fingerprint=FINGERPRINT)
    with pytest.raises(ConfigurationError) as info:
        es_client_kwargs(s)
    assert "HYBRID_ES_CA_CERTS" in info.value.message
    assert "HYBRID_ES_SSL_ASSERT_FINGERPRINT" in info.value.message


def test_a_ca_file_that_does_not_exist_is_named(tmp_path):
    s = Settings(url="https://h:9200", ca_certs=tmp_path / "nope.pem")
    for build in (es_client_kwargs, opensearch_client_kwargs):
        with pytest.raises(ConfigurationError) as info:
            build(s)
        assert "HYBRID_ES_CA_CERTS" in info.value.message and "nope.pem" in info.value.message


def test_verify_certs_false_is_passed_on_and_warned_about_once(caplog):
    s = Settings(url="https://h:9200", verify_certs=False)
    kwargs = es_client_kwargs(s)
    assert kwargs["verify_certs"] is False and kwargs["ssl_show_warn"] is False
    assert opensearch_client_kwargs(s)["verify_certs"] is False
    caplog.set_level(logging.WARNING, logger="hybrid_es")
    make_client(s)  # no Python warning (they are errors here): one log record instead
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and "HYBRID_ES_VERIFY_CERTS=false" in record.message
    assert unverified_warning(Settings(url="http://h:9200", verify_certs=False)) is None


# -- TLS failures -----------------------------------------------------------------------------


def _tls_failure(reason: str) -> Exception:
    """A TLS failure as elastic-transport raises it with retries off: "TLS error", the reason
    in its cause."""
    exc = elastic_transport.TlsError("TLS error")
    exc.__cause__ = urllib3.exceptions.SSLError(reason)
    return exc


@pytest.mark.parametrize(
    ("reason", "kind", "names"),
    [
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate "
            "in certificate chain (_ssl.c:1006)",
            ConfigurationError,
            "HYBRID_ES_CA_CERTS",
        ),
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local "
            "issuer certificate (_ssl.c:1006)",
            ConfigurationError,
            "HYBRID_ES_CA_CERTS",
        ),
        (
            'Fingerprints did not match. Expected "ab", got "cd".',
            ConfigurationError,
            "HYBRID_ES_SSL_ASSERT_FINGERPRINT",
        ),
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired "
            "(_ssl.c:1006)",
            EngineUnavailableError,
            "HYBRID_ES_URL",
        ),
        ("hostname '127.0.0.1' doesn't match 'es.example'", ConfigurationError, "HYBRID_ES_URL"),
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch, "
            "certificate is not valid for 'h'. (_ssl.c:1006)",
            ConfigurationError,
            "HYBRID_ES_URL",
        ),
        (
            "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)",
            ConfigurationError,
            "HYBRID_ES_URL",
        ),
    ],
)
def test_each_tls_failure_is_one_error_naming_the_setting(reason, kind, names):
    err = translate_es_error(_tls_failure(reason), url="https://h:9200", what="connecting")
    assert type(err) is kind
    assert names in str(err)
    assert "Expected" not in str(err)  # what the client said stays out of the message


def test_a_connection_failure_is_no_tls_failure():
    exc = elastic_transport.ConnectionError("Connection refused")
    assert tls_error("Elasticsearch", "https://h", exc) is None
    assert "cannot reach" in str(translate_es_error(exc, url="https://h"))


def test_a_trace_id_goes_from_the_response_and_the_error_into_the_trace():
    from datetime import UTC, datetime

    from hybrid_es.errors import SearchTimeoutError
    from hybrid_es.models import Principal, SearchResponse
    from hybrid_es.traces.hooks import search_hook

    docs: list[dict[str, Any]] = []

    class Writer:
        submit = docs.append

        def record_error(self, exc: BaseException) -> None:
            raise exc

    tracer = search_hook(Writer(), clock=lambda: datetime(2026, 4, 1, tzinfo=UTC))  # type: ignore[arg-type]
    who = Principal(tenant="t", user_id="u")
    response = SearchResponse(
        query_hash="h",
        fusion_path="client-rrf",
        fusion_reason="r",
        reranked=False,
        rerank_note="",
        hits=(),
        candidates=0,
        timings_ms={},
        trace_id="a" * 32,
    )
    tracer(who, response, "q")
    failed = SearchTimeoutError("timed out")
    failed.trace_id = "b" * 32
    tracer.on_error(who, "q", failed)
    ids = [json.dumps(d) for d in docs]
    assert "a" * 32 in ids[0] and "b" * 32 in ids[1]


def test_the_client_writes_and_reads_json_and_ndjson_with_orjson_as_the_json_module_would():
    """The client's serializers are orjson's (cluster.client.orjson_serializers), for the plain
    and the compatibility mimetypes; an _msearch body and a response mean what the json module
    writes and reads."""
    from elasticsearch.serializer import JsonSerializer, NdjsonSerializer

    serializers = make_client(Settings()).transport.serializers
    lines = [
        {"index": "hybrid-es-chunks"},
        {"knn": {"query_vector": [0.1, -2.5e-07, 1.0], "k": 5}, "size": 0, "q": "naïve 東京"},
        {"index": "other"},
        {"query": {"range": {"valid_from": {"lte": date(2026, 4, 10)}}}},
    ]
    for mimetype in ("application/x-ndjson", "application/vnd.elasticsearch+x-ndjson"):
        ours = serializers.get_serializer(mimetype)
        assert "Orjson" in type(ours).__name__, mimetype
        written = ours.dumps(lines)
        assert written.endswith(b"\n") and written.count(b"\n") == len(lines)
        assert NdjsonSerializer().loads(written) == NdjsonSerializer().loads(
            NdjsonSerializer().dumps(lines)
        )
    for mimetype in ("application/json", "application/vnd.elasticsearch+json"):
        ours = serializers.get_serializer(mimetype)
        assert "Orjson" in type(ours).__name__, mimetype
        answer = b'{"responses":[{"hits":{"hits":[{"_id":"a","_score":1.5}]}}],"t":"\\u6771"}'
        assert ours.loads(answer) == JsonSerializer().loads(answer)
