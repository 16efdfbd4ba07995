"""A client whose major is newer than the server's: one clear message naming both versions and
the install command, before anything else fails (issue 17).

elasticsearch-py N sends ``compatible-with=N`` on every request, which a server of major N-1
refuses (``media_type_header_exception``); there is no header that makes the 9.x client talk to
8.x, so hybrid-es stops at connect. ``scripts/test.sh``'s 8.19 lane runs this file with the 9.x
client against its 8.19 node (``HYBRID_ES_MISMATCH_URL``); elsewhere it is skipped by name.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hybrid_es.cli.exits import ExitCode
from hybrid_es.cluster.engine import client_version, connect
from hybrid_es.errors import ConfigurationError
from hybrid_es.settings import Settings

URL = os.environ.get("HYBRID_ES_MISMATCH_URL")
pytestmark = pytest.mark.skipif(
    not URL,
    reason="no Elasticsearch of another major: scripts/test.sh's 8.19 lane sets "
    "HYBRID_ES_MISMATCH_URL to its 8.19 node",
)


def test_connect_names_both_versions_and_the_install_command():
    assert client_version().startswith("9."), "run with the 9.x client (the default install)"
    with pytest.raises(ConfigurationError) as err:
        connect(Settings(url=URL or ""))
    message = str(err.value)
    assert "runs Elasticsearch 8.19." in message
    assert f"elasticsearch-py {client_version()}" in message
    assert "pip install '.[es8]'" in (err.value.hint or "")


def test_the_cli_says_it_once_without_a_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "hybrid_es.cli", "capabilities"],
        capture_output=True,
        text=True,
        env={**os.environ, "HYBRID_ES_URL": URL or ""},
        timeout=120,
    )
    assert proc.returncode == ExitCode.CONFIG
    assert "runs Elasticsearch 8.19." in proc.stderr
    assert ".[es8]" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "media_type_header_exception" not in proc.stderr
