"""Who may do what, without a cluster: the licence matrix, each command's privileges read from a
``_has_privileges`` answer or OpenSearch role names, the shipped roles against the commands they
serve, and bootstrap's preflight over a capability report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_es.cluster.access import (
    COMMAND_ROLES,
    COMMANDS,
    NEEDS,
    CommandAccess,
    access_from_has_privileges,
    access_from_opensearch_roles,
    has_privileges_body,
    licence_matrix,
    patterns,
)
from hybrid_es.cluster.bootstrap import preflight, roles_skipped_because
from hybrid_es.cluster.capabilities import NOT_PROBED, Capabilities
from hybrid_es.errors import AuthenticationError, ConfigurationError
from hybrid_es.tenancy import IndexLayout

ROLES = Path(__file__).resolve().parents[2] / "es_templates" / "roles"
OPENSEARCH_ROLES = ROLES.parent / "opensearch" / "roles"
LAYOUT = IndexLayout()
DLS, RETRIEVERS = "document-level security", "native rrf / linear retrievers"


@pytest.mark.parametrize(
    ("licence", "dls", "retrievers"),
    [
        ("basic", False, False),
        ("gold", False, False),
        ("platinum", True, False),
        ("enterprise", True, True),
        ("trial", True, True),
        (None, None, None),
    ],
)
def test_the_licence_matrix(licence, dls, retrievers):
    rows = {r.feature: r for r in licence_matrix("elasticsearch", licence)}
    assert (rows[DLS].allowed, rows[RETRIEVERS].allowed) == (dls, retrievers)
    assert rows[DLS].needs == "platinum, enterprise or trial"
    assert rows[RETRIEVERS].needs == "enterprise or trial"


def test_an_expired_licence_allows_nothing_and_opensearch_needs_none():
    assert not any(r.allowed for r in licence_matrix("elasticsearch", "trial", "expired"))
    assert all(
        r.allowed and r.needs == "n/a (open source)" for r in licence_matrix("opensearch", None)
    )


def _answer(granted: dict[str, set[str]], cluster: set[str]) -> dict[str, object]:
    """A ``_has_privileges`` answer to ``has_privileges_body`` that grants exactly these."""
    body = has_privileges_body(LAYOUT)
    return {
        "cluster": {p: p in cluster for p in body["cluster"]},
        "index": {
            entry["names"][0]: {
                p: p in granted.get(entry["names"][0], set()) for p in entry["privileges"]
            }
            for entry in body["index"]
        },
    }


def _role_grants(name: str) -> tuple[dict[str, set[str]], set[str]]:
    """What a shipped Elasticsearch role grants on the default index names, as literal names
    (no privilege implies another here: each command's needs are named as the roles name them)."""
    role = json.loads((ROLES / f"{name}.json").read_text(encoding="utf-8"))
    granted: dict[str, set[str]] = {}
    for pattern in patterns(LAYOUT).values():
        for entry in role["indices"]:
            if any(pattern.startswith(n.rstrip("*")) for n in entry["names"]):
                granted.setdefault(pattern, set()).update(entry["privileges"])
    return granted, set(role["cluster"])


MAY = {
    "hybrid-es-admin": {"bootstrap", "traces prune"},
    # Ingest reads the chunks it supersedes, so it could search too (untraced).
    "hybrid-es-ingest": {"ingest", "search"},
    "hybrid-es-app": {"search", "packets", "traces"},
}


@pytest.mark.parametrize("role", sorted(MAY))
def test_each_shipped_role_grants_its_commands_and_no_other(role):
    access = {
        a.command: a for a in access_from_has_privileges(_answer(*_role_grants(role)), LAYOUT)
    }
    assert {c for c, a in access.items() if a.allowed} == MAY[role], {
        c: a.describe() for c, a in access.items()
    }
    mine = {c for c, r in COMMAND_ROLES.items() if r == role}
    assert mine <= MAY[role]
    assert not any(access[c].degraded for c in mine)  # nothing optional left out either


def test_every_shipped_role_has_an_opensearch_twin():
    for role in set(COMMAND_ROLES.values()) | {"hybrid-es-tenant-reader"}:
        twin = json.loads((OPENSEARCH_ROLES / f"{role}.json").read_text(encoding="utf-8"))
        assert twin["index_permissions"], role
        assert all(p["index_patterns"] and p["allowed_actions"] for p in twin["index_permissions"])


def test_what_a_missing_privilege_costs():
    granted, cluster = _role_grants("hybrid-es-app")
    granted[patterns(LAYOUT)["traces"]] = {"read"}  # no create_doc: searches are not traced
    del granted[patterns(LAYOUT)["packets"]]
    access = {a.command: a for a in access_from_has_privileges(_answer(granted, cluster), LAYOUT)}
    assert access["search"].allowed and access["search"].degraded
    assert access["search"].describe() == (
        "yes; its traces are dropped: lacks create_doc on hybrid-es-traces*"
    )
    assert access["packets"].allowed is False
    assert access["packets"].describe() == (
        "no: lacks read on hybrid-es-packets; index on hybrid-es-packets"
    )


def test_the_privilege_check_asks_for_the_deployments_own_index_names():
    layout = IndexLayout(chunks="acme-chunks", packets="acme-packets", traces="acme-traces")
    names = {e["names"][0] for e in has_privileges_body(layout)["index"]}
    assert names == {"acme-chunks*", "acme-packets", "acme-traces*", layout.corpus_state}
    assert set(has_privileges_body(layout)["cluster"]) == {
        p for need in NEEDS.values() for p in need.cluster
    }


def test_opensearch_access_by_role_name_and_unknown_otherwise():
    access = {a.command: a for a in access_from_opensearch_roles(["hybrid-es-app", "own_index"])}
    assert {c for c, a in access.items() if a.allowed} == {"search", "packets", "traces"}
    assert access["search"].basis == "role hybrid-es-app, by its name"
    assert access["ingest"].allowed is None and "own_index" in access["ingest"].describe()
    assert all(a.allowed for a in access_from_opensearch_roles(["all_access"]))
    reader = {
        a.command: a.allowed for a in access_from_opensearch_roles(["hybrid-es-tenant-reader-x"])
    }
    assert reader["search"] is True and reader["packets"] is None
    assert set(access) == set(COMMANDS)


def _caps(
    licence: str | None = "trial",
    *,
    store: bool = True,
    flavor: str = "elasticsearch",
    may: dict[str, bool | None] | None = None,
) -> Capabilities:
    grants = dict.fromkeys(COMMANDS, True) | (may or {})
    return Capabilities(
        flavor=flavor,
        server_version="9.5.4",
        license_type=licence,
        security_enabled=True,
        native_rrf=False,
        linear_retriever=False,
        knn=None,
        index_options=None,
        analyzers=("standard",),
        native_security_store=store,
        user="someone",
        licence=licence_matrix(flavor, licence),
        privileges=tuple(
            CommandAccess(command=c, allowed=v, missing=() if v else ("a privilege",))
            for c, v in grants.items()
        ),
    )


def test_preflight_refuses_a_credential_that_may_not_bootstrap():
    with pytest.raises(AuthenticationError) as refused:
        preflight(_caps(may={"bootstrap": False}))
    assert refused.value.status == 403
    assert "someone may not bootstrap" in refused.value.message
    assert "nothing was written" in refused.value.message
    assert "hybrid-es-admin" in (refused.value.hint or "")


def test_preflight_skips_roles_the_cluster_cannot_hold_and_refuses_missing_privileges():
    assert preflight(_caps("trial")) == ""
    assert preflight(_caps("trial"), ("demo-A",)) == ""
    basic = preflight(_caps("basic", store=False), ("demo-A",))
    assert "basic licence does not include document-level security" in basic
    assert "cannot store roles" in preflight(_caps("trial", store=False), ("demo-A",))
    assert "licence could not be read" in preflight(_caps(None), ("demo-A",))
    with pytest.raises(AuthenticationError, match="may not install the tenant reader roles"):
        preflight(_caps("trial", may={"bootstrap --tenant": False}), ("demo-A",))
    # Unknown privileges (OpenSearch without a known role) leave it to the cluster.
    assert preflight(_caps(None, flavor="opensearch", may={"bootstrap": None}), ("demo-A",)) == ""
    with pytest.raises(ConfigurationError, match="nothing was written"):
        preflight(_caps("trial"), ("bad{tenant}",))


def test_security_off_means_no_roles_to_install():
    caps = _caps("basic").model_copy(update={"security_enabled": False})
    assert "security is off" in roles_skipped_because(caps)


def test_what_was_not_probed_says_how_to_probe_it():
    rows = dict(_caps().rows())
    assert rows["knn / vectors"] == NOT_PROBED == "not probed (needs --probe-writes)"
    assert rows["vector index types"] == NOT_PROBED
    assert rows["probe"] == "read-only"
    assert rows["licence matrix"] == (
        "document-level security: yes (needs platinum, enterprise or trial)\n"
        "native rrf / linear retrievers: yes (needs enterprise or trial)"
    )


@pytest.mark.parametrize("flavor", ["elasticsearch", "opensearch"])
def test_preflight_refuses_reader_roles_in_the_shared_layout_before_anything(flavor):
    # Issue 23: in one shared index a reader role rests on document-level security alone,
    # which OpenSearch's suggesters ignore and BM25 statistics cross on both engines.
    shared = IndexLayout(mode="shared")
    with pytest.raises(ConfigurationError) as refused:
        preflight(_caps(flavor=flavor), ("demo-A",), shared)
    assert "shared tenancy" in refused.value.message
    assert "nothing was written" in refused.value.message
    assert "index-per-tenant" in (refused.value.hint or "")
    assert preflight(_caps(flavor=flavor), (), shared) == ""  # no reader asked for: fine


def test_the_capability_report_says_whether_reader_credentials_can_be_made():
    rows = dict(_caps().rows())
    assert rows["tenant reader credentials"].startswith("one role per tenant")
    shared = dict(_caps().model_copy(update={"tenancy": "shared"}).rows())
    assert shared["tenant reader credentials"].startswith("refused (shared tenancy)")


def test_the_source_read_needs_read_and_view_index_metadata_and_reports_more():
    from hybrid_es.cluster.access import (
        SOURCE_MORE,
        SOURCE_NEEDS,
        source_access_from_has_privileges,
        source_privileges_body,
    )

    body = source_privileges_body("legacy-docs")
    assert body == {
        "index": [{"names": ["legacy-docs"], "privileges": [*SOURCE_NEEDS, *SOURCE_MORE]}]
    }

    def answer(*held: str) -> dict[str, object]:
        privs = body["index"][0]["privileges"]
        return {"index": {"legacy-docs": {p: p in held for p in privs}}}

    exact = source_access_from_has_privileges(answer("read", "view_index_metadata"), "legacy-docs")
    assert exact.allowed and not exact.degraded
    assert exact.describe() == "yes (_has_privileges)"
    lacking = source_access_from_has_privileges(answer("read"), "legacy-docs")
    assert not lacking.allowed and lacking.missing == ("view_index_metadata on legacy-docs",)
    wide = source_access_from_has_privileges(
        answer("read", "view_index_metadata", "write", "manage"), "legacy-docs"
    )
    assert wide.allowed and wide.degraded == (
        "holds more than a source read needs: write, manage on legacy-docs",
    )


def test_the_shipped_source_reader_role_grants_exactly_the_source_read():
    from hybrid_es.cluster.access import SOURCE_NEEDS

    role = json.loads((ROLES / "hybrid-es-source-reader.json").read_text(encoding="utf-8"))
    assert role["cluster"] == []
    (entry,) = role["indices"]
    assert entry["names"] == ["{{source_index}}"] and tuple(entry["privileges"]) == SOURCE_NEEDS
    twin = json.loads(
        (OPENSEARCH_ROLES / "hybrid-es-source-reader.json").read_text(encoding="utf-8")
    )
    (os_entry,) = twin["index_permissions"]
    assert os_entry["index_patterns"] == ["{{source_index}}"]
    assert "read" in os_entry["allowed_actions"]
    assert not {"crud", "write", "manage", "indices_all"} & set(os_entry["allowed_actions"])
