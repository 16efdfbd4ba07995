"""The role of the people who read traces in Kibana (es_templates/roles/hybrid-es-trace-reader.json
and its OpenSearch twin): the traces and nothing else, read-only, and in Kibana only Discover and
Dashboards in the default space. Read from the files themselves; ``bootstrap --roles`` installs
it with the other deployment roles, on the deployment's own traces name."""

from __future__ import annotations

import json
from pathlib import Path

from hybrid_es.cluster.templates import DEPLOYMENT_ROLES, render_deployment_role
from hybrid_es.tenancy import IndexLayout

NAME = "hybrid-es-trace-reader"
ROOT = Path(__file__).resolve().parents[2] / "es_templates"
ROLE = json.loads((ROOT / "roles" / f"{NAME}.json").read_text(encoding="utf-8"))
TWIN = json.loads((ROOT / "opensearch" / "roles" / f"{NAME}.json").read_text(encoding="utf-8"))
TRACES = "hybrid-es-traces*"  # the default HYBRID_ES_TRACES_INDEX, and every name under it


def test_its_index_privileges_cover_the_traces_only_and_only_read_them():
    assert ROLE["indices"], "the role must read the traces"
    for entry in ROLE["indices"]:
        assert entry["names"] == [TRACES], entry
        assert "read" in entry["privileges"]
        assert set(entry["privileges"]) <= {"read", "view_index_metadata"}, entry
        # no document- or field-level exception that a later edit could widen unnoticed
        assert set(entry) == {"names", "privileges"}, entry
    assert ROLE["cluster"] == []
    # nothing else that grants data: run-as another user, other clusters' indices
    assert set(ROLE) <= {"description", "cluster", "indices", "applications", "metadata"}


def test_in_kibana_it_may_use_discover_and_dashboards_read_only_in_the_default_space():
    (app,) = ROLE["applications"]
    assert app["application"] == "kibana-.kibana"
    assert app["resources"] == ["space:default"]
    # Kibana 9's feature ids (feature_<id>.<privilege>): read, never all
    assert sorted(app["privileges"]) == ["feature_dashboard_v2.read", "feature_discover_v2.read"]


def test_bootstrap_roles_installs_it_on_the_deployments_traces_name():
    assert NAME in DEPLOYMENT_ROLES
    layout = IndexLayout(chunks="acme-chunks", packets="acme-packets", traces="acme-traces")
    body = render_deployment_role(NAME, layout)
    assert [e["names"] for e in body["indices"]] == [["acme-traces*"]]
    assert body["applications"] == ROLE["applications"]
    assert "description" not in body  # as the other roles are sent
    assert render_deployment_role(NAME)["indices"][0]["names"] == [TRACES]


def test_the_opensearch_twin_reads_the_traces_only():
    assert TWIN["index_permissions"]
    for entry in TWIN["index_permissions"]:
        assert entry["index_patterns"] == [TRACES], entry
        assert set(entry["allowed_actions"]) <= {"read", "indices:admin/mappings/get"}, entry
    assert all(a.endswith("_ro") for a in TWIN["cluster_permissions"])
    for tenant in TWIN.get("tenant_permissions", []):
        assert tenant["allowed_actions"] == ["kibana_all_read"]
    layout = IndexLayout(traces="acme-traces")
    body = render_deployment_role(NAME, layout, flavor="opensearch")
    assert [e["index_patterns"] for e in body["index_permissions"]] == [["acme-traces*"]]
