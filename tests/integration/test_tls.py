"""Connections to a real HTTPS node (issue 14, item 1): ``HYBRID_ES_TLS=1 scripts/es.sh start``,
an Elasticsearch node of its own (port 9243) whose CA and certificate trustme made
(``scripts/make_certs.py``). scripts/test.sh starts it in the background and stops it after the
Elasticsearch run; run alone, this module starts it (and stops what it started).

Connects with the CA file, with the CA's fingerprint alone, with the node certificate's
fingerprint, and with a bearer token (a file-based service-account token); a wrong CA, no CA, a
wrong fingerprint, an expired certificate and a certificate for another host are each one clear
error naming the setting to fix, in the library and in the CLI (no traceback);
``HYBRID_ES_VERIFY_CERTS=false`` connects and warns, in the log and on the CLI's stderr.

The expired and wrong-host certificates are served by a local HTTPS stand-in
(``tests/fixtures/https_stand_in.py``): the client refuses them in the handshake, before a byte
of HTTP, so restarting the node with a bad certificate (20 s each) would test nothing more.
"""

from __future__ import annotations

import hashlib
import logging
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trustme

from hybrid_es.cluster.engine import connect
from hybrid_es.errors import ConfigurationError, EngineUnavailableError
from hybrid_es.settings import Settings
from tests.fixtures.https_stand_in import HttpsStandIn

pytestmark = [
    pytest.mark.integration,
    pytest.mark.engine("elasticsearch", reason="the HTTPS node is scripts/es.sh's (Elasticsearch)"),
]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tls_node() -> Iterator[dict[str, Any]]:
    """The HTTPS node: its URL, CA file, certificates directory and the elastic password."""
    env = {k: v for k, v in os.environ.items() if k not in ("HYBRID_ES_INSTANCE", "HYBRID_ES_PORT")}
    env.update(HYBRID_ES_TLS="1", HYBRID_ES_HEAP=env.get("HYBRID_ES_TLS_HEAP", "512m"))

    def es_sh(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(ROOT / "scripts" / "es.sh"), *args],
            env=env,
            text=True,
            capture_output=True,
            timeout=300,
        )

    was_running = es_sh("status").returncode == 0
    if not was_running:
        started = es_sh("start")
        if started.returncode != 0:
            pytest.fail(f"could not start the HTTPS node: {started.stderr[-2000:]}")
    exported = {}
    for line in es_sh("env").stdout.splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            exported[name] = value
    ca = Path(exported["HYBRID_ES_CA_CERTS"])
    yield {
        "url": exported["HYBRID_ES_URL"],
        "ca": ca,
        "certs": ca.parent,
        "password": exported["HYBRID_ES_PASSWORD"],
    }
    if not was_running:
        es_sh("stop")


def _settings(node: dict[str, Any], **kw: Any) -> Settings:
    base: dict[str, Any] = {
        "url": node["url"],
        "username": "elastic",
        "password": node["password"],
        "ca_certs": node["ca"],
        "api_key": None,
        "bearer_auth": None,
        "ssl_assert_fingerprint": None,
        "verify_certs": True,
        "max_retries": 0,
    }
    return Settings(**{**base, **kw})


def _fingerprint(pem: str) -> str:
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()


def test_the_node_serves_https_only(tls_node):
    assert tls_node["url"].startswith("https://")
    with pytest.raises(EngineUnavailableError) as info:
        connect(_settings(tls_node, url=tls_node["url"].replace("https://", "http://")))
    assert "https://" in str(info.value)  # the hint says what to change


def test_connects_with_the_ca_file(tls_node):
    engine = connect(_settings(tls_node))
    assert engine.flavor == "elasticsearch" and engine.version != "unknown"
    assert engine.health()["status"] in ("green", "yellow")


def test_connects_with_the_ca_fingerprint_alone(tls_node):
    # What Elasticsearch prints at its first start: the CA's SHA-256, colon-separated.
    digits = _fingerprint(tls_node["ca"].read_text())
    printed = ":".join(digits[i : i + 2] for i in range(0, 64, 2)).upper()
    engine = connect(_settings(tls_node, ca_certs=None, ssl_assert_fingerprint=printed))
    assert engine.health()["status"] in ("green", "yellow")


