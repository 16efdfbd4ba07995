"""Indices behind aliases from the start, and upgrades that need no release notes (issue 37,
item 4), on the engine under test.

A new tenant's first ingest makes generation 1 behind the alias of its index name, as bootstrap
does for the packets and corpus state indices; a delete by the name removes the generations.
Bootstrap reports, per existing index, whether it is current, short of new fields (added in
place; ``new-fields`` in a check), or needs a rebuild, naming the command (another analysis,
another model than the fixed embedder, an index of an earlier release to adopt first); the
command does it; ``hybrid-es verify`` fails the same indices with the same command. Each test
runs in a namespace of its own, so that no other test's bootstrap meets its indices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hybrid_es import Document, HybridEs, Principal, Settings
from hybrid_es.cluster.bootstrap import Action, BootstrapReport, bootstrap
from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.cluster.generations import Generation, create, current
from hybrid_es.encoders.embedder_choice import models_served
from hybrid_es.verify.indices import check_indices
from hybrid_es.verify.run import verify
from tests import namespaces
from tests.conftest import HashEmbedder, owner

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXTRA_ANALYZER = {"settings": {"analysis": {"analyzer": {"hes_extra": {"type": "standard"}}}}}
"""An index created with one analyzer more than the templates give: another analysis."""


@pytest.fixture
def ns(es: Engine) -> Iterator[str]:
    name = f"up{uuid.uuid4().hex[:8]}"
    try:
        yield name
    finally:
        namespaces.drop(es, name)


def _deployment(settings: Settings) -> HybridEs:
    return HybridEs(settings, client=connect(settings), embedder=HashEmbedder(), reranker=None)


def _ingest(hes: HybridEs, tenant: str, **metadata: Any) -> str:
    doc = Document(
        id=f"doc-{uuid.uuid4().hex[:6]}",
        tenant=tenant,
        title="Kyoto rates",
        body="The Kyoto hotel April room rate is JPY 31,500 a night.",
        acl_groups=("staff",),
        metadata=metadata,
    )
    report = hes.ingest([doc], owner(tenant))
    assert not report.failed, report.failed
    return doc.id


def _index(report: BootstrapReport, name: str) -> Action:
    (found,) = [a for a in report.actions if a.kind == "index" and a.name == name]
    return found


def _cli(namespace: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hybrid_es.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1",
            "HYBRID_ES_NAMESPACE": namespace,
            **env,
        },
        timeout=300,
    )


def test_a_new_tenants_first_ingest_makes_generation_1_behind_its_alias(es, caps, ns):
    s = Settings(namespace=ns)
    hes = _deployment(s)
    try:
        first = hes.bootstrap()
        layout = s.layout()
        for shared in (layout.packets, layout.corpus_state):
            assert _index(first, shared).status == "create"
            assert current(es, shared) == Generation(shared, f"{shared}+g1", 1, True)
        doc = _ingest(hes, "acme")
        name = layout.chunks_for("acme")
        assert es.indices(f"{name}*") == [f"{name}+g1"]
        assert current(es, name) == Generation(name, f"{name}+g1", 1, True)
        reader = Principal(tenant="acme", user_id="ana", groups=("staff",))
        assert doc in {h.doc_id for h in hes.search("Kyoto April rate", reader).hits}
        # Bootstrap names each index as its readers do, and finds it current.
        check = bootstrap(es, caps, s, check=True)
        indices = {a.name: a.status for a in check.actions if a.kind == "index"}
        assert indices == dict.fromkeys([name, layout.packets, layout.corpus_state], "unchanged")
        # The capability report names each generation with the alias it is served as.
        shown = {i.index: i.served_as for i in probe(es, layout=layout).indices or ()}
        assert shown[f"{name}+g1"] == name and shown[f"{layout.packets}+g1"] == layout.packets
    finally:
        hes.close()
    es.delete_index(name)  # by the alias's name: its generations go
    assert es.indices(f"{name}*") == [] and current(es, name) is None
    assert current(es, layout.corpus_state) is not None


def test_bootstrap_reports_the_fields_an_index_lacks_and_adds_them(es, caps, ns):
    before = Settings(namespace=ns)
    hes = _deployment(before)
    try:
        hes.bootstrap()
        _ingest(hes, "acme")
    finally:
        hes.close()
    name = before.layout().chunks_for("acme")
    declared = Settings(namespace=ns, filterable_fields="team:keyword")
    # The templates that declare the field, the indices left as they are.
    bootstrap(es, caps, declared, force=True, create_indices=False)
    check = _index(bootstrap(es, caps, declared, check=True), name)
    assert (check.status, check.command) == ("new-fields", "hybrid-es bootstrap")
    assert "missing fields: meta_filter" in check.diff
    applied = _index(bootstrap(es, caps, declared), name)
    assert (applied.status, applied.diff) == ("update", "added fields: meta_filter")
    (mapping,) = es.get_mapping(name).values()
    assert mapping["properties"]["meta_filter"]["properties"]["team"]["type"] == "keyword"
    assert _index(bootstrap(es, caps, declared, check=True), name).status == "unchanged"


def test_another_analysis_or_model_needs_a_rebuild_that_bootstrap_and_verify_name(es, caps, ns):
    s = Settings(namespace=ns)
    layout = s.layout()
    hes = _deployment(s)
    try:
        hes.bootstrap()
        analysed = layout.chunks_for("acme")
        create(es, analysed, EXTRA_ANALYZER)  # as an earlier analysis profile left it
        _ingest(hes, "acme")
        _ingest(hes, "globex")
        legacy = layout.chunks_for("initech")
        es.create_index(legacy, EXTRA_ANALYZER)  # an earlier release's: no alias
        _ingest(hes, "initech")

        report = bootstrap(es, caps, s, check=True)
        globex_index = layout.chunks_for("globex")
        acme, globex, initech = (_index(report, n) for n in (analysed, globex_index, legacy))
        assert (acme.status, acme.command) == ("rebuild", "hybrid-es reindex --tenant acme")
        assert "analyzer hes_extra" in acme.diff and "run: hybrid-es reindex" in acme.diff
        assert globex.status == "unchanged"
        assert (initech.status, initech.command) == (
            "rebuild",
            "hybrid-es reindex --adopt --tenant initech && hybrid-es reindex --tenant initech",
        )
        # Another model than the one the deployment fixes: the command names it.
        e5 = Settings(namespace=ns, embedder="e5")
        fixed = bootstrap(es, caps, e5, check=True, models=models_served("e5"))
        assert _index(fixed, globex_index).command == (
            "hybrid-es reindex --tenant globex --embedder e5"
        )
        # Applied, bootstrap goes on (the indices serve until rebuilt) and says the same.
        applied = bootstrap(es, caps, s)
        assert {a.name for a in applied.pending} == {analysed, legacy}

        # verify fails the same indices with the same command, read-only.
        item = check_indices(es, s)
        assert item.status == "fail" and "2 of 5 indices need a rebuild" in item.reason
        assert "run: hybrid-es reindex" in item.reason
        assert any(d.startswith(f"{legacy} ({legacy}): rebuild") for d in item.details)
        assert verify(es, s, caps=caps).check(9).status == "fail"

        # The command does it: the next generation takes the installed templates' analysis.
        hes.rebuild(owner("acme"))
        after = bootstrap(es, caps, s, check=True)
        assert _index(after, analysed).status == "unchanged"
        assert current(es, analysed) == Generation(analysed, f"{analysed}+g2", 2, True)
    finally:
        hes.close()

    cli = _cli(ns, "bootstrap", "--check", "--json")
    assert cli.returncode == 1, cli.stderr
    rows = {a["name"]: a for a in json.loads(cli.stdout)["actions"] if a["kind"] == "index"}
    assert rows[legacy]["status"] == "rebuild"
    assert rows[legacy]["command"].startswith("hybrid-es reindex --adopt --tenant initech")
    assert f"warning: index {legacy} needs a rebuild" in cli.stderr
    table = _cli(ns, "bootstrap", "--check", COLUMNS="200")
    assert "hybrid-es reindex --adopt --tenant initech" in table.stdout
    checked = _cli(ns, "verify", "--json")
    assert checked.returncode == 1, checked.stderr
    (nine,) = [c for c in json.loads(checked.stdout)["checks"] if c["item"] == 9]
    assert nine["status"] == "fail" and "hybrid-es reindex --adopt --tenant initech" in str(nine)
