"""`run_pipeline` never aborts on one query (issue 15): a failing search is recorded, scored as an
empty ranking, and the run goes on; errors that are not one query's still end it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from hybrid_es.errors import (
    BadQueryError,
    EngineError,
    EngineUnavailableError,
    HybridEsError,
    PolicyViolationError,
    SearchTimeoutError,
)
from hybrid_es.evaluation.runner import (
    MAX_ERROR_CHARS,
    PipelineResult,
    QueryFailure,
    fails_one_query,
    markdown_report,
    run_pipeline,
)
from hybrid_es.retrieval.queries import RetrievalParams

QUERIES = {"q1": "first question", "q2": "x" * 30_000, "q3": "third question"}
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}


@dataclass
class _Hit:
    doc_id: str
    chunk_id: str
    final_rank: int


@dataclass
class _Response:
    hits: tuple[_Hit, ...]
    fusion_path: str = "client-rrf"
    timings_ms: dict[str, float] | None = None
    truncated: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.timings_ms = self.timings_ms or {"retrieval": 5.0, "total": 7.0}


class FakeSearcher:
    """Answers each query with its own relevant document first; raises ``errors[text]``."""

    params = RetrievalParams()

    def __init__(self, errors: dict[str, BaseException]) -> None:
        self.errors = errors
        self.asked: list[str] = []

    def search(self, text: str, *args: Any, **kwargs: Any) -> _Response:
        self.asked.append(text)
        if text in self.errors:
            raise self.errors[text]
        qid = next(q for q, t in QUERIES.items() if t == text)
        doc = next(iter(QRELS[qid]))
        return _Response(
            (_Hit(doc, f"{doc}::c0", 1), _Hit("other", "other::c0", 2)),
            truncated=("sparse",) if qid == "q3" else (),
        )


def _run(errors: dict[str, BaseException]) -> PipelineResult:
    return run_pipeline("hybrid", FakeSearcher(errors), QUERIES, QRELS)  # type: ignore[arg-type]


def test_one_failing_query_is_recorded_scored_as_a_miss_and_the_run_goes_on():
    ticks: list[int] = []
    searcher = FakeSearcher({QUERIES["q2"]: BadQueryError("the query has 30000 characters")})
    r = run_pipeline("hybrid", searcher, QUERIES, QRELS, progress=ticks.append)  # type: ignore[arg-type]
    assert searcher.asked == list(QUERIES.values())  # q3 ran after q2 failed
    assert len(ticks) == 3
    assert r.failed == 1
    assert r.failures == [QueryFailure("q2", "BadQueryError", "the query has 30000 characters")]
    # The failed query counts in the mean as an empty ranking: 2 of 3 found.
    assert r.queries == 3
    assert r.metrics["recall@10"] == pytest.approx(2 / 3)
    assert r.metrics["ndcg@10"] == pytest.approx(2 / 3)
    assert r.truncated == 1
    assert r.latency_ms["total"]["p50"] == 7.0  # the two answered queries
    d = r.as_dict()
    assert d["failed"] == 1 and d["truncated"] == 1
    assert d["failures"] == [
        {"query_id": "q2", "error": "BadQueryError", "message": "the query has 30000 characters"}
    ]


def test_a_run_without_failures_reports_zero():
    r = _run({})
    assert (r.failed, r.failures, r.metrics["recall@10"]) == (0, [], 1.0)


def test_the_message_is_cut_and_timeouts_and_engine_errors_are_one_querys():
    errors = {
        QUERIES["q1"]: SearchTimeoutError("timed out " + "x" * 1000, hint="retry"),
        QUERIES["q2"]: EngineError("too_many_clauses", status=400),
        QUERIES["q3"]: HybridEsError("search failed on 1 shard(s): refusing a partial answer"),
    }
    r = _run(errors)
    assert [f.error for f in r.failures] == ["SearchTimeoutError", "EngineError", "HybridEsError"]
    assert len(r.failures[0].message) == MAX_ERROR_CHARS
    assert r.metrics["recall@10"] == 0.0 and r.queries == 3


@pytest.mark.parametrize(
    "error",
    [
        PolicyViolationError("a retrieved record failed the policy re-check"),
        EngineUnavailableError("cannot reach Elasticsearch"),
        KeyError("hits"),  # a programming error is never swallowed
        ValueError("bad"),
    ],
)
def test_errors_that_are_not_one_querys_end_the_run(error):
    with pytest.raises(type(error)):
        _run({QUERIES["q2"]: error})
    assert not fails_one_query(error)


def test_the_markdown_report_has_a_failed_column_and_lists_the_failures():
    r = _run({QUERIES["q2"]: BadQueryError("the query | has 30000\ncharacters")})
    report = markdown_report("tiny", [r], command="hybrid-es eval tiny", machine="m", plots=[])
    header = next(line for line in report.splitlines() if line.startswith("| pipeline | path"))
    assert header.endswith("| failure rate | queries | failed |")
    row = next(line for line in report.splitlines() if line.startswith("| hybrid | client-rrf"))
    assert row.endswith("| 3 | 1 |")
    assert "| hybrid | q2 | BadQueryError | the query \\| has 30000 characters |" in report
