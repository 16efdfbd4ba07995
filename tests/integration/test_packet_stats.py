"""`hybrid-es packet stats` reads reuse rate and packet latencies back from real traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime

import pytest

from hybrid_es.models import Principal
from hybrid_es.traces.documents import packet_trace

pytestmark = pytest.mark.integration


def test_packet_stats_reports_reuse_rate_and_percentiles(es, bootstrapped):
    base = f"hybrid-es-traces-test-{uuid.uuid4().hex[:8]}"
    index = f"{base}-2026.04.01"  # the base's dated index of the traces' day
    p = Principal(tenant="demo-A", user_id="a")
    now = datetime(2026, 4, 1, tzinfo=UTC)
    docs = [
        packet_trace(
            p,
            packet_id="C-packet-v1",
            operation="packet_build",
            verdict=None,
            reasons=(),
            latency_ms=ms,
            now=now,
        )
        for ms in (100.0, 200.0, 300.0)
    ]
    docs += [
        packet_trace(
            p,
            packet_id="C-packet-v1",
            operation="packet_validate",
            verdict=v,
            reasons=(),
            latency_ms=10.0,
            now=now,
        )
        for v in ("reuse", "reuse", "reuse", "refresh_required")
    ]
    # Another user's and another tenant's operations: never in this caller's numbers.
    others = [Principal(tenant="demo-A", user_id="b"), Principal(tenant="demo-B", user_id="a")]
    docs += [
        packet_trace(
            o,
            packet_id="C-packet-v1",
            operation="packet_validate",
            verdict="deny",
            reasons=(),
            latency_ms=999.0,
            now=now,
        )
        for o in others
    ]

    def stats(*args: str) -> dict:  # type: ignore[type-arg]
        r = subprocess.run(
            [sys.executable, "-m", "hybrid_es.cli", "packet", "stats", *args, "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "HYBRID_ES_TRACES_INDEX": base},
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)  # type: ignore[no-any-return]

    try:
        es.bulk(({"_index": index, "_source": d} for d in docs), refresh=True)
        out = stats("--tenant", "demo-A", "--user", "a")
        assert out["reuse_rate"] == pytest.approx(0.75)
        assert out["verdicts"] == {"reuse": 3, "refresh_required": 1}
        assert out["latency_ms"]["packet_build"]["count"] == 3
        assert out["latency_ms"]["packet_build"]["p50"] == pytest.approx(200.0)
        # An operator sees every user of the tenant, and still only that tenant.
        ops = stats("--tenant", "demo-A", "--user", "ops", "--operator")
        assert ops["verdicts"] == {"reuse": 3, "refresh_required": 1, "deny": 1}
    finally:
        es.delete_index(f"{base}-*")
