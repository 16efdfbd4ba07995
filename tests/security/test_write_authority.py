"""Inside one tenant, a writer changes only what it may change (``hybrid_es.ingest.authority``):
every store's write, replace and delete, run by a member without rights to a record, on both
engines.

The world: tenant ``wa`` holds ``payroll``, readable by the ``managers`` group only, written by
the tenant's writer role. ``nobody`` is a member of the tenant with no group. For each store
(the library's Ingestor, LangChain, Haystack with each duplicate policy, LlamaIndex) nobody's
delete of ``payroll`` does exactly what its delete of an id that was never written does, its
write is refused in the one wording every refusal has, and afterwards ``payroll`` is unchanged
(text, ACL, version) and its managers read it as before. The controls: a manager may replace it
(the earlier text kept as an audit copy, never searched), nobody may create a new document, a
manager may not widen the ACL, and the writer role may do anything.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
pytest.importorskip("haystack", reason="the adapters extra is not installed (haystack)")

from haystack import Document as HaystackDocument
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from langchain_core.documents import Document as LcDocument
from llama_index.core.schema import TextNode

from hybrid_es import telemetry
from hybrid_es.adapters.haystack_store import HaystackWriteError, HybridEsDocumentStore
from hybrid_es.adapters.langchain_store import HybridEsVectorStore as LangChainStore
from hybrid_es.adapters.llamaindex_store import HybridEsVectorStore as LlamaIndexStore
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.errors import BulkIndexError
from hybrid_es.identity import audit_doc_id
from hybrid_es.ingest.authority import refusal_message
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.models import WRITER_ROLE, Principal
from hybrid_es.retrieval.door import control_reads
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.conftest import HashEmbedder
from tests.integration.test_filters import map_filter_fields

pytestmark = pytest.mark.integration

TENANT = "wa"
DECLARED = "ref_doc_id:keyword"
WRITER = Principal(tenant=TENANT, user_id="ingest-bot", roles=(WRITER_ROLE,))
MANAGER = Principal(tenant=TENANT, user_id="mia", groups=("managers",))
NOBODY = Principal(tenant=TENANT, user_id="nobody")
SECRET_ID = "payroll"
SECRET_TEXT = "The payroll run moves to the 25th; the bonus pool is 4.2 million."
MISSING_ID = "never-written"
ATTACK_TEXT = "Payroll is public now: everyone gets the bonus."


@dataclass
class World:
    ingestor: Ingestor
    searcher: HybridSearcher
    index: str
    state: str


@pytest.fixture
def world(es, bootstrapped) -> Iterator[World]:  # type: ignore[no-untyped-def]
    """``payroll`` written by the tenant's writer, readable by managers only (its
    ``ref_doc_id`` is itself, so a LlamaIndex delete by document finds it too)."""
    tag = uuid.uuid4().hex[:10]
    index, state = f"hybrid-es-chunks-wa-{tag}", f"hybrid-es-corpus-state-wa-{tag}"
    es.create_index(index)
    es.create_index(state)
    map_filter_fields(es, index, parse_filterable_fields(DECLARED))
    ingestor = Ingestor(es, HashEmbedder(), index=index, corpus_state=CorpusState(es, state))
    searcher = HybridSearcher(
        es,
        HashEmbedder(),
        index=index,
        corpus_state_index=state,
        filterable_fields=DECLARED,
        fusion="client",
    )
    secret = Document(
        id=SECRET_ID,
        tenant=TENANT,
        body=SECRET_TEXT,
        acl_groups=("managers",),
        metadata={"ref_doc_id": SECRET_ID},
    )
    ingestor.ingest([secret], WRITER)
    try:
        yield World(ingestor, searcher, index, state)
    finally:
        es.delete_index(f"{index},{state}")


def secret_as_managers_read_it(world: World) -> list[tuple[str, str, int]]:
    """``payroll`` as a manager reads it: (text, ACL groups, version) per chunk."""
    return [
        (r.text, ",".join(r.source.get("acl_groups") or ()), r.source_version)
        for r in world.searcher.records(MANAGER, doc_ids=[SECRET_ID])
    ]


UNCHANGED = [(SECRET_TEXT, "managers", 1)]


# -- the stores, as a member without rights uses them ----------------------------------------


def _langchain(world: World, who: Principal) -> LangChainStore:
    return LangChainStore(world.searcher, world.ingestor, who, acl_groups=("*",))


def _haystack(world: World, who: Principal) -> HybridEsDocumentStore:
    return HybridEsDocumentStore(
        who, acl_groups=["*"], searcher=world.searcher, ingestor=world.ingestor
    )


def _llamaindex(world: World, who: Principal) -> LlamaIndexStore:
    return LlamaIndexStore(world.searcher, world.ingestor, who, acl_groups=("*",), rerank=False)


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What a call gave back: its value, or the kind of error it raised."""
    try:
        return "returned", call()
    except Exception as exc:  # the outcome is the subject
        return "raised", type(exc).__name__


