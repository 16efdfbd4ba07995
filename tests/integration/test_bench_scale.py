"""The growth benchmark's own path (``scripts/bench_scale.py``, ``benchmarks.scale_run``)
on the engine under test, at a tiny size: load, search every path before and after a force-merge,
the kNN leg's oversample settings included. Those bodies are sent by the benchmark itself, not by
the searcher, and must pass the policy door like every other read of a chunks index (a run at 1M
chunks once stopped there, after its 17-minute load). The full sizes are a benchmark, run by hand
(docs/scale.md)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from benchmarks import scale_search
from benchmarks.scale_corpus import Pool, strip_pool_records
from benchmarks.scale_options import CORPUS_STATE, ScaleOptions, index_name
from benchmarks.scale_run import run_one
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import build_chunk_records
from tests.conftest import HashEmbedder
from tests.constants import NOW

pytestmark = [
    pytest.mark.integration,
    pytest.mark.engine(
        "elasticsearch", reason="the growth benchmark builds Elasticsearch's quantised mappings"
    ),
]
SIZE = 60
TEXTS = ["contract rate for the Kyoto hotel", "roll-in shower", "cancellation policy", "brochure"]


def _pool(embedder: HashEmbedder) -> Pool:
    # plain records, as the shared collections' (no validity window, version or scope of their
    # own: the corpus assigns tenants and ACLs, and the policy admits every chunk of a tenant)
    docs = [
        Document(id=f"d{i}", tenant="pool", title=f"note {i}", body=f"{TEXTS[i % 4]}, item {i}.")
        for i in range(30)
    ]
    records = [
        rec
        for doc in docs
        for rec in build_chunk_records(doc, now=NOW, embedding_model=embedder.model_id)
    ]
    for rec in records:
        rec["_pool_source"] = "travel"
    sources = strip_pool_records(records)
    vectors = embedder.embed_passages([r["search_payload"] for r in records])
    return Pool(records, vectors, sources, None)


def _options(tmp_path: Path, **changes: Any) -> ScaleOptions:
    values: dict[str, Any] = {
        "sizes": [SIZE],
        "quantizations": ["int8_hnsw"],
        "queries": len(TEXTS),
        "num_candidates": [50, 100],
        "window": 50,
        "oversample": [0.0, 2.0],
        "tenants": 2,
        "noise": 0.04,
        "seed": 3,
        "bulk_size": 25,
        "bulk_threads": 1,
        "force_merge": 1,
        "keep": False,
        "json": tmp_path / "bench.json",
        "plot": tmp_path / "scale.png",
        "merge": False,
    }
    return ScaleOptions(**(values | changes))


@pytest.fixture
def corpus_state(es, bootstrapped, monkeypatch):  # type: ignore[no-untyped-def]
    """A corpus-state index of this test's own (a benchmark run by hand keeps the shared one)."""
    name = f"{CORPUS_STATE}-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(scale_search, "CORPUS_STATE", name)
    state = CorpusState(es, name)
    for t in range(2):
        state.bump(f"t{t}", "bench-scale")
    yield
    es.delete_index(name)
    if es.index_exists(index_name("int8_hnsw", SIZE)):
        es.delete_index(index_name("int8_hnsw", SIZE))


def test_a_tiny_growth_run_loads_searches_merges_and_reads_through_the_door(
    es, corpus_state, tmp_path
):
    emb = HashEmbedder()
    pool, qvecs = _pool(emb), emb.embed_queries(TEXTS)
    options = _options(tmp_path, keep=True)
    row = run_one(es, emb, pool, SIZE, "int8_hnsw", TEXTS, qvecs, options, lambda _msg: None)
    assert row["chunks"] == SIZE and row["index_rate_per_s"] > 0
    assert row["index_stats"]["segments"] == 1 and row["force_merge_s"] is not None
    before = row["before_force_merge"]
    assert before["segments"] >= 1 and set(before["recall@10"]) == {"50", "100"}
    for searched in (row, before):
        assert set(searched["oversample_nc100"]) == {"0", "2"}
        assert all(0.0 <= v["recall@10"] <= 1.0 for v in searched["oversample_nc100"].values())
        assert searched["latency_ms"]["hybrid"]["n"] == len(TEXTS)
    # --reuse searches the index the run kept, without loading it again
    reuse = _options(tmp_path, reuse=True, force_merge=0)
    again = run_one(es, emb, pool, SIZE, "int8_hnsw", TEXTS, qvecs, reuse, lambda _msg: None)
    assert again["reused_index"] is True and again["index_rate_per_s"] is None
    assert again["recall@10"] == row["recall@10"]
    assert not es.index_exists(index_name("int8_hnsw", SIZE))  # keep=False: deleted after
