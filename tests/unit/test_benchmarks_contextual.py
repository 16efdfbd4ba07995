"""The contextual-retrieval benchmark's pure parts (``benchmarks.contextual_*``): Pass@k,
the cookbook's anchors, the request bodies, the edited SciFact documents and the tables."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from benchmarks.contextual_codebase import (
    dense_request,
    header_sample_body,
    index_names,
)
from benchmarks.contextual_ingest import PRINCIPAL, CountingContextualizer
from benchmarks.contextual_passk import (
    PIPELINES,
    cookbook_anchors,
    parse_anchors,
    pass_at,
    pass_at_k_table,
)
from benchmarks.contextual_report import (
    ingest_rows,
    pass_at_k_rows,
    print_report,
    scifact_rows,
)
from benchmarks.contextual_run import ContextualOptions
from benchmarks.contextual_scifact import EDIT, edited
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.chunking import Chunk
from hybrid_es.ingest.contextual import ContextUsage, NoContextualizer
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import chunk_id
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.dialects import dialect_for
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import RetrievalParams

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_contextual.py"

ANCHORS = """# Anchors

## Anthropic contextual-retrieval cookbook

| pipeline | Pass@5 | Pass@10 | Pass@20 |
|---|---|---|---|
| dense only | 80.92 | 87.15 | 90.06 |
| contextual dense | 88.12 | 92.34 | 94.29 |
| notes | see | the | text |

## Another section

