"""``hybrid-es ingest`` against the real cluster, with a user's arguments and environment. What
the command writes, prints and exits with runs in the test's process (tests/cli_in_process.py:
the console script's entry point, without the 10 s of imports a fresh process pays); what only a
process shows runs as one: an ingest killed with SIGKILL mid-run and restarted (it must end with
nothing duplicated and nothing missing), one that dies between its writes and its watermark, and
colour chosen from the terminal at start-up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hybrid_es.cli.exits import ExitCode
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.chunking import chunk_text, counter_for
from hybrid_es.ingest.indexer import chunk_id
from tests.cli_in_process import run_cli
from tests.conftest import unguarded
from tests.fixtures.messages_stand_in import MessagesStandIn

pytestmark = pytest.mark.integration


def _env(names: dict[str, str], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        HYBRID_ES_CHUNKS_INDEX=names["chunks"],
        HYBRID_ES_CORPUS_STATE_INDEX=names["corpus_state"],
        HYBRID_ES_TENANCY="shared",  # the test's own chunks index, as named
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        **extra,
    )
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "hybrid_es.cli", "ingest", *args]


def _run(names: dict[str, str], *args: str, **env: str) -> tuple[int, dict[str, Any], str]:
    proc = run_cli("ingest", *args, "--json", env=_env(names, **env))
    out = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return proc.returncode, out, proc.stderr


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "kyo-h12.md").write_text(
        "# Supplier contract KYO-H12\n\nThe April rate is JPY 31,500 per night.", encoding="utf-8"
    )
    (root / "kyo-h12.md.meta.json").write_text('{"contract_ids": ["KYO-H12"]}', encoding="utf-8")
    (root / "route.txt").write_text("Step-free route from the lobby to the room.", "utf-8")
    (root / "latin1.txt").write_bytes(b"caf\xe9")
    return root


def test_folder_ingest_reports_rejected_files_exits_1_and_skips_everything_on_rerun(
    es, fresh_indices, tmp_path
):
    root = _folder(tmp_path)
    rc, out, _ = _run(fresh_indices, str(root), "--tenant", "demo-A")
    assert rc == 1  # the latin-1 file was rejected; the rest was written
    assert (out["documents"], out["chunks"], out["failed"], out["rejected_input"]) == (2, 2, 0, 1)
    assert "latin1.txt: not UTF-8" in out["rejected"][0]
    assert out["contextualizer"] == "extractive-v2" and out["cost_usd"] == 0.0
    key = chunk_key("demo-A", chunk_id("kyo-h12.md", 1, 0))
    src = es.get(fresh_indices["chunks"], key)["_source"]
    assert src["title"] == "Supplier contract KYO-H12" and src["contract_ids"] == ["KYO-H12"]
    assert src["context_header"].startswith("Document: Supplier contract KYO-H12.")

    (root / "latin1.txt").unlink()
    rc, out, _ = _run(fresh_indices, str(root), "--tenant", "demo-A")
    assert rc == 0 and (out["documents"], out["chunks"], out["skipped_unchanged"]) == (2, 0, 2)


def test_dry_run_writes_nothing_and_fail_fast_stops_at_the_first_bad_line(
    es, fresh_indices, tmp_path
):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a", "tenant": "t", "body": "fine."}\n{broken\n', encoding="utf-8")
    rc, out, _ = _run(fresh_indices, str(path), "--tenant", "t", "--dry-run")
    assert rc == 1 and (out["documents"], out["chunks"], out["rejected_input"]) == (1, 1, 1)
    assert unguarded(es).count(fresh_indices["chunks"]) == 0
    rc, out, err = _run(fresh_indices, str(path), "--tenant", "t", "--fail-fast")
    err = " ".join(err.split())  # rich wraps long lines
    assert rc == ExitCode.DATA_ERROR and "line 2" in err and "malformed JSON" in err
    assert unguarded(es).count(fresh_indices["chunks"]) == 0


def test_anthropic_contextualizer_from_the_cli_reports_calls_and_cost(fresh_indices, tmp_path):
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": f"d{i}", "tenant": "t", "body": f"Contract clause {i} fixes a rate."}
        for i in range(3)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    with MessagesStandIn() as srv:
        env = {"ANTHROPIC_BASE_URL": srv.base_url, "ANTHROPIC_API_KEY": "test-key"}
        args = (str(path), "--tenant", "t", "--contextualizer", "anthropic")
        rc, out, _ = _run(fresh_indices, *args, **env)
        assert rc == 0 and out["llm_calls"] == srv.calls == 3 and out["cost_usd"] > 0
        assert out["contextualizer"] == "anthropic-ctx-v1@claude-haiku-4-5"
        rc, out, _ = _run(fresh_indices, *args, **env)
        assert rc == 0 and out["llm_calls"] == 0 and srv.calls == 3


def test_an_ingest_killed_mid_run_and_restarted_ends_with_no_duplicates_and_nothing_missing(
    es, embedder, fresh_indices, tmp_path
):
    path = tmp_path / "many.jsonl"
    rows = [
        {
            "id": f"doc-{i:03d}",
            "tenant": "t",
            "title": f"Itinerary {i}",
            "body": " ".join(
                f"Day {d} of itinerary {i} visits temple {d} and returns to hotel {i} by bus."
                for d in range(18)
            ),
        }
        for i in range(120)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    count = counter_for(embedder)
    expected = {
        chunk_key("t", chunk_id(r["id"], 1, c.number))
        for r in rows
        for c in chunk_text(r["body"], size=200, overlap=40, count=count)
    }
    index = fresh_indices["chunks"]

    proc = subprocess.Popen(
        _cli(str(path), "--tenant", "t", "--batch-size", "4", "--json"),
        env=_env(fresh_indices),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            es.refresh(index)
            if unguarded(es).count(index) >= 8:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the ingest finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    es.refresh(index)
    written = unguarded(es).count(index)
    assert 0 < written < len(expected)

    rc, out, err = _run(fresh_indices, str(path), "--tenant", "t")
    assert rc == 0, err
    assert out["documents"] == 120 and out["failed"] == 0
    assert (
        out["skipped_unchanged"] > 0
        and out["skipped_unchanged"] + (out["documents"] - out["skipped_unchanged"]) == 120
    )
    everything = {"size": 10_000, "_source": False, "query": {"match_all": {}}}
    stored = {h["_id"] for h in unguarded(es).search(index, everything)["hits"]["hits"]}
    assert stored == expected  # nothing missing, nothing extra
    with_vectors = unguarded(es).count(index, {"exists": {"field": "embedding"}})
    assert with_vectors == len(expected)


def test_ingest_for_one_tenant_refuses_by_line_every_document_of_another(
    es, fresh_indices, tmp_path
):
    # Issue 11 C: `ingest --tenant B` writes only B; A's records and watermark are untouched.
    a_file = tmp_path / "a.jsonl"
    a_file.write_text('{"id": "R", "body": "A\'s rate is JPY 31,500."}\n', encoding="utf-8")
    rc, out, err = _run(fresh_indices, str(a_file), "--tenant", "demo-A")
    assert rc == 0, err
    state = CorpusState(es, fresh_indices["corpus_state"])
    before = state.watermark("demo-A")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        '{"id": "R", "tenant": "demo-A", "body": "B overwrites A\'s rate: JPY 1."}\n'
        '{"id": "S", "body": "B\'s own note."}\n',
        encoding="utf-8",
    )
    rc, out, err = _run(fresh_indices, str(mixed), "--tenant", "demo-B")
    assert rc == 1 and out["documents"] == 1 and out["rejected_input"] == 1
    assert "line 1" in out["rejected"][0] and "names tenant 'demo-A'" in out["rejected"][0]
    assert out["watermarks"] == {"demo-B": 1}
    assert state.watermark("demo-A") == before
    kept = es.get(fresh_indices["chunks"], chunk_key("demo-A", chunk_id("R", 1, 0)))
    assert kept is not None and kept["_source"]["raw_chunk_text"] == "A's rate is JPY 31,500."
    assert not es.exists(fresh_indices["chunks"], chunk_key("demo-B", chunk_id("R", 1, 0)))


CRASH_BEFORE_THE_WATERMARK = """
import os, sys
from hybrid_es.cluster import corpus_state
def die(*args, **kwargs):
    os._exit(9)  # killed after the bulk write and the refresh, before the watermark moves
