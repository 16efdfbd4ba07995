"""The front door (``hybrid_es.HybridEs``): the README's program runs as shown, every part is
built once and shared, nothing connects before it is asked for, and closing closes once."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from hybrid_es import HybridEs, Settings
from hybrid_es.errors import EngineError
from tests.conftest import HashEmbedder

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_the_quickstart_runs_as_the_readme_shows(es, bootstrapped, settings):
    tag = uuid.uuid4().hex[:10]
    names = {
        "HYBRID_ES_CHUNKS_INDEX": f"{settings.chunks_index}-test-quick-{tag}",
        "HYBRID_ES_CORPUS_STATE_INDEX": f"{settings.corpus_state_index}-test-quick-{tag}",
        "HYBRID_ES_PACKETS_INDEX": f"{settings.packets_index}-test-quick-{tag}",
    }
    try:
        run = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "quickstart.py")],
            env={**os.environ, **names, "HF_HUB_OFFLINE": "1"},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        es.delete_index(",".join(f"{n}*" for n in names.values()))
    assert run.returncode == 0, run.stderr
    # ana (staff) finds the VPN record; hr's record is never scored, so never shown.
    assert run.stdout.splitlines() == ["vpn 1 1 True VPN access needs a key."]


def test_nothing_connects_before_it_is_asked_for():
    hes = HybridEs(Settings(url="http://127.0.0.1:9", max_retries=0, request_timeout=1))
    assert hes.close() == {}  # nothing was built, nothing to close
    with pytest.raises(EngineError):
        _ = hes.engine


def test_every_part_is_built_once_and_shared(es, settings):
    with HybridEs(settings, client=es, embedder=HashEmbedder(), traces=False) as hes:
        assert hes.searcher is hes.searcher and hes.ingestor is hes.ingestor
        assert hes.searcher.embedders is hes.ingestor.embedders is hes.embedders
        assert hes.packets.searcher is hes.searcher
        assert hes.searcher.client is hes.ingestor.client is hes.engine
        assert hes.searcher.layout == hes.ingestor.layout == settings.layout()
    assert hes.close() == {}  # traces off: nothing of its own was closed; twice is once
