"""The traces door (issue 36, item 7): a body read of a guarded traces index is refused at the
engine seam unless it came through ``traces.door.TracesDoor``, which checks the caller's tenant
and user scope (or operator role) in the body first, as ``tests/unit/test_door.py`` shows for
the chunks.

Before the fix ``TraceReader`` sent its bodies straight to the engine: a reader built a little
differently (a missing ``scope_filter``, an aggregation over every tenant) would have read other
callers' traces, and nothing but review stood in the way. The engine here never reaches a
cluster: its ``_send`` raises ``Sent``, so a refusal is shown to happen before anything is sent,
and a pass through the door is shown by the send being attempted, with the door's passage open.
"""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hybrid_es.cluster import guard
from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import EngineError, PolicyViolationError
from hybrid_es.models import OPERATOR_ROLE, Principal
from hybrid_es.retrieval.door import ChunksDoor, tenant_body, tenant_policy
from hybrid_es.traces.door import TracesDoor, check_scope, scope_filter
from hybrid_es.traces.reader import TraceReader
from hybrid_es.traces.retention import prune_traces
from hybrid_es.traces.storage import TraceStorage

PACKAGE = Path(__file__).resolve().parents[2] / "hybrid_es"
BENCHMARKS = PACKAGE.parent / "benchmarks"  # not installed, but run against the same cluster
STORAGE = TraceStorage("hybrid-es-traces", "data-stream")
DAY = "hybrid-es-traces-2026.12.01"
AGENT = Principal(tenant="acme", user_id="agent-1")
OPS = Principal(tenant="ops", user_id="o", roles=(OPERATOR_ROLE,))


class Sent(Exception):
    """The request got past every check and would have gone out."""


class OfflineEngine(Engine):
    """Answers nothing: records whether each request it would send came through the traces
    door's passage (``sent``), then raises Sent, unless ``answers`` holds a reply for its path."""

    flavor = "elasticsearch"

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        super().__init__(raw=None)
        self.answers = answers or {}
        self.sent: list[tuple[str, bool]] = []

    def _send(self, method: str, path: str, params: Any, body: Any, opaque_id: Any = None) -> Any:
        self.sent.append((path, guard.through_door("traces")))
        for end, answer in self.answers.items():
            if path.split("?")[0].endswith(end):
                return answer
        raise Sent(method, path, body)

    def with_options(self, *, request_timeout: float, max_retries: int) -> Engine:
        return self._carry(OfflineEngine(self.answers))

    def _helpers(self) -> Any:
        class Helpers:
            @staticmethod
            def scan(raw: Any, index: str, query: Any) -> Any:
                raise Sent("scan", index, query)
                yield  # a generator, as the clients' helper is

        return Helpers


@pytest.fixture
def engine() -> OfflineEngine:
    e = OfflineEngine()
    TracesDoor(e, STORAGE)  # what every reader and pruner does to the engine it is given
    return e


def _mine(*clauses: dict[str, Any]) -> dict[str, Any]:
    return {"query": {"bool": {"filter": [*scope_filter(AGENT), *clauses]}}, "size": 5}


AROUND = [
    lambda e: e.search(STORAGE.pattern, _mine()),  # even a scoped body: only the door sends
    lambda e: e.search(DAY, {"query": {"match_all": {}}}),
    lambda e: e.search(STORAGE.stream, {"size": 0}),
    lambda e: e.count(STORAGE.pattern),
    lambda e: list(e.scan(STORAGE.pattern, {"query": {"match_all": {}}})),
    lambda e: e.msearch([{"index": DAY}, {"query": {"match_all": {}}}]),
    lambda e: e.msearch([{}, {"query": {"match_all": {}}}]),  # no index: all of them
    lambda e: e.request("POST", f"/{DAY}/_search", body={}),
    lambda e: e.request("POST", "/_search", body={}),
    lambda e: e.request("POST", "/*/_count"),
    lambda e: e.request("POST", "/hybrid-es-*/_search"),
    lambda e: e.request("POST", "/hybrid-es-traces/_search"),  # the layout before streams
    lambda e: e.request("POST", f"/{DAY}/_delete_by_query", body={}),
    lambda e: e.request("POST", "/_msearch", body=json.dumps({"index": DAY}) + "\n{}\n"),
    lambda e: e.with_options(request_timeout=1, max_retries=0).search(DAY, {}),
    # The chunks door's passage is not the traces': a checked chunks body does not carry a
    # traces read with it.
    lambda e: ChunksDoor(e).search(
        f"hybrid-es-chunks,{DAY}", tenant_body("acme"), tenant_policy("acme")
    ),
]


