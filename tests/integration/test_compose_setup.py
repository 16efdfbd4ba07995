"""The compose quick start's ``setup`` service, run for real: its command, read from
docker-compose.yml itself, against the node the suite runs on (issue 25: the service installed
the package without ``[cli]``, so ``hybrid-es bootstrap`` exited 78 and nothing was installed).

No Docker engine runs on the build machines, so the service's world is mapped onto this one: the
mounted repository (``/app``) is this checkout, its scratch copy (``/tmp/app``) a temporary
folder, ``python:3.11-slim``'s interpreter a fresh virtual environment of this machine's Python
(so the install resolves the package's own dependencies from scratch, as the image does),
``https://elasticsearch:9200`` the node under test with the compose file's user and the node's
password standing in for the .env's (the compose file has no default), ``https://kibana:5601`` a
local HTTPS stand-in for Kibana's saved-objects import API (no Kibana runs here) whose
certificate a throwaway CA signed, and the ``certs`` volume a folder whose ``ca/ca.crt`` holds
that CA (and the node's, when the suite's node speaks HTTPS): so the import succeeds only if the
command trusts the stack's CA through ``HYBRID_ES_CA_CERTS``, as it must for Kibana's
certificate in the stack. What is verified: the command line as written installs everything the
command it runs needs, bootstraps the node (``--roles``: reported skipped on the integ-test node,
which stores no native roles), and imports the saved objects over TLS. What is not: the images,
the ``certs`` and ``users`` services, the health checks and the start order
(tests/unit/test_compose.py checks them against the Compose Specification's schema), nor
Elasticsearch over TLS unless the suite's node speaks it (tests/integration/test_tls.py connects
to an HTTPS node).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import trustme
import yaml

from tests.fixtures.https_stand_in import HttpsStandIn

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _mounts(setup: dict, volumes: dict[str, Path]) -> dict[str, Path]:
    """Each mount target of the service -> the folder of this machine that stands in for it."""
    out = {}
    for volume in setup["volumes"]:
        source, target = volume.split(":")[:2]
        out[target] = volumes[source]
    return out


def test_the_setup_service_command_bootstraps_a_real_node(es, settings, bootstrapped, tmp_path):
    # `bootstrapped`: the node holds this tree's templates first (it is shared, and may hold an
    # older checkout's, which the command would rightly refuse to overwrite without --force).
    if es.flavor != "elasticsearch" or not es.version.startswith("9."):
        pytest.skip(f"the compose file runs Elasticsearch 9.5.4; this node is {es.version}")
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    setup = compose["services"]["setup"]
    assert setup["command"][:2] == ["sh", "-c"]
    env_in = {k: str(v) for k, v in setup["environment"].items()}
    # The password has no default in the file: the .env's value, here the node's own.
    assert env_in["HYBRID_ES_PASSWORD"].startswith("${ELASTIC_PASSWORD:?")
    assert env_in["HYBRID_ES_URL"] == "https://elasticsearch:9200"
    # The stack's CA: one that signed the Kibana stand-in's certificate, and the node's own CA
    # when the suite's node speaks HTTPS.
    ca = trustme.CA(organization_name="hybrid-es compose test CA")
    certs = tmp_path / "certs"
    (certs / "ca").mkdir(parents=True)
    bundle = ca.cert_pem.bytes()
    if settings.ca_certs:
        bundle += Path(settings.ca_certs).read_bytes()
    (certs / "ca" / "ca.crt").write_bytes(bundle)
    mounts = _mounts(setup, {".": ROOT, "certs": certs})
    inside = next(target for target, here in mounts.items() if here == ROOT)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    with HttpsStandIn(ca.issue_cert("127.0.0.1")) as kibana:
        script = (  # one pass each: the scratch copy's path holds the mount's
            setup["command"][2]
            .replace("/tmp/app", "\0scratch\0")
            .replace(inside, str(ROOT))
            .replace("\0scratch\0", str(tmp_path / "app"))
            .replace("https://kibana:5601", kibana.url)
        )
        assert kibana.url in script
        env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRID_ES_")}
        env.update(env_in)
        for target, here in mounts.items():  # paths into the mounted volumes
            if env["HYBRID_ES_CA_CERTS"].startswith(target + "/"):
                env["HYBRID_ES_CA_CERTS"] = str(here) + env["HYBRID_ES_CA_CERTS"][len(target) :]
        assert Path(env["HYBRID_ES_CA_CERTS"]).read_bytes() == bundle
        assert env["HYBRID_ES_USERNAME"] == settings.username
        env["HYBRID_ES_PASSWORD"] = settings.password.get_secret_value()
        env["HYBRID_ES_URL"] = settings.url
        env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
        env.pop("PYTHONPATH", None)
        done = subprocess.run(
            ["sh", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert kibana.requests, "the saved objects were not imported"
        assert kibana.requests[0]["path"].endswith("/api/saved_objects/_import?overwrite=false")
    assert (venv / "bin" / "hybrid-es").exists()  # installed into the fresh environment
    assert es.request("GET", "/_index_template/hybrid-es-chunks", what="reading a template")
