"""The load run as a short smoke (the full run is scripts/bench_load.py, a benchmark)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_load.py"


def test_mixed_load_has_no_errors_and_no_cross_tenant_hits(bootstrapped):
    r = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--clients",
            "3",
            "--seconds",
            "6",
            "--docs-per-tenant",
            "20",
            "--embedder",
            "hash",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    result = json.loads(r.stdout)
    assert result["errors"] == 0 and result["cross_tenant_hits"] == 0
    ops = result["operations"]
    assert ops["search"]["count"] > 0 and ops["packet_validate"]["count"] > 0
