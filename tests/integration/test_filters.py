"""Search filters on declared metadata fields, end to end on the real engine (both engines).

The travel fixture gets metadata in the test itself (a team, a year, a publication date, a
draft flag; one document with several teams, one with none), the chunks index maps the
declared fields as bootstrap does for an existing index, and searches with filters return
exactly the in-scope records whose metadata matches: checked against a small reference
evaluator of the grammar written here, independently of the translation. A filter that names a
policy field or an undeclared one sends nothing; native and client fusion stay equal with a
filter; the filtered golden bodies run on Elasticsearch.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from hybrid_es.cluster.bootstrap import _check_indices, _props_missing
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.templates import load_templates, with_filterable_fields
from hybrid_es.errors import ConfigurationError, FilterError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.policy import authorize
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from tests.conftest import HashEmbedder, ingest_as_owners, owner, travel_documents, unguarded
from tests.constants import AGENT, NOW, QUERY
from tests.integration.test_native_fusion import _require_native, assert_same_fusion

pytestmark = pytest.mark.integration

SCOPE = RequestScope(
    stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14), booking_ids=("JPN-2026-0417",)
)
DECLARED = "team:keyword,year:number,published:date,draft:boolean"
FIELDS = parse_filterable_fields(DECLARED)
GOLDEN = Path(__file__).resolve().parents[1] / "golden"

METADATA: dict[str, dict[str, Any]] = {
    "D0-stale-contract": {"team": "contracts", "year": 2025, "published": "2025-04-01"},
    "D1-current-contract": {
        "team": "contracts",
        "year": 2026,
        "published": "2026-04-01",
        "draft": False,
    },
    "D1-current-contract-zh": {"team": "contracts", "year": 2026, "draft": True},
    "D2-accessibility-note": {"team": "accessibility", "year": 2026, "published": "2026-03-01"},
    "D3-booking-itinerary": {"team": ["bookings", "contracts"], "year": 2026},
    "D4-generic-brochure": {"team": "marketing", "year": 2024.5, "draft": True},
    "D5-other-tenant": {"team": "contracts", "year": 2026, "published": "2026-01-01"},
    "D6-guest-review": {"team": "reviews", "year": 2026, "published": "2026-03-15T10:00:00Z"},
    # D2-accessibility-note-zh: none of the declared fields.
}
"""The metadata the test gives the travel fixture (merged over what a document holds)."""


def with_metadata(docs: list[Document]) -> list[Document]:
    return [
        d.model_copy(update={"metadata": {**d.metadata, **METADATA.get(d.id, {})}}) for d in docs
    ]


def map_filter_fields(es: Any, index: str, fields: Any = FIELDS) -> None:
    """Bring an existing chunks index up to the declared fields as bootstrap does: the fields
    that the template with the fields has and the index lacks, added with a put-mapping."""
    (chunks,) = [
        t for t in with_filterable_fields(load_templates(), fields) if t.name == "hybrid-es-chunks"
    ]
    want = chunks.body["template"]["mappings"]["properties"]
    (current,) = es.get_mapping(index).values()
    missing = _props_missing(want, current.get("properties", {}))
    assert set(missing) <= {"meta_filter"}, missing
    if missing:
        es.put_mapping(index, {"properties": missing})


@contextlib.contextmanager
def _scratch(es: Any) -> Iterator[tuple[str, str]]:
    """A chunks and a corpus-state index of their own, deleted afterwards."""
    tag = uuid.uuid4().hex[:10]
    index, state = f"hybrid-es-chunks-filters-{tag}", f"hybrid-es-corpus-state-filters-{tag}"
    es.create_index(index)
    es.create_index(state)
    try:
        yield index, state
    finally:
        es.delete_index(f"{index},{state}")


@pytest.fixture
def indices(es, bootstrapped) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Empty indices for a test that writes."""
    with _scratch(es) as names:
        yield names


