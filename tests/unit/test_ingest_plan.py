"""Chunk records (seed 002's storage schema) and the skip/write decision, both pure."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from hybrid_es.ingest.chunking import Chunk, chunk_text
from hybrid_es.ingest.contextual import Header, fallback_version
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import build_chunk_records, chunk_id, plan_document
from hybrid_es.text.analysis import ANALYSIS_VERSION
from tests.constants import NOW

MODEL = "model-a"
VERSION = "extractive-v2"
DOC = Document(
    id="K",
    tenant="t",
    title="Contract KYO-H12",
    body=(
        "Clause one sets the April rate for the accessible twin room per night. "
        "Clause two covers cancellation of booking JPN-2026-0417 until seven days before."
    ),
    version=2,
    contract_ids=("KYO-H12",),
    valid_from="2026-04-01",
)
CHUNKS = chunk_text(DOC.body, size=16, overlap=0)


def _stored(doc: Document = DOC, chunks: list[Chunk] = CHUNKS, **over: Any) -> list[dict[str, Any]]:
    return [
        {
            "chunk_id": chunk_id(doc.id, doc.version, c.number),
            "doc_id": doc.id,
            "tenant": doc.tenant,
            "version": doc.version,
            "doc_hash": doc.content_hash(),
            "chunk_hash": hashlib.sha256(c.text.encode()).hexdigest(),
            "header_prompt_version": VERSION,
            "embedding_model": MODEL,
            "analysis_version": ANALYSIS_VERSION,
            **over,
        }
        for c in chunks
    ]


def _plan(stored: list[dict[str, Any]], doc: Document = DOC, chunks: list[Chunk] = CHUNKS):  # type: ignore[no-untyped-def]
    return plan_document(doc, chunks, stored, prompt_version=VERSION, embedding_model=MODEL)


def test_records_follow_the_seed_schema():
    headers = [Header(f"Header {c.number}.", "p-v1") for c in CHUNKS]
    recs = build_chunk_records(DOC, now=NOW, embedding_model=MODEL, chunks=CHUNKS, headers=headers)
    assert len(recs) == len(CHUNKS) == 2
    r = recs[1]
    assert r["chunk_id"] == "K::v2::c0001" and r["doc_id"] == "K" and r["chunk_no"] == 1
    assert r["context_header"] == "Header 1."
    assert r["raw_chunk_text"] == CHUNKS[1].text
    assert r["search_payload"] == f"Header 1.\n{CHUNKS[1].text}"
    assert r["chunk_hash"] == hashlib.sha256(CHUNKS[1].text.encode()).hexdigest()
    assert r["doc_hash"] == DOC.content_hash()
    assert r["header_prompt_version"] == "p-v1"
    assert r["ids"] == ["JPN-2026-0417", "KYO-H12"]  # the chunk's own and the document's
    assert r["tenant"] == "t" and r["version"] == 2 and r["valid_from"] == "2026-04-01"


def test_without_a_header_the_payload_is_the_raw_chunk():
    recs = build_chunk_records(
        DOC, now=NOW, embedding_model=MODEL, chunks=CHUNKS, headers=[Header("", "none-v1")] * 2
    )
    assert [r["search_payload"] for r in recs] == [c.text for c in CHUNKS]


def test_header_count_must_match_the_chunks():
    with pytest.raises(ValueError, match="1 headers for 2 chunks"):
        build_chunk_records(
            DOC, now=NOW, embedding_model=MODEL, chunks=CHUNKS, headers=[Header("h", "v")]
        )


def test_everything_stored_and_unchanged_is_skipped():
    assert _plan(_stored()).action == "skip"


def test_a_rejected_llm_header_stored_as_fallback_still_counts_as_made_by_the_llm():
    stored = _stored(header_prompt_version=fallback_version(VERSION, "extractive-v2"))
    assert _plan(stored).action == "skip"


@pytest.mark.parametrize(
    ("what", "stored"),
    [
        ("a chunk missing (a killed ingest)", _stored()[:1]),
        ("another document hash", _stored(doc_hash="0" * 64)),
        ("another chunk text (chunker settings changed)", _stored(chunk_hash="0" * 64)),
        ("another header prompt version", _stored(header_prompt_version="extractive-v1")),
        ("another client-side analysis version", _stored(analysis_version="client-terms-v0")),
        ("another embedding model", _stored(embedding_model="model-b")),
        ("stored deleted, written again live", _stored(deleted=True)),
        ("nothing stored", []),
    ],
)
def test_anything_less_than_identical_is_written_again(what, stored):
    plan = _plan(stored)
    assert plan.action == "write", what


def test_a_correction_deletes_the_chunks_that_vanished():
    longer = [*CHUNKS, Chunk(2, "an old third chunk", ())]
    plan = _plan(_stored(chunks=longer))
    assert plan.action == "write" and plan.change == "correction"
    assert plan.deletes == ("K::v2::c0002",)


def test_a_new_version_supersedes_the_old_chunks_and_closes_their_validity():
    v1 = Document.model_validate({**DOC.model_dump(), "version": 1})
    plan = _plan(_stored(doc=v1))
    assert plan.change == "supersede" and plan.deletes == ()
    assert plan.supersede == tuple(
        (chunk_id("K", 1, c.number), {"superseded_by": "K::v2::c0000", "valid_to": "2026-04-01"})
        for c in CHUNKS
    )


def test_a_stored_version_left_unsuperseded_is_not_skipped():
    v1 = _stored(doc=Document.model_validate({**DOC.model_dump(), "version": 1}))
    assert _plan(_stored() + v1).action == "write"
    done = [{**c, "superseded_by": "K::v2::c0000"} for c in v1]
    assert _plan(_stored() + done).action == "skip"


def test_an_older_version_arriving_late_is_stored_as_superseded():
    v3 = Document.model_validate({**DOC.model_dump(), "version": 3})
    plan = _plan(_stored(doc=v3))
    assert plan.change == "backfill" and plan.superseded_by == "K::v3::c0000"
    recs = build_chunk_records(
        DOC, now=NOW, embedding_model=MODEL, chunks=CHUNKS, superseded_by=plan.superseded_by
    )
    assert {r["superseded_by"] for r in recs} == {"K::v3::c0000"}


def test_another_tenants_chunks_never_take_part_in_a_plan():
    # Chunks are keyed by tenant: another tenant's document of the same id is another document.
    # The planner is only ever handed the caller's own chunks; anything else is a bug, loudly.
    with pytest.raises(ValueError, match="another tenant"):
        _plan(_stored(tenant="other"))


def test_a_deletion_is_a_watermark_change_of_its_own():
    gone = Document.model_validate({**DOC.model_dump(), "deleted": True})
    assert _plan(_stored(), doc=gone).change == "delete"


def test_cluster_calls_are_retried_whole_on_connection_failures_only(monkeypatch):
    import elastic_transport

    from hybrid_es.cluster import retries

    calls: list[str] = []

    @retries.on_connection_failure
    def flaky(kind: str) -> str:
        calls.append(kind)
        if len(calls) < 3:
            raise (
                elastic_transport.ConnectionError("refused") if kind == "conn" else ValueError(kind)
            )
        return "done"

    monkeypatch.setattr(flaky.retry, "sleep", lambda s: None)  # type: ignore[attr-defined]
    assert flaky("conn") == "done" and len(calls) == 3
    calls.clear()
    with pytest.raises(ValueError):
        flaky("answer")
    assert calls == ["answer"]
