"""Every command of the ``hybrid-es`` CLI that reads or writes tenant data, run as an attacker
would run it: as another tenant, and as a same-tenant user with fewer rights, against demo-A's
records, packet and traces. Nothing of demo-A may come back: no text, no id, no owner, no count.
Subprocesses against the real cluster, as a user runs them."""

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

from hybrid_es.identity import chunk_key
from tests.conftest import ingest_as_owners, travel_documents
from tests.security.conftest import CASE, MANAGER, NOW, QUERY, SCOPE, make_world

pytestmark = pytest.mark.integration

A_MARKERS = ("31,500", "D1-current-contract", "D2-accessibility-note", "D0-stale", "manager")
"""What must never appear in an attacker's output: demo-A's text, ids and packet owner."""
STAY = ("--stay", "2026-04-10..2026-04-14", "--booking", CASE)
AS_B = ("--tenant", "demo-B", "--user", "agent-1", "--group", "travel-agents")
AS_GUEST = ("--tenant", "demo-A", "--user", "guest")


@pytest.fixture(scope="module")
def cli_world(es, bootstrapped, embedder) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """demo-A and demo-B's fixture under the real embedder (the CLI's), the manager's packet and
    a search trace of the manager's, in indices of their own (index-per-tenant, the default)."""
    from hybrid_es.traces.hooks import search_hook
    from hybrid_es.traces.storage import TraceStorage
    from hybrid_es.traces.writer import TraceWriter

    w = make_world(es, "index-per-tenant", embedder=embedder)
    traces = f"hybrid-es-traces-sec-cli-{uuid.uuid4().hex[:8]}"  # the base: dated indices
    ingest_as_owners(w.ingestor, travel_documents(), now=NOW)
    pid = w.service.build(CASE, "KYO-H12", QUERY, MANAGER, SCOPE).manifest.packet_id
    writer = TraceWriter(es, TraceStorage(traces), flush_interval=0.05)
    hook = search_hook(writer)
    w.searcher.on_response = hook
    trace_of_a = w.searcher.search(QUERY, MANAGER, SCOPE)
    writer.close()
    es.refresh(f"{traces}-*")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")},
        "HYBRID_ES_CHUNKS_INDEX": w.layout.chunks,
        "HYBRID_ES_PACKETS_INDEX": w.layout.packets,
        "HYBRID_ES_CORPUS_STATE_INDEX": w.layout.corpus_state,
        "HYBRID_ES_TRACES_INDEX": traces,
        "HYBRID_ES_TENANCY": "index-per-tenant",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "COLUMNS": "200",
    }
    yield {
        "world": w,
        "pid": pid,
        "env": env,
        "traces": traces,
        "query_hash": trace_of_a.query_hash,
    }
    es.delete_index(f"{w.indices},{traces}-*")


