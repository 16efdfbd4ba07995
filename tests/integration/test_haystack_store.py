"""The Haystack store and retriever in Haystack's own idioms, against the real engine:
DocumentWriter in a pipeline, filters with FilterPolicy, tenants kept apart, a bad filter refused
before any request, per-document failures surfaced, the YAML round trip, and the example
program (examples/haystack_app.py) run as a user would run it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Haystack reports pipeline runs to its telemetry service unless told so before it is imported.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
pytest.importorskip("haystack", reason="the adapters extra is not installed (haystack)")

from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.core.errors import DeserializationError
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy, FilterPolicy

from hybrid_es.adapters.acting import acting_as, set_principal_resolver
from hybrid_es.adapters.haystack import HybridEsRetriever
from hybrid_es.adapters.haystack_filters import HaystackFilterError
from hybrid_es.adapters.haystack_store import (
    HaystackWriteError,
    HybridEsDocumentStore,
)
from hybrid_es.errors import PolicyViolationError
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.models import WRITER_ROLE, Principal
from hybrid_es.settings import Settings
from tests import namespaces
from tests.integration.test_filters import map_filter_fields
from tests.integration.test_haystack_conformance import make_store

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FIELDS = "team:keyword,year:number"
WRITER_A = Principal(tenant="hs-a", user_id="indexer")
WRITER_B = Principal(tenant="hs-b", user_id="indexer")
READER_A = Principal(tenant="hs-a", user_id="alice")
READER_B = Principal(tenant="hs-b", user_id="bob")
DOCS = [
    Document(id=i, content=text, meta={"team": team, "year": year, "path": path})
    for i, text, team, year, path in [
        ("on-call", "Ops rotates the pager on Monday.", "ops", 2026, "a.md"),
        ("payments", "Ops restarts the payment service.", "ops", 2025, "b.md"),
        ("demos", "Sales restarts demo payments by email.", "sales", 2026, "c.md"),
    ]
]
OPS = {"field": "meta.team", "operator": "==", "value": "ops"}
Y2026 = {"field": "meta.year", "operator": "==", "value": 2026}


@pytest.fixture
def scratch(es, bootstrapped, settings) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    chunks = f"{settings.chunks_index}-test-hsstore-{tag}"
    state = f"{settings.corpus_state_index}-test-hsstore-{tag}"
    es.create_index(chunks)
    es.create_index(state)
    try:
        map_filter_fields(es, chunks, parse_filterable_fields(FIELDS))
        yield chunks, state
    finally:
        es.delete_index(f"{chunks},{state}")


def stores(es: Any, scratch: tuple[str, str]) -> tuple[HybridEsDocumentStore, ...]:
    return tuple(make_store(es, *scratch, w, FIELDS) for w in (WRITER_A, WRITER_B))


def ids(documents: list[Document]) -> list[str]:
    return [d.meta["hybrid_es"]["doc_id"] for d in documents]


def test_document_writer_writes_and_the_retriever_filters(es, scratch):
    store, _ = stores(es, scratch)
    indexing = Pipeline()
    indexing.add_component("writer", DocumentWriter(document_store=store))
    assert indexing.run({"writer": {"documents": DOCS}}) == {"writer": {"documents_written": 3}}
    assert store.count_documents() == 3
    assert [d.id for d in store.filter_documents(OPS)] == ["on-call", "payments"]

    retriever = HybridEsRetriever(document_store=store, filters=OPS, rerank=False)
    query = "who restarts payments"
    # REPLACE (the default): the run's filter instead of the init one.
    assert set(ids(retriever.run(query, READER_A)["documents"])) == {"on-call", "payments"}
    assert set(ids(retriever.run(query, READER_A, filters=Y2026)["documents"])) == {
        "on-call",
        "demos",
    }
    merging = HybridEsRetriever(
        document_store=store, filters=OPS, filter_policy=FilterPolicy.MERGE, rerank=False
    )
    assert ids(merging.run(query, READER_A, filters=Y2026)["documents"]) == ["on-call"]
    hit = merging.run(query, READER_A, filters=Y2026)["documents"][0]
    assert hit.meta["path"] == "a.md" and hit.meta["hybrid_es"]["tenant"] == "hs-a"


def test_another_tenants_store_sees_and_touches_nothing_of_the_first(es, scratch):
    store_a, store_b = stores(es, scratch)
    store_a.write_documents(DOCS)
    assert store_b.count_documents() == 0 and store_b.filter_documents() == []
    # A's id is, for B, an id that does not exist: FAIL writes B's own document, delete
    # passes over it, and A's document is untouched either way.
    mine = Document(id="payments", content="B's own payments note.", meta={"team": "ops"})
    assert store_b.write_documents([mine], policy=DuplicatePolicy.FAIL) == 1
    store_b.delete_documents(["on-call", "does-not-exist"])
    assert [d.id for d in store_b.filter_documents()] == ["payments"]
    a_docs = {d.id: d.content for d in store_a.filter_documents()}
    assert a_docs == {d.id: d.content for d in DOCS}
    retriever = HybridEsRetriever(document_store=store_b, rerank=False)
    found = retriever.run("payments pager", READER_B)["documents"]
    assert {d.meta["hybrid_es"]["tenant"] for d in found} == {"hs-b"}
    # The run's principal decides what a retriever reads, never the store's writer: a retriever
    # built from A's store, run for B, reads B's records only.
    via_a = HybridEsRetriever(document_store=store_a, rerank=False)
    found = via_a.run("payments pager", READER_B)["documents"]
    assert found and {d.meta["hybrid_es"]["tenant"] for d in found} == {"hs-b"}


def test_a_bad_filter_is_refused_before_any_request(wire, scratch):
    engine, log = wire
    store, _ = stores(engine, scratch)
    retriever = HybridEsRetriever(document_store=store)
    log.clear()
    bad = [
        {"field": "meta.tenant", "operator": "==", "value": "hs-b"},
        {"field": "id", "operator": "==", "value": "x"},
        {"field": "meta.colour", "operator": "==", "value": "red"},
        {"field": "meta.year", "operator": ">", "value": "2020"},
        {"operator": "AND"},
    ]
    for filters in bad:
        with pytest.raises(HaystackFilterError):
            retriever.run("payments", READER_A, filters=filters)
        with pytest.raises(HaystackFilterError):
            store.filter_documents(filters)
    assert log == []
    with pytest.raises(HaystackFilterError, match="tenant is a policy field"):
        HybridEsRetriever(document_store=store, filters=bad[0])


def test_documents_that_cannot_be_written_are_listed_and_the_rest_written(es, scratch):
    store, _ = stores(es, scratch)
    docs = [
        DOCS[0],
        Document(id="empty", content=None, meta={"team": "ops"}),
        Document(id="typed", content="a year in words", meta={"year": "twenty"}),
    ]
    with pytest.raises(HaystackWriteError) as info:
        store.write_documents(docs)
    failed = {f["doc_id"]: f["reason"] for f in info.value.failed}
    assert set(failed) == {"empty", "typed"}
    assert (
        "no text content" in failed["empty"] and "declared filterable as number" in failed["typed"]
    )
    assert [d.id for d in store.filter_documents()] == ["on-call"]


def test_a_deleted_document_written_again_is_back(es, scratch):
    store, _ = stores(es, scratch)
    store.write_documents([DOCS[0]])
    store.delete_documents([DOCS[0].id])
    assert store.count_documents() == 0 and store.filter_documents() == []
    assert store.write_documents([DOCS[0]]) == 1  # FAIL: a deleted document does not exist
    assert [d.id for d in store.filter_documents()] == [DOCS[0].id]


def test_a_pipeline_survives_its_yaml_round_trip(es, scratch, settings):
    chunks, state = scratch
    spec = {"chunks_index": chunks, "corpus_state_index": state, "tenancy": "shared",
            "filterable_fields": FIELDS}  # fmt: skip
    store = HybridEsDocumentStore(WRITER_A, settings=Settings(**spec), acl_groups=["*"])
    store.write_documents(DOCS)
    pipeline = Pipeline()
    pipeline.add_component(
        "retriever", HybridEsRetriever(document_store=store, filters=OPS, rerank=False, top_k=5)
    )
    text = pipeline.dumps()
    for secret in (settings.password, settings.api_key, settings.bearer_auth):
        if secret is not None:
            assert secret.get_secret_value() not in text
    assert "HYBRID_ES_PASSWORD" in text and chunks in text
    # No identity is saved: not the writer's (tenant, user), not where to connect or as whom.
    assert "HYBRID_ES_URL" in text and "HYBRID_ES_USERNAME" in text
    for held in (WRITER_A.tenant, WRITER_A.user_id, WRITER_A.scope_version, "principal"):
        assert held not in text
    for connection in (settings.url, settings.username):
        if connection and connection not in (chunks, state):
            assert f": {connection}" not in text and f"'{connection}'" not in text
    # Haystack loads classes from trusted modules only: the application names ours.
    loaded = Pipeline.loads(text, allowed_modules=["hybrid_es.adapters"])
    query = {"retriever": {"query": "who restarts payments", "principal": READER_A}}
    before = ids(pipeline.run(query)["retriever"]["documents"])
    after = ids(loaded.run(query)["retriever"]["documents"])
    assert before == after and set(before) == {"on-call", "payments"}
    assert loaded.dumps() == text
    with pytest.raises(DeserializationError, match="trusted-module allowlist"):
        Pipeline.loads(text)


def test_a_loaded_store_acts_only_as_the_principal_given_at_run_time(es, scratch):
    chunks, state = scratch
    spec = {"chunks_index": chunks, "corpus_state_index": state, "tenancy": "shared",
            "filterable_fields": FIELDS}  # fmt: skip
    saved = HybridEsDocumentStore(WRITER_A, settings=Settings(**spec), acl_groups=["*"]).to_dict()
    # A pipeline saved by an earlier release held the saver's principal: loading ignores it.
    saved["init_parameters"]["principal"] = WRITER_A.model_dump(mode="json")
    store = HybridEsDocumentStore.from_dict(saved)
    with pytest.raises(PolicyViolationError, match="no principal"):
        store.write_documents(DOCS[:1])
    with pytest.raises(PolicyViolationError, match="no principal"):
        store.count_documents()
    with acting_as(WRITER_A):
        assert store.write_documents(DOCS[:1]) == 1
    with acting_as(WRITER_B):  # another caller, another tenant: none of the first's
        assert store.count_documents() == 0 and store.filter_documents() == []
    set_principal_resolver(lambda: READER_A)
    try:
        assert [d.id for d in store.filter_documents()] == [DOCS[0].id]
    finally:
        set_principal_resolver(None)


def test_an_indexer_counts_what_it_wrote_whatever_acl_it_gave(es, scratch):
    chunks, state = scratch
    indexer = Principal(tenant="hs-a", user_id="indexer", roles=(WRITER_ROLE,))
    store = make_store(es, chunks, state, indexer, FIELDS)
    store.acl_groups = ("managers",)  # documents the indexer itself may not read
    assert store.write_documents(DOCS) == 3
    assert store.count_documents() == 3 and store.filter_documents() == []
    with pytest.raises(DuplicateDocumentError):
        store.write_documents(DOCS[:1], DuplicatePolicy.FAIL)
    assert store.write_documents(DOCS, DuplicatePolicy.SKIP) == 0
    assert store.write_documents(DOCS, DuplicatePolicy.OVERWRITE) == 3  # unchanged: skipped
    assert store.count_documents() == 3
    # A reader in the ACL reads them; the indexer's count is its own view, not a reader's.
    manager = Principal(tenant="hs-a", user_id="mia", groups=("managers",))
    assert store.searcher.count_records(manager) == 3


def test_the_example_program_runs(es):
    # The example bootstraps its declared field in its own namespace (no --force: the session's
    # templates are not touched), in the shared tenancy layout as before.
    ns = namespaces.example_namespace("haystack_app.py")
    namespaces.drop(es, ns)
    try:
        done = namespaces.run_example("haystack_app.py", HYBRID_ES_TENANCY="shared")
    finally:
        namespaces.drop(es, ns)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines and all(
        line.split()[0] in ("handbook/on-call.md", "runbooks/payments.md") for line in lines
    )
    assert lines[0].startswith("runbooks/payments.md")