DELETES: dict[str, Callable[[World, str], Any]] = {
    "library": lambda w, i: w.ingestor.delete_document(NOBODY, i),
    "langchain": lambda w, i: _langchain(w, NOBODY).delete([i]),
    "haystack": lambda w, i: _haystack(w, NOBODY).delete_documents([i]),
    "llamaindex-nodes": lambda w, i: _llamaindex(w, NOBODY).delete_nodes([i]),
    "llamaindex-ref-doc": lambda w, i: _llamaindex(w, NOBODY).delete(i),
}


@pytest.mark.parametrize("store", sorted(DELETES))
def test_a_refused_delete_looks_exactly_like_a_delete_of_a_missing_id(world, store):
    delete = DELETES[store]
    assert _outcome(lambda: delete(world, SECRET_ID)) == _outcome(lambda: delete(world, MISSING_ID))
    assert secret_as_managers_read_it(world) == UNCHANGED


def _library_write(world: World, doc_id: str) -> list[dict[str, Any]]:
    doc = Document(id=doc_id, tenant=TENANT, body=ATTACK_TEXT, acl_groups=("*",))
    report = world.ingestor.ingest([doc], NOBODY, raise_on_error=False)
    return report.failed_documents


def _langchain_write(world: World, doc_id: str) -> list[dict[str, Any]]:
    with pytest.raises(BulkIndexError) as err:
        _langchain(world, NOBODY).add_documents(
            [LcDocument(page_content=ATTACK_TEXT)], ids=[doc_id]
        )
    return list(err.value.failed)


def _haystack_write(policy: DuplicatePolicy) -> Callable[[World, str], list[dict[str, Any]]]:
    def write(world: World, doc_id: str) -> list[dict[str, Any]]:
        store = _haystack(world, NOBODY)
        with pytest.raises(HaystackWriteError) as err:
            store.write_documents([HaystackDocument(id=doc_id, content=ATTACK_TEXT)], policy)
        return list(err.value.failed)

    return write


def _llamaindex_write(world: World, doc_id: str) -> list[dict[str, Any]]:
    with pytest.raises(BulkIndexError) as err:
        _llamaindex(world, NOBODY).add([TextNode(id_=doc_id, text=ATTACK_TEXT)])
    return list(err.value.failed)


WRITES: dict[str, Callable[[World, str], list[dict[str, Any]]]] = {
    "library": _library_write,
    "langchain": _langchain_write,
    "haystack-fail": _haystack_write(DuplicatePolicy.FAIL),
    "haystack-skip": _haystack_write(DuplicatePolicy.SKIP),
    "haystack-overwrite": _haystack_write(DuplicatePolicy.OVERWRITE),
    "llamaindex": _llamaindex_write,
}


@pytest.mark.parametrize("store", sorted(WRITES))
def test_a_refused_write_changes_nothing_and_tells_nothing_of_the_record(world, store):
    failed = WRITES[store](world, SECRET_ID)
    (reason,) = {str(f["reason"]) for f in failed}
    # One wording for every refusal: the caller's own id and name, nothing of what is stored.
    assert reason == refusal_message(NOBODY, SECRET_ID)
    for stored in (SECRET_TEXT, "managers", "4.2", "v1"):
        assert stored not in reason
    assert secret_as_managers_read_it(world) == UNCHANGED
    assert world.searcher.records(NOBODY, doc_ids=[SECRET_ID]) == []


def test_a_duplicate_policy_sees_only_what_its_writer_may_replace(world):
    # FAIL says "exists" only of ids the caller may replace: a hidden one is refused, not named.
    store = _haystack(world, NOBODY)
    with pytest.raises(HaystackWriteError):
        store.write_documents([HaystackDocument(id=SECRET_ID, content=ATTACK_TEXT)])
    # ... while the tenant's writer, who may replace it, is told it exists.
    with pytest.raises(DuplicateDocumentError, match=SECRET_ID):
        _haystack(world, WRITER).write_documents(
            [HaystackDocument(id=SECRET_ID, content=ATTACK_TEXT)]
        )
    assert secret_as_managers_read_it(world) == UNCHANGED


