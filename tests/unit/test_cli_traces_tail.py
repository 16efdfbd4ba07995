"""``hybrid-es traces tail`` reads at 80 columns (issue 39, item 4): it was mostly ellipses
(``2026-…``, ``opera…``, ``3f2a9…``). Now, where a column per field does not fit, each trace is two
lines beside its time and id: every value whole, nothing cut. Wide enough, the table keeps one
column per field. The reader is a fake that returns realistic traces; the command runs as the CLI
(typer's runner, with the terminal's COLUMNS)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from hybrid_es.cli import traces
from hybrid_es.cli.main import app

HASH = "3f2a9c0d1e2f3a4b5c6d7e8f9a0b1c2d"


def _trace(i: int, action: str, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "@timestamp": f"2026-04-01T09:00:0{i}.123456+00:00",
        "trace": {"id": f"{i}bf92f3577b34da6a3ce929d0e0e473"},
        "event": {"action": action},
        "organization": {"id": "demo-A"},
        "user": {"id": "agent-1"},
        "hybrid_es": {"query_hash": HASH, "hit_count": 5, "latency_ms": {"total": 123.44}},
    }
    doc["hybrid_es"].update(extra.pop("hybrid_es", {}))
    return doc | extra


DOCS = [
    _trace(0, "search", hybrid_es={"fusion_path": "client-rrf"}),
    _trace(1, "packet_build", hybrid_es={"packet": {"id": "JPN-2026-0417-packet-v1"}}),
    _trace(
        2,
        "packet_validate",
        hybrid_es={"packet": {"id": "JPN-2026-0417-packet-v1", "verdict": "refresh_required"}},
    ),
    _trace(3, "search", error={"type": "SearchTimeoutError", "message": "timed out"}),
]


@pytest.fixture
def tail(monkeypatch):
    fake = SimpleNamespace(index="hybrid-es-traces-*", tail=lambda *a, **k: DOCS)
    monkeypatch.setattr(traces, "_reader", lambda index: fake)

    def run(columns: int, *args: str) -> str:
        result = CliRunner().invoke(app, ["traces", "tail", *args], env={"COLUMNS": str(columns)})
        assert result.exit_code == 0, result.output
        return result.stdout

    return run


@pytest.mark.parametrize("who", [("--tenant", "demo-A", "--user", "agent-1"), ("--operator",)])
def test_tail_at_80_columns_shows_every_value_whole(tail, who):
    out = tail(80, *who)
    lines = out.splitlines()
    assert "…" not in out and all(cell_len(line) <= 80 for line in lines), out
    flat = " ".join(out.split())
    for i, doc in enumerate(DOCS):
        assert f"2026-04-01 09:00:0{i}" in out  # the time, to the second
        assert doc["trace"]["id"][:12] in out  # what `traces show` takes
    assert "search · ok" in flat or "search by demo-A/agent-1 · ok" in flat
    assert f"query {HASH[:12]} · client-rrf · 5 hit(s) · 123.4 ms" in flat
    assert "packet JPN-2026-0417-packet-v1 · 5 hit(s) · 123.4 ms" in flat
    assert "refresh_required" in flat and "error: SearchTimeoutError" in flat
    # An operator reads many callers' traces: each says whose it is.
    assert ("by demo-A/agent-1" in flat) == (who == ("--operator",))


def test_tail_wide_enough_keeps_a_column_per_field(tail):
    out = tail(250, "--tenant", "demo-A", "--user", "agent-1")
    header = next(line for line in out.splitlines() if "time (UTC)" in line)
    for name in ("trace", "operation", "who", "query / packet", "fusion", "hits", "outcome"):
        assert name in header
    assert HASH in out and "2026-04-01 09:00:00.123456" in out and "…" not in out
