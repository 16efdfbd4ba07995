"""`hybrid-es eval` end to end on a tiny BEIR collection (the travel fixture), run in the test's
process (tests/cli_in_process.py: the console script's entry point without a fresh process's
10 s of imports)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.cli_in_process import run_cli
from tests.conftest import unguarded

pytestmark = pytest.mark.integration
TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-beir"


def test_eval_reports_quality_latency_and_a_markdown_report(es, caps, bootstrapped, tmp_path):
    index = f"hybrid-es-chunks-eval-test-{uuid.uuid4().hex[:8]}"
    try:
        r = run_cli(
            "eval",
            str(TINY),
            "--pipelines",
            "bm25,dense,hybrid,linear",
            "--index",
            index,
            "--report",
            str(tmp_path),
            "--json",
        )
        assert r.returncode == 0, r.stderr[-3000:]
        out = json.loads(r.stdout)
        by = {x["pipeline"]: x for x in out["results"]}
        assert set(by) == {"bm25", "dense", "hybrid", "linear"}
        # Hybrid fuses natively where the cluster can (OpenSearch's hybrid query), else client-side.
        hybrid_path = "native-rrf" if caps.native_rrf else "client-rrf"
        assert (
            by["bm25"]["fusion_path"] == "bm25-only" and by["dense"]["fusion_path"] == "dense-only"
        )
        assert by["hybrid"]["fusion_path"] == hybrid_path
        for res in by.values():
            assert res["queries"] == 4 and 0.0 < res["metrics"]["ndcg@10"] <= 1.0
            assert res["failure_rate"] == pytest.approx(1 - res["metrics"]["recall@20"])
            assert res["latency_ms"]["total"]["p95"] >= res["latency_ms"]["total"]["p50"] > 0
        assert by["hybrid"]["metrics"]["recall@10"] == 1.0
        report = (tmp_path / "report.md").read_text()
        assert (
            f"| hybrid | {hybrid_path} |" in report and (tmp_path / "tiny-beir.png").stat().st_size
        )
    finally:
        es.delete_index(index)


COOKBOOK = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-cookbook"


def test_eval_reads_the_cookbook_layout_as_pass_at_k_over_golden_chunks(es, bootstrapped):
    index = f"hybrid-es-chunks-eval-test-{uuid.uuid4().hex[:8]}"
    try:
        r = run_cli("eval", str(COOKBOOK), "--pipelines", "bm25,hybrid", "--index", index, "--json")
        assert r.returncode == 0, r.stderr[-3000:]
        out = json.loads(r.stdout)
        assert out["split"] == "all questions"
        for res in out["results"]:
            # Pass@k columns, judged per chunk: 3 questions, one golden chunk each.
            assert set(res["metrics"]) == {
                "recall@5",
                "recall@10",
                "recall@20",
                "ndcg@10",
                "mrr@10",
            }
            assert res["queries"] == 3 and res["metrics"]["recall@5"] > 0.0
        by = {x["pipeline"]: x for x in out["results"]}
        assert by["hybrid"]["metrics"]["recall@5"] == 1.0  # 4 chunks: kNN returns them all
        # The corpus's own chunks were indexed, under the ids the golden chunks name (stored
        # under the evaluation tenant's keys).
        hits = unguarded(es).search(index, {"size": 10})["hits"]["hits"]
        ids = {h["_source"]["chunk_id"] for h in hits}
        assert ids == {f"doc_{d}::v1::c000{c}" for d in (1, 2) for c in (0, 1)}
        assert {h["_id"] for h in hits} == {f"eval::{i}" for i in ids}
    finally:
        es.delete_index(index)