def test_connects_with_the_node_certificate_fingerprint(tls_node):
    host, port = tls_node["url"].removeprefix("https://").rsplit(":", 1)
    leaf = ssl.get_server_certificate((host, int(port)))
    engine = connect(_settings(tls_node, ca_certs=None, ssl_assert_fingerprint=_fingerprint(leaf)))
    assert engine.health()["status"] in ("green", "yellow")


def test_connects_with_a_bearer_token(tls_node):
    token = (tls_node["certs"] / "service-token").read_text().strip()
    engine = connect(_settings(tls_node, username=None, password=None, bearer_auth=token))
    who = engine.request("GET", "/_security/_authenticate")
    assert who["username"] == "elastic/fleet-server"


def test_a_wrong_ca_is_one_error_naming_the_ca_setting(tls_node, tmp_path):
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    for ca in (other, None):  # another CA's file, and the system's trust store
        with pytest.raises(ConfigurationError) as info:
            connect(_settings(tls_node, ca_certs=ca))
        assert "not signed by a CA this client trusts" in info.value.message
        assert "HYBRID_ES_CA_CERTS" in str(info.value)


def test_a_missing_ca_file_is_named(tls_node, tmp_path):
    with pytest.raises(ConfigurationError) as info:
        connect(_settings(tls_node, ca_certs=tmp_path / "nowhere.pem"))
    assert "HYBRID_ES_CA_CERTS" in info.value.message and "nowhere.pem" in info.value.message


def test_a_wrong_fingerprint_is_one_error_naming_it(tls_node):
    with pytest.raises(ConfigurationError) as info:
        connect(_settings(tls_node, ca_certs=None, ssl_assert_fingerprint="ab" * 32))
    assert "HYBRID_ES_SSL_ASSERT_FINGERPRINT" in info.value.message


def test_an_expired_certificate_is_one_clear_error(tmp_path):
    ca = trustme.CA()
    now = datetime.now(UTC)
    expired = ca.issue_cert(
        "127.0.0.1", not_before=now - timedelta(days=30), not_after=now - timedelta(days=1)
    )
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with HttpsStandIn(expired) as server, pytest.raises(EngineUnavailableError) as info:
        connect(Settings(url=server.url, ca_certs=ca_file, max_retries=0))
    assert info.value.message.endswith("has expired")
    assert "renew the certificate" in (info.value.hint or "")


def test_a_certificate_for_another_host_is_one_clear_error(tmp_path):
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    other_host = ca.issue_cert("search.example.invalid")
    with HttpsStandIn(other_host) as server, pytest.raises(ConfigurationError) as info:
        connect(Settings(url=server.url, ca_certs=ca_file, max_retries=0))
    assert "does not name the host in HYBRID_ES_URL" in info.value.message


def test_verify_certs_false_connects_and_logs_a_warning(tls_node, caplog):
    caplog.set_level(logging.WARNING, logger="hybrid_es")
    engine = connect(_settings(tls_node, ca_certs=None, verify_certs=False))  # no Python warning
    assert engine.health()["status"] in ("green", "yellow")
    (record,) = [r for r in caplog.records if r.name == "hybrid_es.cluster.client"]
    assert record.levelno == logging.WARNING
    assert "HYBRID_ES_VERIFY_CERTS=false" in record.getMessage()


def _cli(node: dict[str, Any], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HYBRID_ES_")}
    base.update(
        COLUMNS="200",
        HYBRID_ES_URL=node["url"],
        HYBRID_ES_USERNAME="elastic",
        HYBRID_ES_PASSWORD=node["password"],
        HYBRID_ES_CA_CERTS=str(node["ca"]),
        HYBRID_ES_MAX_RETRIES="0",
    )
    return subprocess.run(
        [sys.executable, "-c", "from hybrid_es.cli import main; main()", *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_says_once_on_stderr_that_verification_is_off(tls_node):
    out = _cli(
        tls_node, "capabilities", "--json", HYBRID_ES_CA_CERTS="", HYBRID_ES_VERIFY_CERTS="false"
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("warning: TLS certificate verification is off") == 1
    assert "HYBRID_ES_VERIFY_CERTS=false" in " ".join(out.stderr.split())


def test_cli_shows_a_tls_error_without_a_traceback(tls_node, tmp_path):
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    out = _cli(tls_node, "capabilities", HYBRID_ES_CA_CERTS=str(other))
    assert out.returncode != 0
    text = " ".join(out.stderr.split())
    assert "error: the TLS certificate of Elasticsearch" in text and "HYBRID_ES_CA_CERTS" in text
    assert "Traceback" not in out.stderr
