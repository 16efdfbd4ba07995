"""The API reference builds: ``scripts/api_docs.py`` renders every name of ``hybrid_es.__all__``
from its docstring with pdoc, and fails on any warning (docs/development.md, "Documentation")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_api_reference_builds_without_warnings(tmp_path):
    out = tmp_path / "api"
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "api_docs.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    page = (out / "hybrid_es.html").read_text(encoding="utf-8")
    assert 'id="HybridSearcher"' in page and 'id="Settings"' in page
    assert (out / "index.html").is_file()
