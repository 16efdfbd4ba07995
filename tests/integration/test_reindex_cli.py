"""``hybrid-es reindex`` against the real cluster, as an operator runs it: a tenant's index
rebuilt and switched, switched back, its old generation dropped, each step's ``--json`` saying
what happened; a reader's credential refused, and a tenant with no index told so. The command
runs in the test's process (tests/cli_in_process.py)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.generations import create, current
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import WRITER_ROLE, Principal
from hybrid_es.tenancy import IndexLayout
from tests.cli_in_process import run_cli

pytestmark = pytest.mark.integration

TENANT = "rx"


@pytest.fixture
def layout(es, bootstrapped, settings) -> Iterator[IndexLayout]:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    out = IndexLayout(
        chunks=f"{settings.chunks_index}-test-rx-{tag}",
        packets=f"{settings.packets_index}-test-rx-{tag}",
        corpus_state=f"{settings.corpus_state_index}-test-rx-{tag}",
    )
    es.create_index(out.corpus_state)
    es.create_index(out.packets)
    create(es, out.chunks_for(TENANT))
    try:
        yield out
    finally:
        es.delete_index(f"{out.chunks}*,{out.packets},{out.corpus_state}")


def _env(layout: IndexLayout) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        HYBRID_ES_CHUNKS_INDEX=layout.chunks,
        HYBRID_ES_PACKETS_INDEX=layout.packets,
        HYBRID_ES_CORPUS_STATE_INDEX=layout.corpus_state,
        HYBRID_ES_TENANCY="index-per-tenant",
        HYBRID_ES_EMBEDDER="minilm",
        HYBRID_ES_TRACES="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        COLUMNS="100",
    )
    return env


def test_reindex_switches_back_and_drops_through_the_command(es, embedder, layout):
    writer = Principal(tenant=TENANT, user_id="loader", roles=(WRITER_ROLE,))
    docs = [
        Document(id=f"d{i}", tenant=TENANT, title=f"Note {i}", body=f"Pool hours, note {i}.")
        for i in range(6)
    ]
    Ingestor(es, embedder, layout=layout, corpus_state=CorpusState(es, layout.corpus_state)).ingest(
        docs, writer
    )
    name = layout.chunks_for(TENANT)
    env = _env(layout)

    built = run_cli("reindex", "--tenant", TENANT, "--json", env=env)
    assert built.returncode == 0, built.stderr
    report = json.loads(built.stdout)
    assert report["switched"] is True and report["copied"] == 6 and report["embedded"] == 0
    assert (report["source"], report["target"]) == (f"{name}+g1", f"{name}+g2")
    assert report["checks"]["records"]["new"] == 6
    assert current(es, name).index == f"{name}+g2"

    back = run_cli("reindex", "--tenant", TENANT, "--switch-back", "--json", env=env)
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["target"] == f"{name}+g1"
    assert current(es, name).index == f"{name}+g1"

    dropped = run_cli("reindex", "--tenant", TENANT, "--drop", "--json", env=env)
    assert dropped.returncode == 0, dropped.stderr
    assert json.loads(dropped.stdout) == {"dropped": [f"{name}+g2"]}
    assert es.indices(f"{name}+g*") == [f"{name}+g1"]

    table = run_cli("reindex", "--tenant", TENANT, env=env)  # the table, at 100 columns
    assert table.returncode == 0, table.stderr
    assert "switched" in table.stdout and f"{name}+g2" in table.stdout.replace("\n", "")


def test_a_tenant_with_no_index_is_told_what_to_do(layout):
    out = run_cli("reindex", "--tenant", "nobody-here", env=_env(layout))
    assert out.returncode != 0
    assert "no index" in out.stderr and "ingest" in out.stderr
