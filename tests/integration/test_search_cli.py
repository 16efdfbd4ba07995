"""``hybrid-es search`` against the real cluster, as an operator reads it (issue 39, item 4): at
80 columns (a standard terminal, or output piped) each hit shows its title and an excerpt of its
text, not only its id, and nothing of the provenance is cut; ``--json`` keeps its shape. The
command runs in the test's process (tests/cli_in_process.py)."""

from __future__ import annotations

import json
import os

import pytest
from rich.cells import cell_len

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.ingest.indexer import Ingestor
from tests.cli_in_process import run_cli
from tests.conftest import ingest_as_owners, travel_documents
from tests.constants import NOW, QUERY

pytestmark = pytest.mark.integration

AGENT = ("--tenant", "demo-A", "--user", "agent-1", "--group", "travel-agents")
STAY = ("--stay", "2026-04-10..2026-04-14")


def _env(names: dict[str, str], columns: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        HYBRID_ES_CHUNKS_INDEX=names["chunks"],
        HYBRID_ES_CORPUS_STATE_INDEX=names["corpus_state"],
        HYBRID_ES_TENANCY="shared",  # the test's own chunks index, as named
        HYBRID_ES_EMBEDDER="minilm",
        HYBRID_ES_TRACES="false",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        COLUMNS=str(columns),
    )
    return env


def _cells(out: str) -> str:
    """The text of the hit table's second column, its lines joined by spaces: a title or an
    excerpt wrapped over several lines reads as one again."""
    parts = []
    for line in out.splitlines():
        cells = line.split("│")
        if len(cells) == 4:  # │ # │ hit │
            parts.append(cells[2].strip())
    return " ".join(p for p in parts if p)


def test_search_at_80_columns_shows_each_hits_title_and_an_excerpt(es, embedder, fresh_indices):
    ingestor = Ingestor(
        es,
        embedder,
        index=fresh_indices["chunks"],
        corpus_state=CorpusState(es, fresh_indices["corpus_state"]),
    )
    ingest_as_owners(ingestor, travel_documents(), now=NOW)
    args = ("search", QUERY, *AGENT, *STAY, "--no-rerank", "--top-k", "3")

    as_json = run_cli(*args, "--json", env=_env(fresh_indices, 80))
    assert as_json.returncode == 0, as_json.stderr
    response = json.loads(as_json.stdout)
    hits = response["hits"]
    assert hits and {"chunk_id", "title", "text", "authorization", "fused_score"} <= set(hits[0])
    assert "source" not in hits[0]  # the JSON keeps its shape

    proc = run_cli(*args, env=_env(fresh_indices, 80))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert all(cell_len(line) <= 80 for line in out.splitlines()), out
    shown = _cells(out)
    for hit in hits:
        assert hit["title"] and " ".join(hit["title"].split()) in shown, (hit["title"], out)
        opening = " ".join(hit["text"].split()[:12])  # the excerpt starts with the text
        assert opening in shown, (opening, out)
        assert hit["chunk_id"] in out  # whole, never cut to an ellipsis
        assert f"fused {hit['fused_score']:.6f}" in out
    # The excerpt is short: a long text is cut, at a word, and says so.
    longest = max(hits, key=lambda h: len(h["text"]))
    assert " ".join(longest["text"].split()) not in shown and "…" in shown