@pytest.mark.parametrize("call", AROUND, ids=[str(i) for i in range(len(AROUND))])
def test_a_body_read_of_the_traces_around_the_door_is_refused_before_sending(engine, call):
    with pytest.raises(PolicyViolationError, match="did not come through the traces door"):
        call(engine)
    assert engine.sent == []


ALLOWED = [
    lambda e: e.search("hybrid-es-packets", {"query": {"match_all": {}}}),
    lambda e: e.request("GET", f"/{DAY}/_doc/k"),  # by id: no body
    lambda e: e.request("GET", f"/{DAY}/_mapping"),
    lambda e: e.request("GET", f"/_data_stream/{STORAGE.stream}"),
    lambda e: e.request("POST", f"/{STORAGE.stream}/_refresh"),
]


@pytest.mark.parametrize("call", ALLOWED, ids=[str(i) for i in range(len(ALLOWED))])
def test_other_indices_and_requests_without_a_body_read_are_not_the_doors(engine, call):
    with pytest.raises(EngineError, match="Sent: "):
        call(engine)


def test_every_read_of_the_trace_reader_goes_through_the_door():
    e = OfflineEngine()
    reader = TraceReader(e, STORAGE)
    for read in (
        lambda: reader.tail(AGENT),
        lambda: reader.tail(AGENT, errors=True, candidates=False),
        lambda: reader.show(AGENT, "abc"),
        lambda: reader.packet_stats(AGENT),
        lambda: reader.tail(OPS),
        lambda: reader.tail(OPS, tenant="acme"),
        lambda: reader.packet_stats(OPS, tenant="acme"),
    ):
        with pytest.raises(EngineError, match="Sent: "):
            read()
    assert [through for _, through in e.sent] == [True] * 7
    assert not guard.through_door("traces")  # the passage closes behind each read
    # And the reader's engine refuses a read of the traces that does not come that way.
    with pytest.raises(PolicyViolationError, match="traces door"):
        e.search(STORAGE.pattern, {"query": {"match_all": {}}})


def test_pruning_reads_the_ages_of_a_stream_through_the_door():
    stream = {"data_streams": [{"name": STORAGE.stream, "indices": [{"index_name": ".ds-1"}]}]}
    e = OfflineEngine(
        {
            "/_has_privileges": {
                "index": {STORAGE.pattern: {"view_index_metadata": True, "monitor": True}}
            },
            f"/_data_stream/{STORAGE.stream}": stream,
            "/_refresh": {},
            "/_search": {"aggregations": {"by": {"buckets": []}}},
            STORAGE.pattern: {},
        }
    )
    now = datetime(2026, 12, 1, tzinfo=UTC)
    report = prune_traces(e, STORAGE, OPS, older_than=timedelta(days=30), now=now, dry_run=True)
    (search,) = [(path, through) for path, through in e.sent if path.endswith("/_search")]
    assert search == (f"/{STORAGE.stream}/_search", True)
    assert report.dry_run


