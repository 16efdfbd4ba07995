"""A cluster on the free Basic licence: what the capability report says, and a bootstrap that
checks first and installs what the licence allows.

The node is a second one of ``scripts/es.sh`` (``HYBRID_ES_LICENSE=basic``, its own instance and
port: the ``basic_node`` fixture, started in the background when the session is collected). It is
this module's alone, so its metadata is compared whole: the probe and a refused bootstrap leave it
exactly as it was. The commands run as the node's file-realm users, whose roles are the shipped
ones (``es_templates/roles``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.settings import Settings
from tests.conftest import BASIC_PASSWORD, cluster_metadata

pytestmark = [
    pytest.mark.integration,
    pytest.mark.engine(
        "elasticsearch",
        reason="the Basic licence is Elasticsearch's; OpenSearch has no licence (its report says "
        "so in tests/integration/test_capabilities.py)",
    ),
]

TENANT_ROLES_SKIPPED = "does not include document-level security"


@dataclass
class BasicNode:
    settings: Settings
    engine: Engine

    def env(self, user: str = "elastic") -> dict[str, str]:
        """The environment of a CLI run against this node as ``user``."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRID_ES_")}
        return {
            **env,
            "HYBRID_ES_URL": self.settings.url,
            "HYBRID_ES_USERNAME": user,
            "HYBRID_ES_PASSWORD": BASIC_PASSWORD,
        }


@pytest.fixture(scope="module")
def basic(basic_node) -> BasicNode:  # type: ignore[no-untyped-def]
    node = BasicNode(basic_node, connect(basic_node))
    _forget_templates(node.engine)
    return node


def _forget_templates(engine: Engine) -> None:
    """The node is kept between runs (its data lives in the cache): templates an earlier run of
    another version installed would make this run's bootstrap an upgrade (a conflict without
    ``--force``). The module tests a first install, so it starts from none."""
    raw = engine.raw
    names = [t["name"] for t in raw.indices.get_index_template()["index_templates"]]
    for name in names:
        if name.startswith("hybrid-es"):
            raw.indices.delete_index_template(name=name)
    components = [t["name"] for t in raw.cluster.get_component_template()["component_templates"]]
    for name in components:
        if name.startswith("hybrid-es"):
            raw.cluster.delete_component_template(name=name)


def _cli(node: BasicNode, *args: str, user: str = "elastic") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hybrid_es.cli", *args],
        capture_output=True,
        text=True,
        env=node.env(user),
        timeout=300,
    )


def _said(r: subprocess.CompletedProcess[str]) -> str:
    """What a CLI run printed on stderr, its line wrapping undone."""
    return " ".join(r.stderr.split())


def _licence(report: dict[str, Any]) -> dict[str, bool | None]:
    return {row["feature"]: row["allowed"] for row in report["licence"]}


def test_the_report_says_basic_and_what_basic_leaves_out(basic):
    before = cluster_metadata(basic.engine)
    r = _cli(basic, "capabilities", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["license_type"] == "basic"
    assert _licence(report) == {
        "document-level security": False,
        "native rrf / linear retrievers": False,
    }
    assert report["native_rrf"] is False and report["linear_retriever"] is False
    assert report["native_security_store"] is False
    assert any("does not allow document-level security" in n for n in report["notes"])
    assert cluster_metadata(basic.engine) == before  # the probe wrote nothing


def test_a_user_without_the_privileges_is_refused_before_anything_is_written(basic):
    before = cluster_metadata(basic.engine)
    r = _cli(basic, "bootstrap", "--tenant", "demo-A", user="hybrid-es-app")
    assert r.returncode == 77, r.stdout + r.stderr  # permission denied
    said = _said(r)
    assert "hybrid-es-app may not bootstrap" in said
    assert "manage_index_templates" in said and "nothing was written" in said
    assert "Traceback" not in r.stderr
    assert cluster_metadata(basic.engine) == before


def test_bootstrap_installs_the_templates_and_skips_the_roles_with_the_reason(basic):
    r = _cli(basic, "bootstrap", "--tenant", "demo-A", "--json", user="hybrid-es-admin")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["applied"]
    by_kind: dict[str, set[str]] = {}
    for a in out["actions"]:
        by_kind.setdefault(a["kind"], set()).add(a["status"])
    assert by_kind["index template"] <= {"create", "unchanged"}
    assert by_kind["component template"] <= {"create", "unchanged"}
    (role,) = [a for a in out["actions"] if a["kind"] == "role"]
    assert role["name"] == "hybrid-es-tenant-reader-demo-A" and role["status"] == "skipped"
    assert "basic licence" in role["diff"] and TENANT_ROLES_SKIPPED in role["diff"]
    assert TENANT_ROLES_SKIPPED in _said(r)  # the warning, also next to --json
    assert basic.engine.get_index_template("hybrid-es-chunks") is not None
    again = probe(basic.engine)
    assert again.license_type == "basic"
