"""The search benchmark's pure parts (``benchmarks.search_*``): what it adds
up per search, the queries it picks, the metrics it asks ranx for, and the tables it prints."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from benchmarks.search_measure import choose_queries
from benchmarks.search_report import (
    fmt,
    ingest_rows,
    print_report,
    search_lines,
    stage_rows,
)
from benchmarks.search_results import (
    evaluator_note,
    quality_metrics,
    result_record,
)
from benchmarks.search_run import SearchOptions
from benchmarks.search_tally import SearchTally, document_run, leg_names
from benchmarks.search_timing import took_record

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_search.py"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("bench_search_script", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_parses_its_defaults_and_checks_its_bounds() -> None:
    options = _script()._parse_args([])
    assert isinstance(options, SearchOptions)
    assert (options.split, options.top_k, options.eval_depth, options.fusion) == (
        "test",
        10,
        100,
        "auto",
    )
    assert options.dataset.is_absolute() and options.dataset.name == "scifact"
    assert options.queries is None and not options.json
    for bad in (["--top-k", "0"], ["--top-k", "20", "--eval-depth", "10"], ["--queries", "0"]):
        with pytest.raises(SystemExit):
            _script()._parse_args(bad)


# -- the tally ----------------------------------------------------------------------------------


def test_msearch_took_is_recorded_for_msearch_answers_only() -> None:
    body = {"took": 7, "responses": [{"took": 3}, {"took": 4}, {}]}
    assert took_record("/_msearch", body) == {"took": 7, "items": [3, 4, None]}
    assert took_record("/idx/_search", body) is None
    assert took_record("/_msearch", "not json") is None


def test_msearch_responses_are_named_by_their_count() -> None:
    assert leg_names(3) == ["rrf body", "bm25 leg", "knn leg"]
    assert leg_names(2) == ["bm25 leg", "knn leg"]


def test_a_document_keeps_its_best_chunks_rank() -> None:
    run = document_run([("d1", 1), ("d2", 2), ("d1", 3), ("d3", 4)])
    assert run == {"d1": 1.0, "d2": 0.5, "d3": 0.25}


def test_the_tally_derives_other_and_the_client_side_of_the_round_trip() -> None:
    tally = SearchTally()
    tm = {"embed": 2.0, "retrieval": 10.0, "fusion": 0.5, "total": 14.0}
    tally.add_timings(tm, {"took": 6, "items": [1, 4, 5]})
    tally.add_timings({**tm, "total": 13.0}, None)
    tally.add_timings(tm, {"took": None, "items": [3, None]})
    assert tally.timings["rerank"] == []
    assert tally.timings["retrieval"] == [10.0, 10.0, 10.0]
    assert tally.derived["other"] == [1.5, 0.5, 1.5]
    assert tally.derived["client_side_msearch"] == [4.0]
    assert tally.took == {"msearch": [6], "rrf body": [1], "bm25 leg": [4, 3], "knn leg": [5]}
    latency = tally.latency()
    assert list(latency) == ["hits_per_query", "stages_ms", "es_took_ms", "derived_ms"]
    assert list(latency["stages_ms"]) == ["embed", "retrieval", "fusion", "rerank", "total"]
    assert latency["stages_ms"]["rerank"] == {"n": 0}
    assert latency["derived_ms"]["other"]["max"] == 1.5
    assert latency["hits_per_query"] == {"n": 0}


# -- queries and quality ------------------------------------------------------------------------


def test_the_judged_queries_are_taken_in_file_order() -> None:
    texts = {"q3": "three", "q1": "one", "q2": "two"}
    qrels = {"q1": {"d": 1}, "q3": {"d": 1}}
    assert choose_queries(texts, qrels, None) == [("q3", "three"), ("q1", "one")]
    assert choose_queries(texts, qrels, 1) == [("q3", "three")]
    with pytest.raises(SystemExit, match=r"1 judged queries are not in queries\.jsonl"):
        choose_queries(texts, {**qrels, "q9": {"d": 1}}, None)


def test_quality_metrics_are_not_repeated() -> None:
    assert quality_metrics(10, 100) == ["ndcg@10", "mrr@10", "recall@10", "recall@100"]
    assert quality_metrics(10, 10) == ["ndcg@10", "mrr@10", "recall@10"]


# -- the report ---------------------------------------------------------------------------------


def _record() -> dict[str, Any]:
    stat = {"p50": 1.25, "p95": 2.0, "mean": 1.5, "max": 3.0, "n": 4}
    search = {
        "queries": 4,
        "wall_seconds": 2.0,
        "warmup_ms": 812.4,
        "fusion_paths": {"client": 3, "native": 1},
        "fusion_reasons": {"native rrf unavailable": 3, "asked": 1},
        "reranked_queries": 0,
        "rerank_note": "no reranker",
        "window": 50,
        "num_candidates": 100,
        "search_top_k": 100,
        "hits_per_query": {**stat, "max": 37.0},
        "stages_ms": {s: stat for s in ("embed", "retrieval", "fusion", "total")}
        | {"rerank": {"n": 0}},
        "es_took_ms": {"msearch": stat, "knn leg": stat},
        "derived_ms": {"other": stat, "client_side_msearch": {"n": 0}},
    }
    ingest = {
        "seconds": 9.04,
        "documents": 10,
        "skipped_unchanged": 10,
        "chunks_written": 0,
        "chunks_in_index": 25,
        "empty_corpus_entries": 2,
        "embed_seconds": 0.0,
        "passages_per_second": None,
        "watermark_seconds": 0.0,
        "watermark_bumps": 0,
        "reused": True,
    }
    machine = {
        "nproc": 2,
        "platform": "Linux",
        "python": "3.11",
        "torch_threads": 2,
        "engine": "Elasticsearch",
        "engine_version": "9.1.0",
        "load_average_at_start": [1.0],
        "load_average_at_end": [2.0],
    }
    return result_record(
        command="python bench_search.py",
        machine=machine,
        run_on={"dataset": "/data/scifact", "split": "test", "index": "idx"},
        embedder="minilm",
        ingest=ingest,
        search=search,
        metrics={"ndcg@10": 0.65432, "recall@100": 0.9},
    )


def test_the_record_notes_how_many_documents_a_list_holds() -> None:
    out = _record()
    assert list(out) == [
        "command",
        "machine",
        "dataset",
        "split",
        "index",
        "embedder",
        "ingest",
        "search",
        "quality",
    ]
    assert out["quality"]["evaluator_note"] == evaluator_note(37.0)
    assert evaluator_note(37.0).endswith("lists hold at most 37 documents")


def test_the_ingest_rows_show_reuse_and_skipped_entries() -> None:
    rows = dict(ingest_rows(_record()["ingest"]))
    assert rows["wall time"] == "9.0 s  (reused index)"
    assert rows["  passages / s"] == "-"
    assert rows["empty corpus entries (skipped)"] == "2"
    assert "empty corpus entries (skipped)" not in dict(
        ingest_rows({**_record()["ingest"], "empty_corpus_entries": 0})
    )


def test_the_latency_rows_put_the_engines_took_under_the_round_trip() -> None:
    rows = stage_rows(_record()["search"])
    assert [label for label, _, _ in rows] == [
        "embed (query)",
        "retrieval (msearch round trip)",
        "  ES took: msearch",
        "  ES took: knn leg",
        "fusion",
        "rerank",
        "other (policy re-check, hits)",
        "total",
    ]
    assert rows[0] == ("embed (query)", ["1.2", "2.0", "1.5", "3.0", "4"], "")
    assert rows[5] == ("rerank", ["-", "-", "-", "-", "0"], "dim")
    assert rows[-1][2] == "bold"
    assert fmt({"n": 0}, "p50") == "-"


def test_the_prose_and_tables_print(tmp_path: Path) -> None:
    out = _record()
    setup, fusion, rerank, wall = search_lines(out["search"])
    assert fusion == "fusion path: client x3, native x1 (native rrf unavailable; asked)"
    assert wall.startswith("search wall time 2.0 s (2.0 queries/s, sequential); warm-up 812 ms")
    console = Console(record=True, width=200)
    print_report(console, out)
    text = console.export_text()
    for expected in (setup, fusion, rerank, "Elasticsearch 9.1.0", "ndcg@10", "0.6543"):
        assert expected in text
