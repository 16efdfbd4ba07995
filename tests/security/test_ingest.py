"""Ingest as an attacker of one tenant: nothing another tenant owns can be overwritten, claimed,
revoked, moved or even named (issue 11: A, B, C, 9, 13, 15)."""

from __future__ import annotations

import threading

import pytest
from pydantic import ValidationError

from hybrid_es.identity import chunk_id, chunk_key
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal
from tests.conftest import HashEmbedder, owner, unguarded
from tests.security.conftest import NOW, make_world

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["shared", "index-per-tenant"])
def test_a_concurrent_ingest_of_the_same_ids_never_lands_on_another_tenant(es, bootstrapped, mode):
    # A: two tenants ingesting the same new document ids at the same moment. Before, the tenant
    # check was a read before the write and chunk ids held no tenant: both reported success and
    # some chunks ended up the other tenant's (17 of A's and 13 of B's, reproduced).
    w = make_world(es, mode)
    n = 40
    reports: dict[str, object] = {}
    barrier = threading.Barrier(2)

    def run(tenant: str) -> None:
        ing = Ingestor(es, HashEmbedder(), layout=w.layout, corpus_state=w.state, batch_size=4)
        docs = [Document(id=f"X{i}", tenant=tenant, body=f"{tenant} owns X{i}.") for i in range(n)]
        barrier.wait()
        try:
            reports[tenant] = ing.ingest(docs, owner(tenant), now=NOW)
        except Exception as exc:  # pragma: no cover - reported by the assertion below
            reports[tenant] = exc

    try:
        threads = [threading.Thread(target=run, args=(t,)) for t in ("demo-A", "demo-B")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for tenant in ("demo-A", "demo-B"):
            rep = reports[tenant]
            assert not isinstance(rep, Exception), rep
            assert rep.ok and rep.chunks == n  # type: ignore[union-attr]
            index = w.layout.chunks_for(tenant)
            es.refresh(index)
            mine = unguarded(es).search(
                index,
                {
                    "size": 1000,
                    "query": {"term": {"tenant": tenant}},
                    "_source": ["raw_chunk_text"],
                },
            )["hits"]["hits"]
            assert len(mine) == n
            assert all(h["_source"]["raw_chunk_text"].startswith(f"{tenant} owns") for h in mine)
    finally:
        es.delete_index(w.indices)


@pytest.mark.parametrize("mode", ["shared", "index-per-tenant"])
def test_each_tenant_owns_its_own_document_of_an_id_and_no_message_names_the_other(
    es, bootstrapped, mode
):
    # B: before, tenant A could never ingest "Y" once B had ("already used by tenant(s) B").
    w = make_world(es, mode)
    try:
        w.ingestor.ingest([Document(id="Y", tenant="demo-B", body="B's Y.")], owner("demo-B"))
        rep = w.ingestor.ingest([Document(id="Y", tenant="demo-A", body="A's Y.")], owner("demo-A"))
        assert rep.ok and rep.chunks == 1 and rep.failed_documents == []
        assert rep.watermarks == {"demo-A": 1}
        for tenant, text in (("demo-A", "A's Y."), ("demo-B", "B's Y.")):
            key = chunk_key(tenant, chunk_id("Y", 1, 0))
            found = es.get(w.layout.chunks_for(tenant), key)
            assert found is not None
            doc = found["_source"]
            assert (doc["tenant"], doc["raw_chunk_text"]) == (tenant, text)
        # Deleting "Y" as demo-B deletes demo-B's document only.
        assert w.ingestor.delete_document(owner("demo-B"), "Y") == 1
        a = es.get(w.layout.chunks_for("demo-A"), chunk_key("demo-A", "Y::v1::c0000"))
        assert a is not None and a["_source"].get("deleted") is not True
    finally:
        es.delete_index(w.indices)


def test_the_library_ingest_refuses_documents_of_another_tenant_by_document(es, bootstrapped):
    # C: the library takes the caller's principal and confines the upload to its tenant.
    w = make_world(es, "shared")
    try:
        w.ingestor.ingest(
            [Document(id="R", tenant="demo-A", body="A's rate: 31,500.")], owner("demo-A")
        )
        before = w.state.read("demo-A")
        rep = w.ingestor.ingest(
            [
                Document(id="R", tenant="demo-A", body="Overwritten by B: rate 1."),
                Document(id="S", tenant="demo-B", body="B's own."),
            ],
            owner("demo-B"),
            raise_on_error=False,
        )
        (refused,) = rep.failed_documents
        assert refused["doc_id"] == "R" and "writes for tenant 'demo-B'" in refused["reason"]
        assert rep.chunks == 1 and rep.watermarks == {"demo-B": 1}
        assert w.state.read("demo-A") == before  # A's watermark did not move
        kept = es.get(w.layout.chunks, chunk_key("demo-A", "R::v1::c0000"))
        assert kept is not None and kept["_source"]["raw_chunk_text"] == "A's rate: 31,500."
    finally:
        es.delete_index(w.indices)


def test_a_document_without_an_acl_fails_closed_unless_the_deployment_chooses_otherwise(
    es, bootstrapped
):
    # 9: documents without ACL fields were visible to every user of the tenant, by default.
    from hybrid_es.models import RequestScope

    w = make_world(es, "index-per-tenant")
    try:
        doc = Document(id="N", tenant="demo-A", body="Unlabelled note about the April rate.")
        rep = w.ingestor.ingest([doc], owner("demo-A"), now=NOW)
        assert rep.default_acl == 1
        user = Principal(tenant="demo-A", user_id="u", groups=("anything",))
        assert w.searcher.search("April rate", user, RequestScope(), now=NOW).hits == ()
        open_ing = Ingestor(
            es, HashEmbedder(), layout=w.layout, corpus_state=w.state, default_acl=("*",)
        )
        assert open_ing.ingest([doc], owner("demo-A"), now=NOW).chunks == 1  # the ACL changed
        assert [h.doc_id for h in w.searcher.search("April rate", user, now=NOW).hits] == ["N"]
    finally:
        es.delete_index(w.indices)


def test_ids_are_validated_by_their_encoded_length_and_a_failed_batch_moves_nothing(
    es, bootstrapped
):
    # 15: a 256-character multibyte id passed validation, Elasticsearch refused its _id (over
    # 512 bytes), and the watermark moved all the same.
    with pytest.raises(ValidationError, match="bytes in UTF-8; the limit is 256"):
        Document(id="文" * 256, tenant="demo-A", body="x")
    longest = "文" * 85  # 255 bytes: with the tenant prefix and suffixes, well under 512
    w = make_world(es, "shared")
    try:
        rep = w.ingestor.ingest([Document(id=longest, tenant="demo-A", body="ok")], owner("demo-A"))
        assert rep.ok and rep.watermarks == {"demo-A": 1}
        es.put_settings(w.layout.chunks, {"index.blocks.write": True})
        try:
            refused = w.ingestor.ingest(
                [Document(id="Z", tenant="demo-A", body="never written")],
                owner("demo-A"),
                raise_on_error=False,
            )
        finally:
            es.put_settings(w.layout.chunks, {"index.blocks.write": False})
        assert refused.failed and refused.watermarks == {}
        assert w.state.read("demo-A").watermark == 1  # a batch that wrote nothing moved nothing
        assert w.state.read("demo-A").pending == ()
    finally:
        es.delete_index(w.indices)


def test_delete_document_pages_past_ten_thousand_chunks(es, bootstrapped):
    # 13: delete_document stopped at 10,000 chunks without paging.
    w = make_world(es, "shared")
    try:
        w.state.bump("demo-A", "ingest")
        es.create_index(w.layout.chunks)
        actions = (
            {
                "_index": w.layout.chunks,
                "_id": chunk_key("demo-A", chunk_id("BIG", 1, i)),
                "_source": {"tenant": "demo-A", "doc_id": "BIG", "chunk_id": chunk_id("BIG", 1, i)},
            }
            for i in range(10_050)
        )
        es.bulk(actions, chunk_size=2000, refresh=True)
        assert w.ingestor.delete_document(owner("demo-A"), "BIG") == 10_050
        es.refresh(w.layout.chunks)
        assert unguarded(es).count(w.layout.chunks, {"term": {"deleted": True}}) == 10_050
    finally:
        es.delete_index(w.indices)
