"""Loud, early refusal of a name that would silently misbehave (issue 37, item 2): a chunks,
packets, traces or corpus state name that none of the deployment's templates matches (or that
another kind's or another namespace's template matches) is refused at bootstrap and at ingest,
naming the setting to change. The bootstrap and ingest paths themselves run in
tests/integration/test_namespaces.py."""

from __future__ import annotations

import os

import pytest

from hybrid_es.cluster.names import check_names, name_problems, template_for
from hybrid_es.cluster.templates import load_templates
from hybrid_es.cluster.trace_storage import trace_templates
from hybrid_es.errors import ConfigurationError
from hybrid_es.ingest.write_checks import check_layout_names
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HYBRID_ES_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("namespace", ["", "ops"])
@pytest.mark.parametrize("storage", ["data-stream-lifecycle", "data-stream", "dated-indices"])
@pytest.mark.parametrize("tenancy", ["shared", "index-per-tenant"])
def test_every_default_name_is_its_own_templates(namespace, storage, tenancy):
    s = Settings(namespace=namespace, tenancy=tenancy)
    templates = trace_templates(load_templates(namespace=namespace), storage, 30)
    assert name_problems(s.layout(), templates) == []
    check_layout_names(s.layout(), s.corpus_state_index)


def test_the_engine_rule_picks_the_highest_priority_match():
    templates = load_templates()
    stream = template_for("hybrid-es-traces-stream", templates)
    assert stream is not None and stream.key == "hybrid-es-traces-stream"  # 210 over 200
    day = template_for("hybrid-es-traces-2026.01.01", templates)
    assert day is not None and day.key == "hybrid-es-traces"
    assert template_for("my-packets", templates) is None


@pytest.mark.parametrize(
    ("setting", "value", "says"),
    [
        ("packets_index", "my-packets", "no template of this deployment matches my-packets"),
        ("packets_index", "hybrid-es-chunks-packets", "matched by the hybrid-es-chunks template"),
        ("corpus_state_index", "state", "no template of this deployment matches state"),
        ("traces_index", "traces", "no template of this deployment matches traces-2000.01.01"),
        ("chunks_index", "hybrid-es-packets-x", "matched by the hybrid-es-packets template"),
    ],
)
def test_a_name_no_template_of_its_kind_shapes_is_refused_with_its_setting(setting, value, says):
    s = Settings(**{setting: value})
    with pytest.raises(ConfigurationError) as err:
        check_names(s.layout(), load_templates())
    variable = f"HYBRID_ES_{setting.upper()}"
    assert says in err.value.message
    assert f"{variable}={value}" in err.value.message
    assert "nothing was written" in err.value.message
    assert variable in (err.value.hint or "")


def test_a_name_of_another_namespace_is_refused_and_named_so():
    s = Settings(namespace="ops", packets_index="hybrid-es-packets", traces_index="hybrid-es.x-t")
    with pytest.raises(ConfigurationError) as err:
        check_names(s.layout(), load_templates(namespace="ops"))
    message, hint = err.value.message, err.value.hint or ""
    assert "hybrid-es-packets (HYBRID_ES_PACKETS_INDEX=hybrid-es-packets): a name of the " \
        "default namespace" in message  # fmt: skip
    assert "a name of namespace 'x'" in message
    assert "HYBRID_ES_PACKETS_INDEX and HYBRID_ES_TRACES_INDEX" in hint
    assert "HYBRID_ES_PACKETS_INDEX=hybrid-es.ops-packets" in hint
    assert "HYBRID_ES_NAMESPACE" in hint


def test_ingest_leaves_other_chunks_names_to_the_installed_templates():
    # A chunks name outside the product's names may have a template of the user's own: the
    # ingest asks the engine (policy_fields.check_new_index). One of the product's names must
    # be the namespace's own chunks name.
    check_layout_names(IndexLayout.fixed("my-chunks"), "hybrid-es-corpus-state-x")
    with pytest.raises(ConfigurationError) as err:
        check_layout_names(IndexLayout(namespace="ops"), "hybrid-es.ops-corpus-state")
    assert "HYBRID_ES_CHUNKS_INDEX=hybrid-es-chunks" in err.value.message
    with pytest.raises(ConfigurationError) as err:
        check_layout_names(IndexLayout(), "my-state")
    assert "HYBRID_ES_CORPUS_STATE_INDEX=my-state" in err.value.message