| dense only | 1.0 | 2.0 | 3.0 |
"""


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("bench_contextual_script", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_parses_its_defaults_into_options() -> None:
    options = _script().parse(["--scifact", "--queries", "5"])
    assert isinstance(options, ContextualOptions)
    assert options.dataset.name == "anthropic_codebase"
    assert options.scifact_dataset.name == "scifact"
    assert (options.queries, options.scifact, options.keep, options.json) == (5, True, False, False)
    assert options.index_prefix == "hybrid-es-chunks-bench-ctx"


# -- Pass@k -------------------------------------------------------------------------------------


def test_pass_at_k_is_the_share_of_golden_chunks_in_the_top_k() -> None:
    ranked = ["a", "x", "b", "y", "z", "c"]
    assert pass_at(ranked, {"a", "b", "c"}, 1) == pytest.approx(1 / 3)
    assert pass_at(ranked, {"a", "b", "c"}, 5) == pytest.approx(2 / 3)
    assert pass_at(ranked, {"a", "b", "c"}, 20) == 1.0


def test_the_table_averages_pass_at_k_over_queries_in_percent() -> None:
    runs = {"dense only": [["a"] + ["x"] * 19, ["x"] * 9 + ["b"]]}
    golden = [{"a"}, {"b", "c"}]
    # k=5: (1 + 0) / 2; k=10 and k=20: (1 + 1/2) / 2
    assert pass_at_k_table(runs, golden) == {"dense only": [50.0, 75.0, 75.0]}


def test_the_cookbook_rows_come_from_its_section_only(tmp_path: Path) -> None:
    assert parse_anchors(ANCHORS) == {
        "dense only": (80.92, 87.15, 90.06),
        "contextual dense": (88.12, 92.34, 94.29),
    }
    path = tmp_path / "ANCHORS.md"
    assert cookbook_anchors(path) == {}
    path.write_text(ANCHORS, encoding="utf-8")
    assert cookbook_anchors(path)["contextual dense"] == (88.12, 92.34, 94.29)


# -- request bodies and names -------------------------------------------------------------------


def test_index_names_follow_the_prefix() -> None:
    assert index_names("hybrid-es-chunks-bench-ctx") == (
        "hybrid-es-chunks-bench-ctx-plain",
        "hybrid-es-chunks-bench-ctx-ctx",
        "hybrid-es-corpus-state-bench-ctx",
    )
    assert index_names("mine")[2] == "hybrid-es-corpus-state-mine"


def test_the_dense_request_is_the_searchers_knn_leg_sized_to_the_largest_k() -> None:
    dialect = dialect_for("elasticsearch")
    policy = policy_filter(PRINCIPAL, RequestScope(), datetime.now(UTC))
    params = RetrievalParams()
    body = dense_request(dialect, [0.1, 0.2], policy, params)
    leg = dialect.dense_body([0.1, 0.2], policy, params)
    assert leg["size"] == params.window  # the searcher's leg returns its window
    assert body == {**leg, "size": 20}


def test_the_header_sample_asks_for_doc_1_chunk_2() -> None:
    assert header_sample_body() == {
        "size": 1,
        "query": {"ids": {"values": [chunk_key("bench-cc", chunk_id("doc_1", 1, 2))]}},
    }


# -- ingest -------------------------------------------------------------------------------------


def test_the_counting_contextualizer_counts_and_passes_through() -> None:
    inner = NoContextualizer()
    ctx = CountingContextualizer(inner)
    doc = Document(id="d", tenant="t", body="text")
    chunks = [Chunk(number=i, text="x", heading_path=()) for i in range(3)]
    headers = ctx.headers(doc, chunks, ContextUsage())
    assert headers == inner.headers(doc, chunks, ContextUsage())
    ctx.headers(doc, chunks[:1], ContextUsage())
    assert (ctx.documents, ctx.chunks) == (2, 4)
    assert ctx.prompt_version == inner.prompt_version


def test_one_document_in_a_hundred_is_edited() -> None:
    docs = [Document(id=f"d{i}", tenant="t", body=f"body {i}") for i in range(201)]
    out = edited(docs)
    changed = [i for i, (a, b) in enumerate(zip(docs, out, strict=True)) if a is not b]
    assert changed == [0, 100, 200]
    assert out[100].body == "body 100" + EDIT
    assert out[100].id == "d100" and docs[100].body == "body 100"


# -- the report ---------------------------------------------------------------------------------


def _record() -> dict[str, Any]:
    ingest = {
        "no header": {"seconds": 3.1, "documents": 2, "chunks": 5, "embed_seconds": 1.0},
        "extractive header, again": {
            "seconds": 0.4,
            "documents": 2,
            "chunks": 0,
            "skipped_unchanged": 2,
            "embedded": 0,
            "header_calls": 0,
        },
    }
    runs = {
        name: {
            "seconds": 1.0,
            "documents": 10,
            "skipped_unchanged": 0,
            "chunks_written": 12,
            "removed_chunks": 0,
            "embedded": 12,
            "embed_seconds": 0.5,
            "header_calls": 10,
            "docs_per_second": 10.0,
            "chunks_in_index": 12,
        }
        for name in ("first ingest", "unchanged")
    }
    return {
        "command": "python scripts/bench_contextual.py",
        "machine": {"nproc": 2, "platform": "Linux", "python": "3.11", "engine": "OpenSearch"},
        "embedder": "minilm",
        "codebase": {
            "queries": 3,
            "chunks": 5,
            "documents": 2,
            "ingest": ingest,
            "pass_at_k": {"dense only": [50.0, 75.0, 75.0]},
            "search_seconds": 0.7,
            "fusion_path": "client",
            "header_example": "From a file",
            "anchors": {"dense only": (80.92, 87.15, 90.06)},
        },
        "scifact": {"index": "idx", "runs": runs},
    }


def test_the_ingest_rows_fill_what_a_first_ingest_does_not_record() -> None:
    rows = ingest_rows(_record()["codebase"]["ingest"])
    assert rows == [
        ["no header", "3.1", "2", "5", "-", "5", "-"],
        ["extractive header, again", "0.4", "2", "0", "2", "0", "0"],
    ]


def test_pass_at_k_rows_set_ours_beside_the_cookbooks() -> None:
    cb = _record()["codebase"]
    rows = {r[0]: r[1:] for r in pass_at_k_rows(cb["pass_at_k"], cb["anchors"])}
    assert list(rows) == list(PIPELINES)
    assert rows["dense only"] == ["50.00", "75.00", "75.00", "80.92", "87.15", "90.06"]
    assert rows["hybrid, no context"] == ["not run"] * 3 + ["-"] * 3


def test_the_report_prints_every_table() -> None:
    out = _record()
    assert scifact_rows(out["scifact"]["runs"])[0][:3] == ["first ingest", "1.0", "10"]
    console = Console(record=True, width=220)
    print_report(console, out)
    text = console.export_text()
    for expected in (
        "ingest: anthropic_codebase (2 files, 5 chunks)",
        "Pass@k on anthropic_codebase, 3 queries",
        "header of doc_1 chunk 2: 'From a file'",
        "re-ingest on SciFact",
        "OpenSearch",
    ):
        assert expected in text
    del out["scifact"]
    console = Console(record=True, width=220)
    print_report(console, out)
    assert "re-ingest on SciFact" not in console.export_text()
