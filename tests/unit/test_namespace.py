"""The deployment namespace (issue 37, item 1): one setting names a deployment, every object
hybrid-es creates carries it, and no two namespaces' names can overlap, the default's included:
no index pattern of one namespace's templates or roles matches a name of another's
(``hybrid_es.namespace`` gives the argument; the property test below checks it on generated
namespaces and names)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_es.cluster.policy_fields import matches
from hybrid_es.cluster.templates import (
    DEPLOYMENT_ROLES,
    backend_role,
    deployment_role_names,
    load_pipelines,
    load_templates,
    render_deployment_role,
    render_role,
    role_name,
)
from hybrid_es.errors import ConfigurationError
from hybrid_es.namespace import (
    check_namespace,
    default_name,
    in_namespace,
    namespace_of,
    prefix,
)
from hybrid_es.settings import Settings, configuration_error
from hybrid_es.tenancy import IndexLayout
from tests.conftest import examples

NAMESPACES = st.one_of(st.just(""), st.from_regex(r"[a-z0-9_]{1,32}", fullmatch=True))
FILLS = st.text(alphabet="ab0_-.*", max_size=12)
"""What a ``*`` of a pattern stands for in a generated name (``*`` itself included: a pattern
of one namespace filled into another's)."""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HYBRID_ES_"):
            monkeypatch.delenv(name)


def patterns(namespace: str) -> list[str]:
    """Every index pattern a deployment of ``namespace`` installs: its index templates' (both
    engines') and its roles' (both engines')."""
    layout = Settings(namespace=namespace).layout()
    out = [
        p
        for flavor in ("elasticsearch", "opensearch")
        for t in load_templates("standard", None, flavor, namespace)  # type: ignore[arg-type]
        for p in t.body.get("index_patterns", [])
    ]
    for flavor, key, names in (
        ("elasticsearch", "indices", "names"),
        ("opensearch", "index_permissions", "index_patterns"),
    ):
        for role in DEPLOYMENT_ROLES:
            body = render_deployment_role(role, layout, flavor=flavor)  # type: ignore[arg-type]
            out += [p for entry in body.get(key, []) for p in entry[names]]
    return out


def test_every_shipped_name_and_pattern_is_the_products():
    # The argument's premise: every default name starts with "hybrid-es-", so a namespace's
    # starts with "hybrid-es.<ns>-".
    assert all(p.startswith("hybrid-es-") for p in patterns(""))
    names = [t.name for t in load_templates()] + [p.name for p in load_pipelines()]
    assert all(n.startswith("hybrid-es-") for n in [*names, *DEPLOYMENT_ROLES])


@settings(database=None, max_examples=examples(300), deadline=None)
@given(NAMESPACES, NAMESPACES, st.data())
def test_no_pattern_of_one_namespace_matches_a_name_of_another(a, b, data):
    if a == b:
        return
    mine, theirs = patterns(a), patterns(b)
    pattern = data.draw(st.sampled_from(mine))
    fills = data.draw(st.lists(FILLS, min_size=pattern.count("*"), max_size=pattern.count("*")))
    parts = pattern.split("*")
    name = parts[0] + "".join(f + p for f, p in zip(fills, parts[1:], strict=True))
    assert matches(name, [pattern])
    assert namespace_of(name) == a
    assert not matches(name, theirs), (name, a, b)


@settings(database=None, max_examples=examples(200), deadline=None)
@given(NAMESPACES, NAMESPACES)
def test_object_names_of_two_namespaces_are_disjoint(a, b):
    def names(ns: str) -> set[str]:
        layout = Settings(namespace=ns).layout()
        out = {t.name for t in load_templates(namespace=ns)}
        out |= {p.name for p in load_pipelines(namespace=ns)}
        out |= set(deployment_role_names(ns))
        out |= {role_name("demo-A", ns), backend_role("demo-A", ns)}
        out |= {layout.chunks_for("demo-A"), layout.packets, layout.corpus_state}
        return out | {layout.traces_stream()}

    if a != b:
        assert names(a).isdisjoint(names(b))
    assert all(namespace_of(n) == a for n in names(a))


def test_the_default_namespace_keeps_todays_names():
    s = Settings()
    assert (s.namespace, s.chunks_index, s.packets_index) == (
        "",
        "hybrid-es-chunks",
        "hybrid-es-packets",
    )
    assert (s.traces_index, s.corpus_state_index) == ("hybrid-es-traces", "hybrid-es-corpus-state")
    assert s.layout() == IndexLayout()
    assert [t.name for t in load_templates()] == [t.key for t in load_templates()]
    assert deployment_role_names() == DEPLOYMENT_ROLES
    assert role_name("acme") == "hybrid-es-tenant-reader-acme"


def test_a_namespace_names_the_indices_templates_roles_and_pipelines():
    s = Settings(namespace="team_a")
    assert s.layout() == IndexLayout(
        chunks="hybrid-es.team_a-chunks",
        packets="hybrid-es.team_a-packets",
        traces="hybrid-es.team_a-traces",
        corpus_state="hybrid-es.team_a-corpus-state",
        namespace="team_a",
    )
    chunks = next(t for t in load_templates(namespace="team_a") if t.key == "hybrid-es-chunks")
    assert chunks.name == "hybrid-es.team_a-chunks"
    assert chunks.body["index_patterns"] == ["hybrid-es.team_a-chunks*"]
    assert chunks.body["composed_of"] == ["hybrid-es.team_a-settings", "hybrid-es.team_a-analysis"]
    # The mappings and priorities are the file's: only names move.
    default = next(t for t in load_templates() if t.key == "hybrid-es-chunks")
    assert chunks.body["template"] == default.body["template"]
    assert chunks.body["priority"] == default.body["priority"]
    assert {p.name for p in load_pipelines(namespace="team_a")} == {
        "hybrid-es.team_a-linear",
        "hybrid-es.team_a-rrf",
    }
    assert deployment_role_names("team_a")[0] == "hybrid-es.team_a-admin"
    name, body = render_role("demo-A", s.layout())
    assert name == "hybrid-es.team_a-tenant-reader-demo-A"
    assert body["indices"][0]["names"] == ["hybrid-es.team_a-chunks-t-demo-_a"]


def test_an_index_name_set_beside_the_namespace_is_kept():
    s = Settings(namespace="a", chunks_index="hybrid-es.a-chunks-eu")
    assert (s.chunks_index, s.packets_index) == ("hybrid-es.a-chunks-eu", "hybrid-es.a-packets")


def test_the_namespace_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HYBRID_ES_NAMESPACE", "ops")
    monkeypatch.setenv("HYBRID_ES_PACKETS_INDEX", "hybrid-es.ops-packets-2")
    s = Settings()
    assert (s.chunks_index, s.packets_index) == ("hybrid-es.ops-chunks", "hybrid-es.ops-packets-2")
    monkeypatch.setenv("HYBRID_ES_NAMESPACE", "")
    assert Settings().chunks_index == "hybrid-es-chunks"


@pytest.mark.parametrize("bad", ["a-b", "a.b", "A", "x" * 33, "ü", "a b", "hybrid-es"])
def test_a_namespace_that_could_overlap_another_is_refused(bad):
    with pytest.raises(ValueError):
        check_namespace(bad)
    with pytest.raises(Exception) as info:
        Settings(namespace=bad)
    err = configuration_error(info.value)  # type: ignore[arg-type]
    assert isinstance(err, ConfigurationError)
    assert "HYBRID_ES_NAMESPACE" in err.message and "'-'" in err.message


def test_names_move_in_and_out_of_a_namespace():
    assert prefix("") == "hybrid-es" and prefix("ns") == "hybrid-es.ns"
    assert in_namespace("hybrid-es-traces*-stream", "ns") == "hybrid-es.ns-traces*-stream"
    assert in_namespace("hybrid-es-chunks", "") == "hybrid-es-chunks"
    assert default_name("hybrid-es.ns-admin") == "hybrid-es-admin"
    assert default_name("my-index") == "my-index"
    assert namespace_of("hybrid-es-chunks") == ""
    assert namespace_of("hybrid-es.ns-chunks-t-x") == "ns"
    assert namespace_of(".ds-hybrid-es.ns-traces-stream") is None
    assert namespace_of("hybrid-esx-chunks") is None
    with pytest.raises(ValueError):
        in_namespace("my-chunks", "ns")