corpus_state.CorpusState.finish = die
sys.argv = ["hybrid-es", *sys.argv[1:]]
from hybrid_es.cli import main
main()
"""


def test_an_ingest_killed_between_its_writes_and_the_watermark_still_moves_it(
    es, fresh_indices, tmp_path
):
    # Issue 11, item 5: before, the rerun skipped the written documents and the watermark never
    # moved, so a packet built before the change was reused for ever.
    path = tmp_path / "a.jsonl"
    path.write_text('{"id": "R", "body": "The rate is JPY 31,500."}\n', encoding="utf-8")
    assert _run(fresh_indices, str(path), "--tenant", "demo-A")[0] == 0
    state = CorpusState(es, fresh_indices["corpus_state"])
    before = state.read("demo-A")
    assert before.pending == ()
    path.write_text('{"id": "R", "body": "The rate is JPY 33,000."}\n', encoding="utf-8")
    crashed = subprocess.run(
        [
            sys.executable,
            "-c",
            CRASH_BEFORE_THE_WATERMARK,
            "ingest",
            str(path),
            "--tenant",
            "demo-A",
        ],
        env=_env(fresh_indices),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert crashed.returncode == 9, crashed.stderr
    mid = state.read("demo-A")
    # The change is written and searchable, the watermark has not moved, and the run is pending:
    # revalidation reads that as "cannot verify", never as "unchanged".
    assert mid.watermark == before.watermark and len(mid.pending) == 1
    rc, out, err = _run(fresh_indices, str(path), "--tenant", "demo-A")
    assert rc == 0, err
    assert out["skipped_unchanged"] == 1  # the rerun writes nothing ...
    after = state.read("demo-A")
    assert after.watermark == before.watermark + 1 and after.pending == ()  # ... yet it moved


def test_rejections_are_colour_on_a_terminal_and_plain_text_otherwise(fresh_indices, tmp_path):
    # Issue 11, item 11: "[red]rejected[/red]" appeared literally on stderr.
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "body": "fine."}\n{broken\n', encoding="utf-8")
    args = (str(path), "--tenant", "t", "--dry-run")
    plain = subprocess.run(
        _cli(*args), env=_env(fresh_indices), capture_output=True, text=True, timeout=300
    )
    assert "rejected" in plain.stderr and "line 2" in plain.stderr
    assert "[red]" not in plain.stderr and "\x1b[" not in plain.stderr
    coloured = subprocess.run(
        _cli(*args),
        env=_env(fresh_indices, FORCE_COLOR="1", TTY_COMPATIBLE="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "\x1b[31mrejected\x1b[0m" in coloured.stderr and "[red]" not in coloured.stderr
