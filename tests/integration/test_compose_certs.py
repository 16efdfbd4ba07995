"""The compose stack's ``certs`` service, run for real: its script, read from docker-compose.yml,
with the ``elasticsearch-certutil`` of the Elasticsearch distribution that scripts/es.sh runs (the
same version as the image), into a folder that stands in for the ``certs`` volume.

What is verified: the script makes a CA and the Elasticsearch and Kibana certificates that the
other services' settings name, with the host names they are reached by (``elasticsearch`` and
``kibana`` on the compose network, ``localhost`` and 127.0.0.1 from the host and the health
checks); each certificate is trusted through the CA file that Kibana and the setup service are
given, in a real TLS handshake, strict X.509 checks included; the CA key is readable by its owner
alone; a second run keeps what the first made. What is not: the image itself (its unzip, its
users), which no Docker engine here can run.
"""

from __future__ import annotations

import os
import re
import socket
import ssl
import stat
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
VOLUME = "/usr/share/elasticsearch/config/certs"  # where the certs service mounts the volume


def _distribution() -> Path:
    """The Elasticsearch home that scripts/es.sh unpacked for the image's version."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    version = compose["services"]["certs"]["image"].rsplit(":", 1)[1]
    cache = Path(os.environ.get("HYBRID_ES_CACHE", Path.home() / ".cache" / "hybrid-es"))
    home = cache / f"elasticsearch-{version}"
    if not (home / "bin" / "elasticsearch-certutil").exists():
        pytest.skip(f"no Elasticsearch {version} distribution in {cache}: run scripts/es.sh start")
    return home


def _java() -> Path:
    """A JDK that Elasticsearch 9's tools run on (21 or newer), found as scripts/es.sh does."""
    candidates = [os.environ.get("ES_JAVA_HOME"), os.environ.get("JAVA_HOME")]
    candidates += sorted(str(p) for p in Path("/usr/lib/jvm").glob("*"))
    for home in filter(None, candidates):
        release = Path(home) / "release"
        found = re.search(r'JAVA_VERSION="(\d+)', release.read_text()) if release.exists() else None
        if found and int(found.group(1)) >= 21 and (Path(home) / "bin" / "java").exists():
            return Path(home)
    pytest.skip("no JDK 21 or newer (ES_JAVA_HOME, JAVA_HOME, /usr/lib/jvm/*) for the certutil")


@pytest.fixture(scope="module")
def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def certs(compose, tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """The ``certs`` volume after the service ran (twice: the second run must keep it)."""
    if os.geteuid() != 0:
        pytest.skip("the certs service runs as root (user 0) and gives the files to root")
    home, java = _distribution(), _java()
    service = compose["services"]["certs"]
    assert service["command"][:2] == ["bash", "-c"] and service["user"] == "0"
    assert f"certs:{VOLUME}" in service["volumes"]
    # An Elasticsearch home of its own: the distribution's programs, an empty config/certs.
    sim = tmp_path_factory.mktemp("es-home")
    for part in ("bin", "lib", "modules"):
        (sim / part).symlink_to(home / part)
    (sim / "config" / "certs").mkdir(parents=True)
    script = service["command"][2].replace("$$", "$").replace("/usr/share/elasticsearch", str(sim))
    env = {**os.environ, "ES_JAVA_HOME": str(java)}
    first = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert first.returncode == 0, first.stdout + first.stderr
    made = {p: p.read_bytes() for p in (sim / "config" / "certs").rglob("*") if p.is_file()}
    again = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "making" not in again.stdout  # nothing made twice: the CA a client holds stays valid
    assert {p: p.read_bytes() for p in made} == made
    return sim / "config" / "certs"


def _in_volume(certs: Path, mount: str, path: str) -> Path:
    """The file that ``path`` (inside a container that mounts the volume at ``mount``) names."""
    assert path.startswith(mount + "/"), (path, mount)
    return certs / path[len(mount) + 1 :]


def _handshake(cert: Path, key: Path, ca: Path, hostname: str) -> None:
    """A TLS server with ``cert``; a client that trusts ``ca`` alone connects as ``hostname``."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=str(ca))
    client.verify_flags |= ssl.VERIFY_X509_STRICT  # Python 3.13's default: keep working there
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            try:
                with server.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                pass

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            client.wrap_socket(raw, server_hostname=hostname) as tls,
        ):
            tls.sendall(b"x")
        thread.join(10)


def test_the_certificates_are_those_the_services_name(compose, certs):
    services = compose["services"]
    es = services["elasticsearch"]["environment"]
    for key in ("certificate", "key", "certificate_authorities"):
        for layer in ("http", "transport"):  # relative to the config folder: certs/...
            assert (certs.parent / es[f"xpack.security.{layer}.ssl.{key}"]).is_file()
    kibana, setup = services["kibana"], services["setup"]
    kibana_mount = next(v.split(":")[1] for v in kibana["volumes"] if v.startswith("certs:"))
    setup_mount = next(v.split(":")[1] for v in setup["volumes"] if v.startswith("certs:"))
    env = kibana["environment"]
    for key in (
        "SERVER_SSL_CERTIFICATE",
        "SERVER_SSL_KEY",
        "ELASTICSEARCH_SSL_CERTIFICATEAUTHORITIES",
    ):
        assert _in_volume(certs, kibana_mount, env[key]).is_file(), key
    assert _in_volume(certs, setup_mount, setup["environment"]["HYBRID_ES_CA_CERTS"]).is_file()
    assert stat.S_IMODE((certs / "ca" / "ca.key").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("name", "hostname"),
    [
        ("elasticsearch", "elasticsearch"),  # Kibana, the users and setup services
        ("elasticsearch", "localhost"),  # its health check
        ("elasticsearch", "127.0.0.1"),  # the host, through the published port
        ("kibana", "kibana"),  # the setup service's --kibana https://kibana:5601
        ("kibana", "localhost"),  # its health check
        ("kibana", "127.0.0.1"),  # a browser on the host
    ],
)
def test_each_certificate_is_trusted_through_the_ca_file_by_its_host_names(
    certs: Path, name: str, hostname: str
):
    _handshake(
        certs / name / f"{name}.crt",
        certs / name / f"{name}.key",
        certs / "ca" / "ca.crt",
        hostname,
    )


def test_a_certificate_is_not_trusted_for_another_host(certs: Path):
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(
            certs / "kibana" / "kibana.crt",
            certs / "kibana" / "kibana.key",
            certs / "ca" / "ca.crt",
            "elasticsearch",
        )
