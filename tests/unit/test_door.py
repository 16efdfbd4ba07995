"""The chunks door: a body read of a guarded chunks index is refused at the engine seam unless it
came through ``retrieval.door.ChunksDoor``, which checks the policy in every leaf first.

The engine here never reaches a cluster: its ``_send`` fails the test if it is called, so a
refusal is shown to happen before anything is sent, and a pass through the door is shown by the
send being attempted."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from hybrid_es.cluster import guard
from hybrid_es.cluster.engine import ElasticsearchEngine, Engine, OpenSearchEngine
from hybrid_es.errors import EngineError, PolicyViolationError
from hybrid_es.retrieval.door import ChunksDoor, control_reads, tenant_body, tenant_policy

PACKAGE = Path(__file__).resolve().parents[2] / "hybrid_es"
BENCHMARKS = PACKAGE.parent / "benchmarks"  # not installed, but its benchmarks read the chunks
BASE = "hybrid-es-chunks"
INDEX = f"{BASE}-t-acme"
POLICY = tenant_policy("acme")


class Sent(Exception):
    """The request got past every check and would have gone out (the engine translates it into
    an EngineError naming it)."""


SENT = "Sent: "


class OfflineEngine(Engine):
    flavor = "elasticsearch"

    def _send(self, method: str, path: str, params: Any, body: Any, opaque_id: Any = None) -> Any:
        raise Sent(method, path, body)

    def with_options(self, *, request_timeout: float, max_retries: int) -> Engine:
        return self._carry(OfflineEngine(self.raw))

    def _helpers(self) -> Any:
        class Helpers:
            @staticmethod
            def scan(raw: Any, index: str, query: Any) -> Any:
                raise Sent("scan", index, query)
                yield  # a generator, as the clients' helper is

        return Helpers


@pytest.fixture
def engine() -> OfflineEngine:
    e = OfflineEngine(raw=None)
    e.guard(BASE)
    return e


AROUND = [
    lambda e: e.search(INDEX, {"query": {"match_all": {}}}),
    lambda e: e.count(INDEX),
    lambda e: list(e.scan(INDEX, {"query": {"match_all": {}}})),
    lambda e: e.msearch([{"index": INDEX}, {"query": {"match_all": {}}}]),
    lambda e: e.msearch([{}, {"query": {"match_all": {}}}]),  # no index: all of them
    lambda e: e.request("POST", f"/{INDEX}/_search", body={}),
    lambda e: e.request("POST", "/_search", body={}),
    lambda e: e.request("POST", "/*/_search", body={}),
    lambda e: e.request("POST", "/_all/_count"),
    lambda e: e.request("POST", f"/other,{INDEX}/_search"),
    lambda e: e.request("POST", "/hybrid-es-*/_search"),
    lambda e: e.request("POST", f"/{INDEX}/_delete_by_query", body={}),
    lambda e: e.request("POST", f"/{INDEX}/_explain/x", body={}),
    lambda e: e.request("POST", f"/{INDEX}/_pit"),
    lambda e: e.request("POST", "/_msearch", body=json.dumps({"index": INDEX}) + "\n{}\n"),
    lambda e: e.with_options(request_timeout=1, max_retries=0).search(INDEX, {}),
]


@pytest.mark.parametrize("call", AROUND, ids=[str(i) for i in range(len(AROUND))])
def test_a_body_read_of_a_chunks_index_around_the_door_is_refused_before_sending(engine, call):
    with pytest.raises(PolicyViolationError, match="did not come through the policy door"):
        call(engine)


ALLOWED = [
    lambda e: e.search("hybrid-es-traces-2026.12", {"query": {"match_all": {}}}),
    lambda e: e.request("GET", f"/{INDEX}/_doc/k"),  # by id: no body, re-checked by its reader
    lambda e: e.request("GET", f"/{INDEX}/_mapping"),
    lambda e: e.request("GET", "/_search/pipeline/hybrid-es-linear"),
    lambda e: e.msearch([{"index": "hybrid-es-packets"}, {"query": {"match_all": {}}}]),
]


@pytest.mark.parametrize("call", ALLOWED, ids=[str(i) for i in range(len(ALLOWED))])
def test_other_indices_and_reads_by_id_are_not_the_doors(engine, call):
    with pytest.raises(EngineError, match=SENT):
        call(engine)


class TypedClient:
    """A client of either flavour that reaches no cluster: every typed method (``search``,
    ``indices.refresh``) raises Sent with its name, so a call that got past the guard shows
    which method it took."""

    def __init__(self, api: str = "") -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return TypedClient(f"{self.api}.{name}".lstrip("."))

    def options(self, **kwargs: Any) -> TypedClient:
        return self

    def __call__(self, **kwargs: Any) -> Any:
        raise Sent(self.api)


FLAVOURS = [ElasticsearchEngine, OpenSearchEngine]


@pytest.fixture(params=FLAVOURS, ids=["elasticsearch", "opensearch"])
def typed(request: Any) -> Engine:
    e: Engine = request.param(raw=TypedClient())
    e.guard(BASE)
    return e


@pytest.mark.parametrize("call", AROUND[:5], ids=[str(i) for i in range(5)])
def test_the_typed_calls_of_both_flavours_pass_the_same_guard(typed, call):
    with pytest.raises(PolicyViolationError, match="did not come through the policy door"):
        call(typed)


TYPED = [
    ("search", lambda e: e.search("hybrid-es-traces-2026.12", {"query": {"match_all": {}}})),
    ("msearch", lambda e: e.msearch([{"index": "hybrid-es-packets"}, {"size": 0}])),
    ("count", lambda e: e.count("hybrid-es-packets")),
    ("get", lambda e: e.get(INDEX, "k")),  # by id: no body, re-checked by its reader
    ("mget", lambda e: e.mget(INDEX, ["k"])),
    ("index", lambda e: e.index("hybrid-es-packets", {"a": 1}, id="k")),
    ("indices.refresh", lambda e: e.refresh(INDEX)),
    ("cluster.health", lambda e: e.health()),
    ("search", lambda e: ChunksDoor(e).search(INDEX, tenant_body("acme"), POLICY)),
    ("msearch", lambda e: ChunksDoor(e).msearch([(INDEX, tenant_body("acme"))], POLICY)),
    ("count", lambda e: ChunksDoor(e).count(INDEX, tenant_body("acme")["query"], POLICY)),
]


@pytest.mark.parametrize("api, call", TYPED, ids=[f"{i}-{a}" for i, (a, _) in enumerate(TYPED)])
def test_what_the_guard_lets_through_goes_out_by_the_clients_typed_method(typed, api, call):
    with pytest.raises(EngineError, match=f"{SENT}{api}$"):
        call(typed)


def test_an_unguarded_engine_refuses_nothing():
    with pytest.raises(EngineError, match=SENT):
        OfflineEngine(raw=None).search(INDEX, {"query": {"match_all": {}}})


def test_the_door_sends_a_body_that_carries_the_policy_in_every_leaf(engine):
    door = ChunksDoor(engine)
    body = tenant_body("acme", {"term": {"doc_id": "d"}}, size=1)
    for call in (
        lambda: door.search(INDEX, body, POLICY),
        lambda: door.msearch([(INDEX, body), (INDEX, body)], POLICY),
        lambda: door.count(INDEX, body["query"], POLICY),
        lambda: list(door.scan(INDEX, body, POLICY)),
    ):
        with pytest.raises(EngineError, match=SENT):
            call()
    assert not guard.through_door()  # the passage closes behind each call


BAD_BODIES = [
    {"query": {"match_all": {}}},
    {"query": {"bool": {"filter": [tenant_policy("other")]}}},
    {"query": {"bool": {"filter": [POLICY]}}, "aggs": {"t": {"terms": {"field": "tenant"}}}},
    {"query": {"bool": {"filter": [POLICY]}}, "knn": {"field": "embedding"}},
]


@pytest.mark.parametrize("body", BAD_BODIES, ids=["no-policy", "other-tenant", "aggs", "knn"])
def test_the_door_refuses_a_body_without_the_policy_before_sending(engine, body):
    door = ChunksDoor(engine)
    with pytest.raises(PolicyViolationError):
        door.search(INDEX, body, POLICY)
    with pytest.raises(PolicyViolationError):
        door.msearch([(INDEX, tenant_body("acme")), (INDEX, body)], POLICY)
    with pytest.raises(PolicyViolationError):
        list(door.scan(INDEX, body, POLICY))


def test_the_door_is_closed_while_a_scan_hands_a_hit_to_its_caller(engine):
    class Paging(OfflineEngine):
        def scan(self, index: str, body: dict[str, Any]):  # type: ignore[override]
            guard.check(f"/{index}/_search", self.guarded)  # what Engine.scan does first
            yield {"_id": "1"}
            yield {"_id": "2"}

    paging = Paging(raw=None)
    paging.guard(BASE)
    inside = []
    for _hit in ChunksDoor(paging).scan(INDEX, tenant_body("acme"), POLICY):
        inside.append(guard.through_door())
        with pytest.raises(PolicyViolationError):
            paging.search(INDEX, {"query": {"match_all": {}}})
    assert inside == [False, False]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_only_the_door_opens_the_passage_and_only_verify_reads_without_a_policy():
    for path in sorted([*PACKAGE.rglob("*.py"), *BENCHMARKS.rglob("*.py")]):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        names = _imports(path)
        if rel != "hybrid_es/retrieval/door.py":
            assert "hybrid_es.cluster.guard.opened" not in names, rel
        if not rel.startswith("hybrid_es/verify/") and rel != "hybrid_es/retrieval/door.py":
            assert "hybrid_es.retrieval.door.control_reads" not in names, rel


def test_control_reads_open_the_passage_only_inside(engine):
    with control_reads("a test"), pytest.raises(EngineError, match=SENT):
        engine.search(INDEX, {"query": {"match_all": {}}})
    with pytest.raises(PolicyViolationError):
        engine.search(INDEX, {"query": {"match_all": {}}})
