"""The growth benchmark's pure parts (``benchmarks.scale_*``): option
parsing, statistics, the index body, the synthetic corpus against its own brute force, the
record's merge with earlier runs, and the table."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.scale_corpus import GROUP, Pool, strip_pool_records
from benchmarks.scale_index import (
    compose_index_body,
    heap_summary,
    merge_settings,
    refresh_interval,
    simulation_summary,
    stats_summary,
)
from benchmarks.scale_options import (
    ScaleOptions,
    fit_window,
    index_name,
    parse_floats,
    parse_ints,
    parse_names,
    unknown_quantizations,
)
from benchmarks.scale_report import ReportWriter, merge_record, table_rows
from benchmarks.scale_run import vectors_note
from benchmarks.scale_stats import (
    hot_bytes,
    latency_stats,
    per_chunk,
    recall_at_10,
)
from benchmarks.scale_synth import Synth
from hybrid_es.cluster.templates import ANALYSIS_TEMPLATE, CHUNKS_TEMPLATE, SETTINGS_TEMPLATE

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_scale.py"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("bench_scale_script", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- options ------------------------------------------------------------------------------------


def test_comma_separated_options_parse_to_lists() -> None:
    assert parse_ints("10_000, 100000,,1000000") == [10000, 100000, 1000000]
    assert parse_floats("0,1.5, 3") == [0.0, 1.5, 3.0]
    assert parse_names(" hnsw, ,int8_hnsw ") == ["hnsw", "int8_hnsw"]
    assert unknown_quantizations(["hnsw", "int4_hnsw", "flat"]) == ["int4_hnsw", "flat"]


def test_the_window_is_lowered_to_the_smallest_num_candidates_below_it() -> None:
    assert fit_window(50, [50, 100, 200]) == 50
    assert fit_window(50, [30, 100, 20]) == 20
    assert fit_window(50, []) == 50


def test_index_names_use_dashes() -> None:
    assert index_name("int8_hnsw", 10000) == "hybrid-es-scale-int8-hnsw-10000"


def test_the_script_parses_its_defaults_into_options() -> None:
    options = _script().parse([])
    assert isinstance(options, ScaleOptions)
    assert options.sizes == [10000, 100000, 1000000]
    assert options.quantizations == ["hnsw", "int8_hnsw", "bbq_hnsw"]
    assert options.num_candidates == [50, 100, 200]
    assert options.oversample == [0.0, 1.5, 3.0]
    assert (options.window, options.tenants, options.seed, options.merge) == (50, 4, 16, False)
    assert options.json.name == "bench_scale.json"
    tuned = _script().parse(["--num-candidates", "10,40", "--sizes", "1_000"])
    assert (tuned.window, tuned.sizes) == (10, [1000])
    with pytest.raises(SystemExit):
        _script().parse(["--quantizations", "hnsw,int4"])


# -- statistics ---------------------------------------------------------------------------------


def test_latency_stats_are_linear_percentiles() -> None:
    assert latency_stats([30.0, 10.0, 20.0]) == {"p50": 20.0, "p95": 29.0, "n": 3}
    assert latency_stats([]) == {"p50": 0.0, "p95": 0.0, "n": 0}


def test_recall_at_10_counts_the_exact_top_found() -> None:
    exact = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert recall_at_10([1, 2, 3, 99], exact) == 0.3
    assert recall_at_10(range(1, 11), exact) == 1.0


def test_hot_bytes_are_the_graph_and_the_vectors_the_search_compares() -> None:
    off = {
        "total_vex_size_bytes": 100,
        "total_vec_size_bytes": 1000,
        "total_veq_size_bytes": 250,
        "total_veb_size_bytes": 40,
    }
    assert hot_bytes("hnsw", off) == 1100
    assert hot_bytes("int8_hnsw", off) == 350
    assert hot_bytes("bbq_hnsw", off) == 140
    assert hot_bytes("bbq_hnsw", {}) == 0
    with pytest.raises(KeyError):
        hot_bytes("flat", off)


def test_per_chunk_rates_and_sizes() -> None:
    timing = {"bulk_s": 4.0, "refresh_s": 1.0}
    stats = {
        "docs": 1000,
        "store_bytes": 6_500_000,
        "off_heap": {"total_size_bytes": 2_000_000, "total_vex_size_bytes": 300_000},
    }
    assert per_chunk(1000, "hnsw", timing, stats) == {
        "index_rate_per_s": 250.0,
        "index_rate_incl_refresh_per_s": 200.0,
        "store_bytes_per_chunk": 6500.0,
        "offheap_bytes_per_chunk": 2000.0,
        "hot_offheap_bytes_per_chunk": 300.0,
    }


def test_vectors_note_says_when_copies_are_perturbed() -> None:
    assert vectors_note(100, 100, 500, 0.04) == "real MiniLM"
    assert vectors_note(800, 500, 500, 0.04) == (
        "500 real MiniLM + 300 perturbed copies (noise 0.04/dim, renormalised)"
    )


# -- the index ----------------------------------------------------------------------------------


def _templates() -> dict[str, dict[str, Any]]:
    return {
        SETTINGS_TEMPLATE: {"template": {"settings": {"index": {"number_of_shards": 1}}}},
        ANALYSIS_TEMPLATE: {
            "template": {"settings": {"analysis": {"analyzer": {"a": {"type": "standard"}}}}}
        },
        CHUNKS_TEMPLATE: {
            "composed_of": [SETTINGS_TEMPLATE, ANALYSIS_TEMPLATE],
            "template": {
                "settings": {"index": {"refresh_interval": "5s"}},
                "mappings": {
                    "properties": {
                        "embedding": {"type": "dense_vector", "index_options": {"type": "hnsw"}}
                    }
                },
            },
        },
    }


def test_the_index_body_composes_the_templates_and_sets_the_quantization() -> None:
    templates = _templates()
    body = compose_index_body(templates, "bbq_hnsw")
    assert body["settings"] == {
        "index": {"number_of_shards": 1, "refresh_interval": "5s"},
        "analysis": {"analyzer": {"a": {"type": "standard"}}},
    }
    assert body["mappings"]["properties"]["embedding"]["index_options"]["type"] == "bbq_hnsw"
    assert refresh_interval(body) == "5s"
    # the templates are not changed
    assert templates == _templates()
    assert refresh_interval({"settings": {}}) == "1s"


def test_merge_settings_is_deep_and_leaves_its_inputs_alone() -> None:
    a = {"index": {"x": 1, "y": {"z": 2}}, "keep": [1]}
    b = {"index": {"y": {"w": 3}}, "keep": [2]}
    assert merge_settings(a, b) == {"index": {"x": 1, "y": {"z": 2, "w": 3}}, "keep": [2]}
    assert a == {"index": {"x": 1, "y": {"z": 2}}, "keep": [1]}


def test_engine_answers_are_summarised() -> None:
    assert simulation_summary({"template": {"settings": {}, "mappings": {}}}) == {
        "overlapping": [],
        "applies": False,
    }
    assert simulation_summary(
        {"overlapping": [{"name": "logs"}], "template": {"settings": {"index": {}}}}
    ) == {"overlapping": ["logs"], "applies": True}
    primaries = {
        "docs": {"count": 10},
        "store": {"size_in_bytes": 5000},
        "dense_vector": {"value_count": 10, "off_heap": {"total_size_bytes": 800, "note": "x"}},
    }
    segments = {"indices": {"i": {"shards": {"0": [{"segments": {"a": {}, "b": {}}}]}}}}
    assert stats_summary({"indices": {"i": {"primaries": primaries}}}, segments, "i") == {
        "docs": 10,
        "store_bytes": 5000,
        "segments": 2,
        "dense_vector_count": 10,
        "off_heap": {"total_size_bytes": 800},
    }
    jvm = {"mem": {"heap_used_in_bytes": 5, "heap_max_in_bytes": 9}}
    assert heap_summary({"nodes": {"n1": {"jvm": jvm}}}) == {
        "heap_used_bytes": 5,
        "heap_max_bytes": 9,
    }


# -- the synthetic corpus -----------------------------------------------------------------------


def _pool(n: int = 7, dims: int = 8) -> Pool:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((n, dims)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    records = [
        {
            "doc_id": f"d{i}",
            "search_payload": " ".join(f"word{i}-{w}" for w in range(30)),
            "raw_chunk_text": " ".join(f"raw{i}-{w}" for w in range(30)),
            "_pool_source": "scifact" if i % 2 else "cranfield",
            "tenant": "pool",
            "acl_groups": [GROUP],
            "acl_users": [],
        }
        for i in range(n)
    ]
    sources = strip_pool_records(records)
    return Pool(records, vecs, sources, None)


def test_pool_records_lose_their_tenant_and_acl() -> None:
    pool = _pool()
    assert pool.sources == {"cranfield": 4, "scifact": 3}
    assert all(set(r) == {"doc_id", "search_payload", "raw_chunk_text"} for r in pool.records)


def test_the_synthetic_corpus_is_real_then_perturbed_copies() -> None:
    pool = _pool()
    synth = Synth(pool, 25, tenants=3, noise=0.05, seed=16)
    actions = list(synth.actions("idx"))
    assert [a["_id"] for a in actions] == [str(i) for i in range(25)]
    assert synth.real == 7
    for n, a in enumerate(actions):
        src = a["_source"]
        base = int(synth.perm[n % 7])
        assert src["chunk_id"] == f"s{n}"
        assert src["tenant"] in {"t0", "t1", "t2"}
        assert GROUP in src["acl_groups"]
        assert np.linalg.norm(src["embedding"]) == pytest.approx(1.0, abs=1e-5)
        if n < 7:  # real chunks: the pool's text and vector
            assert src["doc_id"] == f"d{base}"
            assert np.allclose(src["embedding"], pool.vectors[base])
        else:  # copies: fewer words, a moved vector, the copy number in the doc id
            assert src["doc_id"] == f"d{base}~{n // 7}"
            assert len(src["search_payload"].split()) <= 30
            assert not np.allclose(src["embedding"], pool.vectors[base])
    again = list(Synth(pool, 25, tenants=3, noise=0.05, seed=16).actions("idx"))
    assert [a["_source"]["search_payload"] for a in again] == [
        a["_source"]["search_payload"] for a in actions
    ]


def test_the_brute_force_top_is_the_exact_top_of_the_indexed_vectors() -> None:
    pool = _pool()
    synth = Synth(pool, 40, tenants=2, noise=0.1, seed=5)
    actions = list(synth.actions("idx"))
    vecs = np.stack([a["_source"]["embedding"] for a in actions])
    tenants = np.array([int(a["_source"]["tenant"][1:]) for a in actions])
    queries = pool.vectors[:4]
    qtenants = np.array([0, 1, 0, 1])
    top = synth.exact_top(queries, qtenants, 5)
    for q, t, got in zip(queries, qtenants, top, strict=True):
        scores = np.where(tenants == t, vecs @ q, -np.inf)
        assert list(got) == list(np.argsort(-scores, kind="stable")[:5])


# -- the record and the table -------------------------------------------------------------------


def _row(size: int, q: str, **extra: Any) -> dict[str, Any]:
    lat = {"p50": 1.0, "p95": 2.0, "n": 5}
    return {
        "size": size,
        "quantization": q,
        "index_rate_per_s": 1234.5,
        "refresh_s": 0.5,
        "force_merge_s": None,
        "index_stats": {"segments": 3},
        "store_bytes_per_chunk": 6543.2,
        "offheap_bytes_per_chunk": 1600.0,
        "hot_offheap_bytes_per_chunk": 420.0,
        "latency_ms": {"bm25": lat, "knn@50": lat, "knn@100": lat, "hybrid": lat},
        "retrieval_ms": {"hybrid": {"p50": 1.5, "p95": 2.5, "n": 5}},
        "recall@10": {"50": 0.9, "100": 0.95},
        "load_average_start": [1.25, 1.0, 1.0],
        "load_average_end": [2.0, 1.0, 1.0],
        **extra,
    }


def test_table_rows_are_sorted_and_formatted() -> None:
    rows = [_row(100000, "hnsw"), _row(10000, "bbq_hnsw"), _row(10000, "hnsw")]
    table = table_rows(rows, [50, 100, 200])
    assert [t["size x quant"] for t in table] == [
        "10,000 hnsw",
        "10,000 bbq_hnsw",
        "100,000 hnsw",
    ]
    first = table[0]
    assert first["index/s"] == "1,234"  # ",.0f" rounds half to even
    assert first["merge s"] == "-"
    assert first["knn@100 p50/p95"] == "1.0/2.0"
    assert (first["R@10 nc50"], first["R@10 nc100"], first["R@10 nc200"]) == (0.9, 0.95, "-")
    assert first["load"] == "1.2-2.0"
    assert list(first)[-1] == "load"
    other = {"p50": 1, "p95": 1}
    knn_50 = {"p50": 3, "p95": 4}
    only_50 = _row(10, "hnsw", latency_ms={"bm25": other, "knn@50": knn_50, "hybrid": other})
    assert table_rows([only_50], [50])[0]["knn@50 p50/p95"] == "3/4"
    assert "unmerged: segs, hybrid p50/p95" not in first
    slow = {"p50": 40.0, "p95": 75.5, "n": 5}
    merged = _row(
        10,
        "hnsw",
        force_merge_s=12.5,
        before_force_merge={"segments": 80, "latency_ms": {"hybrid": slow}},
    )
    line = table_rows([merged], [50])[0]
    assert (line["merge s"], line["unmerged: segs, hybrid p50/p95"]) == (12.5, "80, 40.0/75.5")


def test_merge_record_keeps_rows_not_redone_and_replaces_this_runs_entry() -> None:
    old = {
        "rows": [_row(10, "hnsw", tag="old"), _row(20, "hnsw", tag="old")],
        "runs": [{"started": "A"}, {"started": "B"}, {"command": "no start"}],
    }
    rows = [_row(20, "hnsw", tag="new"), _row(10, "bbq_hnsw", tag="new")]
    this_run = {"command": "now"}
    all_rows, runs = merge_record(old, rows, this_run, None)
    assert [(r["size"], r["quantization"], r["tag"]) for r in all_rows] == [
        (10, "hnsw", "old"),
        (10, "bbq_hnsw", "new"),
        (20, "hnsw", "new"),
    ]
    assert runs == [{"started": "A"}, {"started": "B"}, this_run]
    _, runs = merge_record(old, rows, this_run, "B")
    assert runs == [{"started": "A"}, {"command": "no start"}, this_run]
    assert merge_record(None, [], this_run, None) == ([], [this_run])


def _options(tmp_path: Path, merge: bool) -> ScaleOptions:
    return ScaleOptions(
        sizes=[10],
        quantizations=["hnsw"],
        queries=5,
        num_candidates=[50, 100],
        window=50,
        oversample=[0.0],
        tenants=2,
        noise=0.04,
        seed=1,
        bulk_size=10,
        bulk_threads=1,
        force_merge=0,
        keep=False,
        json=tmp_path / "out" / "bench.json",
        plot=tmp_path / "out" / "scale.png",
        merge=merge,
    )


def test_the_writer_merges_with_the_earlier_record_and_keeps_one_entry_per_run(
    tmp_path: Path,
) -> None:
    options = _options(tmp_path, merge=True)
    options.json.parent.mkdir()
    earlier = {"rows": [_row(5, "int8_hnsw")], "runs": [{"started": "2025", "command": "x"}]}
    options.json.write_text(json.dumps(earlier))
    pool = Pool([{}, {}], np.zeros((2, 3), dtype=np.float32), {"scifact": 2}, 12.5)
    writer = ReportWriter(options, {"nproc": 2}, pool, {"p50": 4.0}, 0.0, "python x --merge")
    first = writer.write([_row(10, "hnsw")])
    assert [(r["size"], r["quantization"]) for r in first] == [(5, "int8_hnsw"), (10, "hnsw")]
    second = writer.write([_row(10, "hnsw"), _row(10, "bbq_hnsw")])
    assert len(second) == 3
    record = json.loads(options.json.read_text())
    assert list(record) == ["data", "runs", "rows"]
    assert record["data"]["pool_chunks"] == 2
    assert record["data"]["queries"] == "the first 5 SciFact queries; tenant t(i mod 2)"
    assert [r.get("started") for r in record["runs"]] == ["2025", writer.started]
    assert record["runs"][-1]["rows"] == [[10, "hnsw"], [10, "bbq_hnsw"]]
    assert list(record["runs"][-1]) == ["command", "machine", "wall_s", "rows", "started"]
    assert options.plot.is_file()
