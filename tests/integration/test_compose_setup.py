"""The compose quick start's ``setup`` service, run for real: its command, read from
docker-compose.yml itself, against the node the suite runs on (issue 25: the service installed
the package without ``[cli]``, so ``hybrid-es bootstrap`` exited 78 and nothing was installed).

No Docker engine runs on the build machines, so the service's world is mapped onto this one: the
mounted repository (``/app``) is this checkout, its scratch copy (``/tmp/app``) a temporary
folder, ``python:3.11-slim``'s interpreter a fresh virtual environment of this machine's Python
(so the install resolves the package's own dependencies from scratch, as the image does),
``http://elasticsearch:9200`` the node under test with the compose file's user and password
variable, and ``http://kibana:5601`` a local stand-in for Kibana's saved-objects import API (no
Kibana runs here). What is verified: the command line as written installs everything the
command it runs needs, bootstraps the node, and imports the saved objects. What is not: the
images, the health checks and the start order (tests/unit/test_compose.py checks them against
the Compose Specification's schema).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fixtures.https_stand_in import HttpsStandIn

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _password_default(value: str) -> str:
    """``${HYBRID_ES_PASSWORD:-hybrid-es-dev}`` -> ``hybrid-es-dev`` (the compose default)."""
    return value.split(":-", 1)[1].rstrip("}") if ":-" in value else value


def test_the_setup_service_command_bootstraps_a_real_node(es, settings, tmp_path):
    if es.flavor != "elasticsearch" or not es.version.startswith("9."):
        pytest.skip(f"the compose file runs Elasticsearch 9.5.4; this node is {es.version}")
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    setup = compose["services"]["setup"]
    assert setup["command"][:2] == ["sh", "-c"]
    mount = next(v for v in setup["volumes"] if v.startswith(".:"))
    inside = mount.split(":")[1]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    with HttpsStandIn(None) as kibana:
        script = (  # one pass each: the scratch copy's path holds the mount's
            setup["command"][2]
            .replace("/tmp/app", "\0scratch\0")
            .replace(inside, str(ROOT))
            .replace("\0scratch\0", str(tmp_path / "app"))
            .replace("http://kibana:5601", kibana.url)
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRID_ES_")}
        env.update({k: _password_default(str(v)) for k, v in setup["environment"].items()})
        assert env["HYBRID_ES_USERNAME"] == settings.username
        assert env["HYBRID_ES_PASSWORD"] == settings.password.get_secret_value()
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
        assert kibana.requests[0]["path"].endswith("/api/saved_objects/_import?overwrite=true")
    assert (venv / "bin" / "hybrid-es").exists()  # installed into the fresh environment
    assert es.request("GET", "/_index_template/hybrid-es-chunks", what="reading a template")