def test_refusals_are_counted_for_operators(world):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    telemetry.configure(meter_provider=MeterProvider(metric_readers=[reader]))
    try:
        report = world.ingestor.ingest(
            [Document(id=SECRET_ID, tenant=TENANT, body=ATTACK_TEXT)], NOBODY, raise_on_error=False
        )
        assert world.ingestor.delete_document(NOBODY, SECRET_ID) == 0
        assert world.ingestor.delete_document(NOBODY, MISSING_ID) == 0  # nothing to refuse
    finally:
        points = [
            (dict(p.attributes), p.value)
            for rm in reader.get_metrics_data().resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == "hybrid_es.writes.refused"
            for p in m.data.data_points
        ]
        telemetry.configure()
    assert report.refused == 1
    assert sorted(points, key=str) == [
        ({"operation": "delete", "reason": "hidden"}, 1),
        ({"operation": "write", "reason": "hidden"}, 1),
    ]


# -- what a member may do, and what no member may ---------------------------------------------


def test_a_member_creates_new_documents_and_reads_them_back(world):
    doc = Document(id="nobody-notes", tenant=TENANT, body="My own notes.", acl_users=("nobody",))
    report = world.ingestor.ingest([doc], NOBODY)
    assert report.chunks == 1 and report.refused == 0
    assert [r.text for r in world.searcher.records(NOBODY, doc_ids=["nobody-notes"])] == [
        "My own notes."
    ]


def test_a_reader_replaces_within_the_acl_and_the_earlier_text_is_kept_for_audit(es, world):
    corrected = "The payroll run moves to the 26th."
    doc = Document(id=SECRET_ID, tenant=TENANT, body=corrected, acl_groups=("managers",))
    report = world.ingestor.ingest([doc], MANAGER)
    assert (report.chunks, report.refused, report.audit_copies) == (1, 0, 1)
    assert secret_as_managers_read_it(world) == [(corrected, "managers", 1)]
    # The earlier text was not overwritten in place: its audit copy holds it, marked deleted,
    # under an id no live document can have; no search or listing ever shows it.
    with control_reads("the audit copy of the replaced text"):
        hits = es.search(
            world.index, {"query": {"prefix": {"doc_id": f"{SECRET_ID}::r"}}}, what="audit copy"
        )["hits"]["hits"]
    (copy,) = [h["_source"] for h in hits]
    assert copy["raw_chunk_text"] == SECRET_TEXT and copy["deleted"] is True
    assert copy["doc_id"] == audit_doc_id(SECRET_ID, copy["doc_hash"])
    assert "embedding" not in copy
    found = world.searcher.search("payroll 25th bonus pool", MANAGER, rerank=False)
    assert all(h.doc_id == SECRET_ID for h in found.hits)
    assert SECRET_TEXT not in {h.text for h in found.hits}


def test_no_member_widens_the_acl_of_what_it_replaces(world):
    opened = Document(id=SECRET_ID, tenant=TENANT, body=SECRET_TEXT, acl_groups=("*",))
    report = world.ingestor.ingest([opened], MANAGER, raise_on_error=False)
    assert report.refused == 1
    assert [f["reason"] for f in report.failed_documents] == [refusal_message(MANAGER, SECRET_ID)]
    assert secret_as_managers_read_it(world) == UNCHANGED
    # Narrowing is no widening; adding oneself (a reader already) neither.
    narrowed = Document(
        id=SECRET_ID, tenant=TENANT, body=SECRET_TEXT, acl_users=("mia",), acl_groups=()
    )
    assert world.ingestor.ingest([narrowed], MANAGER).refused == 0


def test_the_writer_role_writes_and_deletes_any_document_of_its_tenant(world):
    opened = Document(id=SECRET_ID, tenant=TENANT, body=SECRET_TEXT, acl_groups=("*",))
    assert world.ingestor.ingest([opened], WRITER).refused == 0
    assert [r.text for r in world.searcher.records(NOBODY, doc_ids=[SECRET_ID])] == [SECRET_TEXT]
    assert world.ingestor.delete_document(WRITER, SECRET_ID) == 1
    assert secret_as_managers_read_it(world) == []
    # A role holds in its own tenant only: another tenant's writer deletes nothing here.
    other = Principal(tenant="wb", user_id="ingest-bot", roles=(WRITER_ROLE,))
    assert world.ingestor.delete_document(other, "nobody-notes") == 0
