"""Ingestion against the real cluster: exact counts, hashing, versions, watermark, bad input."""

from __future__ import annotations

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.errors import IngestError
from hybrid_es.evaluation.metering import MeteredEmbedder
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor, chunk_id
from hybrid_es.ingest.loaders import LoadOptions, LoadReport, load_jsonl
from tests.conftest import FIXTURES, ingest_as_owners, owner, travel_documents, unguarded
from tests.constants import NOW

pytestmark = pytest.mark.integration


def _count(es, index, **term):  # type: ignore[no-untyped-def]
    q = {"term": term} if term else {"match_all": {}}
    return unguarded(es).count(index, q)


def test_travel_fixture_counts_and_reingest_skips_everything(es, embedder, fresh_indices):
    emb = MeteredEmbedder(embedder)
    state = CorpusState(es, fresh_indices["corpus_state"])
    ing = Ingestor(es, emb, index=fresh_indices["chunks"], corpus_state=state)
    docs = travel_documents()
    first = ingest_as_owners(ing, docs, now=NOW)
    assert (first.documents, first.chunks, first.skipped_unchanged) == (9, 9, 0)
    assert _count(es, fresh_indices["chunks"]) == 9
    assert first.watermarks == {"demo-A": 1, "demo-B": 1}
    embedded = emb.passages
    again = ingest_as_owners(ing, docs, now=NOW)
    assert (again.documents, again.chunks, again.skipped_unchanged) == (9, 0, 9)
    assert emb.passages == embedded  # nothing re-embedded
    assert again.watermarks == {} and state.watermark("demo-A") == 1


def test_a_corrected_document_regenerates_its_chunks_and_drops_vanished_ones(
    es, embedder, fresh_indices
):
    state = CorpusState(es, fresh_indices["corpus_state"])
    ing = Ingestor(
        es, embedder, index=fresh_indices["chunks"], corpus_state=state, chunk_size=20, overlap=0
    )
    long_body = " ".join(f"Clause {i} says the April rate is fixed." for i in range(12))
    doc = Document(id="C1", tenant="t", title="Contract", body=long_body)
    r1 = ing.ingest([doc], owner("t"), now=NOW)
    assert r1.chunks > 2
    short = Document.model_validate(
        {**doc.model_dump(), "body": "Clause 1 says the April rate is JPY 31,500."}
    )
    r2 = ing.ingest([short], owner("t"), now=NOW)
    assert r2.chunks == 1 and r2.removed_chunks == r1.chunks - 1
    assert _count(es, fresh_indices["chunks"], doc_id="C1") == 1
    assert state.watermark("t") == 2


def test_a_new_version_supersedes_the_old_one_and_moves_the_watermark(es, embedder, fresh_indices):
    state = CorpusState(es, fresh_indices["corpus_state"])
    ing = Ingestor(es, embedder, index=fresh_indices["chunks"], corpus_state=state)
    v1 = Document(
        id="K",
        tenant="t",
        title="Contract K",
        body="Rate JPY 28,000.",
        version=1,
        valid_from="2025-04-01",
    )
    ing.ingest([v1], owner("t"), now=NOW)
    v2 = Document.model_validate(
        {**v1.model_dump(), "version": 2, "body": "Rate JPY 31,500.", "valid_from": "2026-04-01"}
    )
    rep = ing.ingest([v2], owner("t"), now=NOW)
    assert rep.superseded == 1 and rep.watermarks == {"t": 2}
    old = es.get(fresh_indices["chunks"], chunk_key("t", chunk_id("K", 1, 0)))["_source"]
    assert old["superseded_by"] == chunk_id("K", 2, 0)
    assert old["valid_to"] == "2026-04-01"  # validity closed, history kept
    assert es.exists(fresh_indices["chunks"], chunk_key("t", chunk_id("K", 2, 0)))
    assert ing.delete_document(owner("u"), "K") == 0  # another tenant's K is another document
    assert ing.delete_document(owner("t"), "K") == 2
    assert state.watermark("t") == 3
    assert _count(es, fresh_indices["chunks"], deleted=True) == 2


def test_bad_jsonl_lines_are_reported_with_line_numbers_and_the_rest_continues(tmp_path):
    good = (FIXTURES / "travel.jsonl").read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        "\n".join(
            [
                good[0],
                "{not json",
                '{"id": "x", "body": "no tenant: it gets the caller\'s"}',
                good[1],
                '{"id": "e", "tenant": "t", "body": "another tenant\'s"}',
                '{"id": "f", "body": "   "}',
            ]
        ).encode()
        + b"\n\xff\xfe broken bytes\n"
    )
    report = LoadReport()
    docs = list(load_jsonl(bad, report=report, options=LoadOptions(tenant="demo-A")))
    assert [d.id for d in docs] == ["D0-stale-contract", "x", "D1-current-contract"]
    assert {d.tenant for d in docs} == {"demo-A"}
    lines = [e.line for e in report.errors]
    assert lines == [2, 5, 6, 7]
    msgs = " | ".join(str(e) for e in report.errors)
    assert "malformed JSON" in msgs and "names tenant 't'" in msgs
    assert "empty" in msgs and "UTF-8" in msgs
    with pytest.raises(IngestError, match="line 2"):
        list(
            load_jsonl(
                bad, report=LoadReport(), options=LoadOptions(tenant="demo-A"), fail_fast=True
            )
        )