@pytest.fixture(scope="module")
def travel(es, bootstrapped) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The travel fixture with metadata, in an index that maps the declared fields: built once
    for the module, since every test that takes it only reads it (the writers take ``indices``)."""
    with _scratch(es) as (index, state):
        map_filter_fields(es, index)
        ing = Ingestor(es, HashEmbedder(), index=index, corpus_state=CorpusState(es, state))
        ingest_as_owners(ing, with_metadata(travel_documents()), now=NOW)
        yield index


def searcher(es: Any, index: str, **kw: Any) -> HybridSearcher:
    kw.setdefault("fusion", "client")
    return HybridSearcher(
        es,
        HashEmbedder(),
        index=index,
        corpus_state_index=index.replace("chunks", "corpus-state"),
        filterable_fields=DECLARED,
        **kw,
    )


# --- a reference evaluator of the grammar (the module docstring's semantics) --------------------


def _values(metadata: Mapping[str, Any], field: str) -> list[Any]:
    v = metadata.get(field)
    return [] if v is None else list(v) if isinstance(v, list) else [v]


def _as_key(field: str, v: Any) -> Any:
    if field == "published":
        text = str(v)
        return datetime.fromisoformat(text if "T" in text else text + "T00:00:00+00:00")
    return v


def _compare(field: str, op: str, want: Any, metadata: Mapping[str, Any]) -> bool:
    have = [_as_key(field, v) for v in _values(metadata, field)]
    if op in ("$in", "$nin"):
        wanted = [_as_key(field, w) for w in want]
        hit = any(h in wanted for h in have)
        return hit if op == "$in" else not hit
    w = _as_key(field, want)
    tests = {
        "$eq": lambda h: h == w,
        "$ne": lambda h: h == w,
        "$gt": lambda h: h > w,
        "$gte": lambda h: h >= w,
        "$lt": lambda h: h < w,
        "$lte": lambda h: h <= w,
    }
    hit = any(tests[op](h) for h in have)
    return not hit if op == "$ne" else hit


def matches(filters: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    for key, value in filters.items():
        if key == "$and":
            ok = all(matches(f, metadata) for f in value)
        elif key == "$or":
            ok = any(matches(f, metadata) for f in value)
        elif key == "$not":
            ok = not matches(value, metadata)
        elif isinstance(value, dict):
            ok = all(_compare(key, op, v, metadata) for op, v in value.items())
        else:
            ok = _compare(key, "$eq", value, metadata)
        if not ok:
            return False
    return True


CASES = [
    {"team": "contracts"},
    {"year": {"$gte": 2026}},
    {"year": {"$gt": 2024, "$lt": 2026}},
    {"team": {"$in": ["accessibility", "marketing"]}},
    {"team": {"$nin": ["contracts"]}},
    {"team": {"$ne": "contracts"}},
    {"$or": [{"team": "marketing"}, {"year": {"$lte": 2025}}]},
    {"$not": {"team": "contracts"}},
    {"published": {"$gte": "2026-03-10"}},
    {"published": {"$lt": date(2026, 3, 15)}},
    {"draft": True},
    {"$and": [{"team": "contracts"}, {"$not": {"draft": True}}]},
    {"team": "bookings", "year": 2026},
]


def _docs(response: Any) -> set[str]:
    return {h.doc_id for h in response.hits}


def test_filters_narrow_to_the_matching_records_in_the_callers_scope(es, travel):
    s = searcher(es, travel)
    everything = s.search(QUERY, AGENT, SCOPE, now=NOW, rerank=False, top_k=50)
    in_scope = _docs(everything)
    # The whole fixture the agent may see reaches the head (the kNN leg returns every record
    # that passes the filter), so each filtered answer can be compared exactly.
    assert len(in_scope) >= 6 and not in_scope & {"D0-stale-contract", "D5-other-tenant"}
    metadata = {h.doc_id: h.source["metadata"] for h in everything.hits}
    for filters in CASES:
        resp = s.search(QUERY, AGENT, SCOPE, now=NOW, rerank=False, top_k=50, filters=filters)
        expected = {d for d in in_scope if matches(filters, metadata[d])}
        assert _docs(resp) == expected, filters
        for h in resp.hits:
            assert h.source["tenant"] == "demo-A" and h.authorization.allowed
            assert matches(filters, h.source["metadata"]), (filters, h.doc_id)
    # The cases are not vacuous: each keeps some and drops some.
    sizes = {
        json.dumps(f, default=str): len({d for d in in_scope if matches(f, metadata[d])})
        for f in CASES
    }
    assert all(0 < n < len(in_scope) for n in sizes.values()), sizes


def test_native_and_client_fusion_agree_with_a_filter(es, travel):
    for method in ("rrf", "linear"):
        _require_native(es, method)
        native = searcher(es, travel, fusion="native", fusion_method=method, alpha=0.4)
        client = searcher(es, travel, fusion="client", fusion_method=method, alpha=0.4)
        for filters in CASES:
            kw = {"now": NOW, "rerank": False, "top_k": 50, "filters": filters}
            a = native.search(QUERY, AGENT, SCOPE, **kw)
            b = client.search(QUERY, AGENT, SCOPE, **kw)
            assert a.fusion_path == f"native-{method}" and b.fusion_path == f"client-{method}"
            assert_same_fusion(a, b)


@pytest.mark.parametrize(
    ("filters", "needle"),
    [
        ({"tenant": "demo-B"}, "tenant is a policy field"),
        ({"acl_groups": "*"}, "acl_groups is a policy field"),
        ({"$or": [{"team": "contracts"}, {"tenant": "demo-B"}]}, "tenant is a policy field"),
        ({"$not": {"acl_users": "agent-1"}}, "acl_users is a policy field"),
        ({"colour": "red"}, "'colour' is not a filterable field"),
        ({"terms": {"tenant": {"index": "x", "id": "1", "path": "t"}}}, "not a filterable field"),
        ({"team": {"$regex": ".*"}}, "unsupported operator '$regex'"),
        ({"year": "2026"}, "year is a number field"),
    ],
)
def test_a_refused_filter_sends_nothing(wire, travel, filters, needle):
    engine, log = wire
    s = searcher(engine, travel)
    sent = len(log)
    with pytest.raises(FilterError) as info:
        s.search(QUERY, AGENT, SCOPE, now=NOW, filters=filters)
    assert needle in info.value.message
    assert "team (keyword), year (number), published (date), draft (boolean)" in (
        info.value.hint or ""
    )
    assert len(log) == sent, log[sent:]  # not even the watermark or the mapping was read


def test_a_wrong_type_refuses_that_document_and_the_rest_is_written(es, indices):
    index, state = indices
    map_filter_fields(es, index)
    ing = Ingestor(es, HashEmbedder(), index=index, corpus_state=CorpusState(es, state))
    docs = [
        Document(id="ok", tenant="demo-A", body="first record", metadata={"year": 2026}),
        Document(id="bad", tenant="demo-A", body="second record", metadata={"year": "2026"}),
        Document(id="list", tenant="demo-A", body="third", metadata={"team": ["a", 5]}),
    ]
    report = ing.ingest(docs, owner("demo-A"), now=NOW, raise_on_error=False)
    reasons = {f["doc_id"]: f["reason"] for f in report.failed_documents}
    assert set(reasons) == {"bad", "list"}
    assert "metadata.year is declared filterable as number" in reasons["bad"]
    assert "got the text '2026'" in reasons["bad"]
    assert "metadata.team is declared filterable as keyword" in reasons["list"]
    es.refresh(index)
    stored = {
        h["_source"]["doc_id"]: h["_source"]
        for h in unguarded(es).scan(index, {"query": {"match_all": {}}})
    }
    assert set(stored) == {"ok"}
    assert stored["ok"]["meta_filter"] == {"year": 2026}
    assert stored["ok"]["metadata"] == {"year": 2026}


def test_a_field_declared_later_reaches_the_stored_chunks_at_the_next_ingest(es, indices):
    index, state = indices
    docs = with_metadata(travel_documents())
    a_docs = [d for d in docs if d.tenant == "demo-A"]
    first = Ingestor(es, HashEmbedder(), index=index, corpus_state=CorpusState(es, state))
    first.ingest(a_docs, owner("demo-A"), now=NOW)
    # Declared afterwards, and mapped as bootstrap maps it on an existing index.
    map_filter_fields(es, index, parse_filterable_fields("team:keyword"))
    again = Ingestor(es, HashEmbedder(), index=index, corpus_state=CorpusState(es, state))
    report = again.ingest(a_docs, owner("demo-A"), now=NOW)
    holding = {d.id for d in a_docs if d.metadata.get("team")}
    # Documents holding the field are written again (their chunks gain it); the one without
    # any declared field is skipped, as is everything at the run after.
    assert report.skipped_unchanged == len(a_docs) - len(holding)
    third = Ingestor(es, HashEmbedder(), index=index, corpus_state=CorpusState(es, state))
    assert third.ingest(a_docs, owner("demo-A"), now=NOW).skipped_unchanged == len(a_docs)
    s = searcher(es, index)
    s.filterable_fields = parse_filterable_fields("team:keyword")
    resp = s.search(
        QUERY, AGENT, SCOPE, now=NOW, rerank=False, top_k=50, filters={"team": "contracts"}
    )
    assert _docs(resp) == {"D1-current-contract", "D1-current-contract-zh", "D3-booking-itinerary"}


def test_a_declared_field_the_index_does_not_map_is_a_configuration_error(es, travel):
    s = searcher(es, travel)
    s.filterable_fields = parse_filterable_fields(DECLARED + ",colour:keyword")
    with pytest.raises(ConfigurationError, match=f"colour .* index {travel} does not map it"):
        s.search(QUERY, AGENT, SCOPE, now=NOW, filters={"colour": "red"})
    s.filterable_fields = parse_filterable_fields("team:number")
    with pytest.raises(ConfigurationError, match="maps it as keyword"):
        s.search(QUERY, AGENT, SCOPE, now=NOW, filters={"team": 5})


def test_bootstrap_refuses_a_changed_type_before_writing(es, travel):
    # The check reads every chunks index of the node (the templates' patterns) and names the
    # first that conflicts: this test's index, or another that maps `team` too (an example
    # program's bootstrap declares it on the shared test node).
    with pytest.raises(ConfigurationError) as info:
        _check_indices(es, Settings(filterable_fields="team:number"))
    assert "maps filterable fields" in info.value.message
    assert "team (mapped as keyword, declared number)" in info.value.message


@pytest.mark.engine(
    "elasticsearch",
    reason="the golden bodies are Elasticsearch retriever bodies; OpenSearch's filtered bodies "
    "run in test_native_and_client_fusion_agree_with_a_filter",
)
@pytest.mark.parametrize("name", ["rrf_kyo_h12_filtered.json", "client_legs_kyo_h12_filtered.json"])
def test_the_cluster_runs_each_filtered_golden_body(es, caps, travel, name):
    if name.startswith("rrf") and not caps.native_rrf:
        pytest.skip("missing capability: native rrf retriever (rank-rrf module or licence)")
    data = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    principal = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
    scope = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
    for body in data if isinstance(data, list) else [data]:
        hits = unguarded(es).search(travel, body)["hits"]["hits"]
        ids = [h["_id"] for h in hits]
        hits = unguarded(es).search(travel, {"query": {"ids": {"values": ids}}, "size": len(ids)})[
            "hits"
        ]["hits"]
        # The filter: team contracts, year >= 2026, not a draft (the zh contract is a draft).
        assert {h["_source"]["doc_id"] for h in hits} == {"D1-current-contract"}
        for h in hits:
            assert authorize(principal, scope, NOW, h["_source"]).allowed, h["_id"]
