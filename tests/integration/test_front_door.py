"""The front door (``hybrid_es.HybridEs``): the README's program runs as shown, every part is
built once and shared, nothing connects before it is asked for, and closing closes once."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_es import HybridEs, Settings
from hybrid_es.errors import EngineError
from tests import namespaces
from tests.conftest import HashEmbedder

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_the_quickstart_runs_as_the_readme_shows(es):
    # In its own namespace (examples/quickstart.py names it), dropped afterwards.
    ns = namespaces.example_namespace("quickstart.py")
    namespaces.drop(es, ns)
    try:
        run = namespaces.run_example("quickstart.py")
    finally:
        namespaces.drop(es, ns)
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
