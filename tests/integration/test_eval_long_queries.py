"""`hybrid-es eval` on a collection with very long queries finishes and reports them (issue 15).

The tiny travel collection, copied with two more judged questions: one of 2,023 characters (as
long as a real collection's longest) and one of 30,000. Under the default limit the first is
answered (its BM25 leg and its embedding read only its start) and the second is refused, recorded
and scored as a miss; with HYBRID_ES_MAX_QUERY_CHARS raised, both are answered.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import run_cli

pytestmark = pytest.mark.integration
TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-beir"
NOTE = (
    "Barrier-free bathing room inspection: is the roll-in shower with a folding seat and grab "
    "bars in the accessible room wide enough for a wheelchair, and was it inspected this year? "
)


def _long(n: int) -> str:
    text = (NOTE * (n // len(NOTE) + 1))[:n]
    return text[:-1] + "?" if text.endswith(" ") else text


def _collection(tmp_path: Path) -> Path:
    """tiny-beir copied, with the two long questions added to its queries and qrels."""
    folder = tmp_path / "tiny-beir-long"
    shutil.copytree(TINY, folder)
    with (folder / "queries.jsonl").open("a", encoding="utf-8") as fh:
        for qid, n in (("q-long-2023", 2023), ("q-long-30000", 30_000)):
            fh.write(json.dumps({"_id": qid, "text": _long(n)}) + "\n")
    with (folder / "qrels" / "test.tsv").open("a", encoding="utf-8") as fh:
        fh.write("q-long-2023\tD2-accessibility-note\t2\n")
        fh.write("q-long-30000\tD2-accessibility-note\t2\n")
    return folder


def _eval(folder: Path, index: str, pipelines: str, report: Path, **env: str) -> dict[str, Any]:
    """One `hybrid-es eval --json` run (in this process: tests/cli_in_process.py), the query
    limits at their defaults unless ``env`` sets them; its results by pipeline."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("HYBRID_ES_MAX_QUERY_")}
    r = run_cli(
        "eval", str(folder), "--pipelines", pipelines, "--index", index, "--report", str(report),
        "--json", env={**base, **env},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return {x["pipeline"]: x for x in json.loads(r.stdout)["results"]}


def test_eval_finishes_on_very_long_queries_and_reports_them(es, bootstrapped, tmp_path):
    folder = _collection(tmp_path)
    index = f"hybrid-es-chunks-eval-test-{uuid.uuid4().hex[:8]}"
    try:
        by = _eval(folder, index, "bm25,hybrid", tmp_path / "default")
        for name, res in by.items():
            assert res["queries"] == 6, name  # the refused question is counted, as a miss
            assert res["failed"] == 1, name
            (failure,) = res["failures"]
            assert failure["query_id"] == "q-long-30000"
            assert failure["error"] == "BadQueryError"
            assert "30000 characters; the limit is 10000" in failure["message"]
            # The 2,023-character question was answered, reading only its start.
            assert res["truncated"] == 1, name
            assert 0.0 < res["metrics"]["ndcg@10"] < 1.0
        report = (tmp_path / "default" / "report.md").read_text()
        assert "| failure rate | queries | failed |" in report
        assert "| hybrid | q-long-30000 | BadQueryError |" in report

        # Raised, the limit admits the 30,000-character question: its legs read its start.
        raised = _eval(
            folder, index, "hybrid", tmp_path / "raised", HYBRID_ES_MAX_QUERY_CHARS="40000"
        )["hybrid"]
        assert (raised["failed"], raised["truncated"], raised["queries"]) == (0, 2, 6)
        assert raised["metrics"]["recall@10"] > by["hybrid"]["metrics"]["recall@10"]
    finally:
        es.delete_index(index)