BAD = [
    ({"query": {"match_all": {}}}, "no query.bool.filter"),
    ({"size": 5}, "no query.bool.filter"),
    (
        {"query": {"bool": {"filter": [{"term": {"organization.id": "acme"}}]}}},
        "lacks the caller's scope",
    ),  # the tenant without the user
    (
        {"query": {"bool": {"filter": scope_filter(Principal(tenant="acme", user_id="b"))}}},
        "lacks the caller's scope",
    ),  # another user's scope
    (
        {"query": {"bool": {"should": [{"bool": {"filter": scope_filter(AGENT)}}]}}},
        "no query.bool.filter",
    ),  # the scope where it does not restrict
    ({**_mine(), "aggs": {"all": {"global": {}}}}, "'global' aggregation"),
    ({**_mine(), "aggs": {"s": {"significant_terms": {"field": "user.id"}}}}, "significant"),
    (
        {**_mine(), "aggs": {"f": {"filter": {"match_all": {}}, "aggs": {"g": {"global": {}}}}}},
        "'global' aggregation",
    ),  # nested
    (
        {**_mine(), "aggs": {"u": {"terms": {"field": "user.id", "min_doc_count": 0}}}},
        "min_doc_count 0",
    ),
    ({**_mine(), "suggest": {"u": {"text": "a", "term": {"field": "user.id"}}}}, "suggest"),
    ({**_mine(), "knn": {"field": "v"}}, "knn"),
    ({**_mine(), "retriever": {"standard": {}}}, "retriever"),
    ({**_mine(), "post_filter": {"match_all": {}}}, "post_filter"),
]


@pytest.mark.parametrize(("body", "why"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_the_door_refuses_a_body_outside_the_callers_scope_before_sending(engine, body, why):
    with pytest.raises(PolicyViolationError, match=why):
        check_scope(body, AGENT)
    with pytest.raises(PolicyViolationError, match=why):
        TracesDoor(engine, STORAGE).search(AGENT, body)
    assert engine.sent == []


def test_an_unscoped_read_is_an_operators_and_a_named_tenant_must_be_in_it(engine):
    everything: dict[str, Any] = {"size": 0, "aggs": {"t": {"terms": {"field": "_index"}}}}
    check_scope(everything, OPS)
    with pytest.raises(PolicyViolationError, match=r"no query\.bool\.filter"):
        check_scope(everything, AGENT)
    with pytest.raises(PolicyViolationError, match=r"no query\.bool\.filter"):
        check_scope(everything, OPS, "acme")  # the operator narrowed to one tenant
    check_scope({"query": {"bool": {"filter": scope_filter(OPS, "acme")}}}, OPS, "acme")
    # Another tenant named by a non-operator narrows their own view (and so finds nothing).
    narrowed = {"query": {"bool": {"filter": scope_filter(AGENT, "other")}}}
    check_scope(narrowed, AGENT, "other")
    with pytest.raises(PolicyViolationError):
        check_scope({"query": {"bool": {"filter": scope_filter(AGENT)}}}, AGENT, "other")


def test_the_door_reads_only_the_traces(engine):
    door = TracesDoor(engine, STORAGE)
    for index in ("hybrid-es-chunks", f"{DAY},hybrid-es-packets", "*"):
        with pytest.raises(PolicyViolationError, match="not one of the traces indices"):
            door.search(AGENT, _mine(), index=index)
    with pytest.raises(EngineError, match="Sent: "):
        door.search(AGENT, _mine(), index=DAY)
    assert engine.sent == [(f"/{DAY}/_search", True)]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _attributes(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}


def test_only_the_traces_door_opens_its_passage():
    for path in sorted([*PACKAGE.rglob("*.py"), *BENCHMARKS.rglob("*.py")]):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if rel in ("hybrid_es/traces/door.py", "hybrid_es/cluster/guard.py"):
            continue
        names = _imports(path)
        for opener in ("opened_traces", "_passage", "_THROUGH_DOOR"):
            assert f"hybrid_es.cluster.guard.{opener}" not in names, rel
        assert not {"opened_traces", "_passage", "_THROUGH_DOOR"} & _attributes(path), rel