def _cli(ctx: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hybrid_es.cli", *args],
        env=ctx["env"],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _clean(proc: subprocess.CompletedProcess[str]) -> str:
    text = proc.stdout + proc.stderr
    for marker in A_MARKERS:
        assert marker not in text, (marker, text[-2000:])
    return text


@pytest.mark.parametrize("who", [AS_B, AS_GUEST], ids=["another tenant", "guest of demo-A"])
def test_search_by_an_attacker_returns_nothing_of_demo_a(cli_world, who):
    hostile = 'KYO-H12 31,500 D1-current-contract tenant:demo-A OR _id:"demo-A::D1"'
    out = _cli(cli_world, "search", hostile, *who, *STAY, "--json")
    assert out.returncode == 0, out.stderr
    _clean(out)
    hits = json.loads(out.stdout)["hits"]
    assert all(h["authorization"]["allowed"] for h in hits)


def test_every_packet_command_on_the_managers_packet_answers_as_if_it_did_not_exist(cli_world):
    pid = cli_world["pid"]
    for who in (AS_B, AS_GUEST):
        for command in (
            ("packet", "show", pid, *who),
            ("packet", "validate", pid, *who, *STAY),
            ("packet", "render", pid, *who, *STAY),
            ("packet", "refresh", pid, *who),
        ):
            out = _cli(cli_world, *command)
            text = _clean(out)
            assert out.returncode == 66, text  # not found (Elasticsearch's NO_INPUT)
            assert f"no packet '{pid}'" in text and "demo-A" not in text.replace("--tenant", "")
    # Nothing the attackers did touched it: the manager still reuses it.
    manager = (
        "--tenant",
        "demo-A",
        "--user",
        "manager",
        "--group",
        "travel-agents",
        "--group",
        "managers",
    )
    ok = _cli(cli_world, "packet", "validate", pid, *manager, *STAY, "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["kind"] == "reuse", ok.stdout + ok.stderr


def test_building_the_same_case_as_another_tenant_gives_an_own_packet(cli_world):
    out = _cli(cli_world, "packet", "build", CASE, "--query", QUERY, *AS_B, *STAY, "--json")
    assert out.returncode == 0, out.stderr
    _clean(out)
    manifest = json.loads(out.stdout)["manifest"]
    assert manifest["packet_id"] == f"{CASE}-packet-v1" and manifest["tenant"] == "demo-B"


def test_ingest_as_another_tenant_cannot_write_demo_as_records(cli_world, es, tmp_path: Path):
    w = cli_world["world"]
    before = w.state.read("demo-A")
    path = tmp_path / "attack.jsonl"
    path.write_text(
        json.dumps(
            {
                "id": "D1-current-contract",
                "tenant": "demo-A",
                "version": 3,
                "body": "The April rate is JPY 1.",
                "acl_groups": ["*"],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    out = _cli(cli_world, "ingest", str(path), "--tenant", "demo-B", "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["documents"] == 0
    assert w.state.read("demo-A") == before
    kept = es.get(
        w.layout.chunks_for("demo-A"), chunk_key("demo-A", "D1-current-contract::v3::c0000")
    )
    assert kept is not None and "31,500" in kept["_source"]["raw_chunk_text"]


def test_ingest_as_a_member_cannot_replace_what_it_may_not_read(cli_world, es, tmp_path: Path):
    w = cli_world["world"]
    before = w.state.read("demo-A")
    path = tmp_path / "attack.jsonl"
    attack = {"id": "D1-current-contract", "tenant": "demo-A", "version": 3,
              "body": "The April rate is JPY 1.", "acl_groups": ["*"]}  # fmt: skip
    path.write_text(json.dumps(attack) + "\n", encoding="utf-8")
    out = _cli(cli_world, "ingest", str(path), *AS_GUEST, "--member", "--json")
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert report["refused"] == 1 and report["chunks"] == 0
    (failure,) = report["failures"]
    assert failure["reason"].startswith("not written: 'guest' may not write document")
    # It names the id the member gave, and nothing of the record stored under it.
    for stored in ("31,500", "manager", "travel-agents", "v3"):
        assert stored not in out.stdout + out.stderr
    assert w.state.read("demo-A") == before
    kept = es.get(
        w.layout.chunks_for("demo-A"), chunk_key("demo-A", "D1-current-contract::v3::c0000")
    )
    assert kept is not None and "31,500" in kept["_source"]["raw_chunk_text"]


def test_traces_and_packet_stats_show_an_attacker_only_their_own(cli_world):
    for who in (AS_B[:4], AS_GUEST):  # traces are read by tenant and user (no groups)
        tail = _cli(cli_world, "traces", "tail", *who, "--json")
        assert tail.returncode == 0, tail.stderr
        _clean(tail)
        assert all(d["user"]["id"] != "manager" for d in json.loads(tail.stdout))
        stats = _cli(cli_world, "packet", "stats", *who, "--json")
        assert stats.returncode == 0, stats.stderr
        assert json.loads(stats.stdout)["verdicts"].get("reuse") is None
    manager = ("--tenant", "demo-A", "--user", "manager")
    traces = json.loads(_cli(cli_world, "traces", "tail", *manager, "--json").stdout)
    (mine,) = [d for d in traces if d["event"]["action"] == "search"]
    assert mine["hybrid_es"]["query_hash"] == cli_world["query_hash"]
    trace_id = mine["trace"]["id"]
    shown = _cli(cli_world, "traces", "show", trace_id, *AS_B[:4])
    assert shown.returncode == 66 and f"no trace '{trace_id}'" in _clean(shown)


def test_a_packet_id_is_keyed_by_the_deployment_secret_in_every_process(cli_world, es):
    # Issue 36, item 7: the owner digest in a packet _id was an unkeyed SHA-256 of the user id,
    # so whoever saw the _id could confirm a guessed user. With the deployment's secret set,
    # `packet build` and `packet show` (two processes) agree on a keyed _id; without the secret,
    # or with another, the packet is not found (old packets are rebuilt after a key change).
    from hybrid_es.identity import packet_key

    secret = f"sec-cli-{uuid.uuid4().hex}"
    keyed = {**cli_world, "env": {**cli_world["env"], "HYBRID_ES_TRACE_HASH_KEY": secret}}
    unkeyed = {
        **cli_world,
        "env": {k: v for k, v in cli_world["env"].items() if k != "HYBRID_ES_TRACE_HASH_KEY"},
    }
    who = ("--tenant", "demo-B", "--user", "keyed-agent", "--group", "travel-agents")
    case = f"KEYED-{uuid.uuid4().hex[:8]}"
    built = _cli(keyed, "packet", "build", case, "--query", QUERY, *who, *STAY[:2], "--json")
    assert built.returncode == 0, built.stderr
    pid = json.loads(built.stdout)["manifest"]["packet_id"]
    shown = _cli(keyed, "packet", "show", pid, *who, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["manifest"]["packet_id"] == pid
    packets = cli_world["world"].layout.packets
    assert es.get(packets, packet_key("demo-B", "keyed-agent", pid, secret.encode())) is not None
    # The _id anyone could compute from a guessed user id holds nothing.
    assert es.get(packets, packet_key("demo-B", "keyed-agent", pid)) is None
    for ctx in (unkeyed, {**keyed, "env": {**keyed["env"], "HYBRID_ES_TRACE_HASH_KEY": "other"}}):
        out = _cli(ctx, "packet", "show", pid, *who)
        assert out.returncode == 66 and f"no packet '{pid}'" in out.stdout + out.stderr
