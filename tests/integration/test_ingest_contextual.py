"""Contextual ingestion against the real cluster, with the LLM contextualizer talking to a local
stand-in of the Messages API (no model service is reachable here): headers, prompt versions,
cost, the guardrail, skipping by hash (counted: no embedding, no model call) and recovery."""

from __future__ import annotations

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.evaluation.metering import MeteredEmbedder
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.anthropic_context import (
    DOCUMENT_PROMPT,
    PRICES,
    AnthropicContextualizer,
    cost_usd,
    document_text,
)
from hybrid_es.ingest.chunking import chunk_text, counter_for
from hybrid_es.ingest.contextual import (
    ExtractiveContextualizer,
    NoContextualizer,
    extractive_header,
)
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor, chunk_id
from tests.conftest import owner, unguarded
from tests.constants import NOW
from tests.fixtures.messages_stand_in import MessagesStandIn

pytestmark = pytest.mark.integration
MODEL = "claude-haiku-4-5"


def _docs() -> list[Document]:
    return [
        Document(
            id=f"C{n}",
            tenant="t",
            title=f"Supplier contract KYO-H1{n}",
            body=" ".join(
                f"Clause {i} of contract KYO-H1{n} fixes the April rate for room type {i}."
                for i in range(4 + 3 * n)
            ),
        )
        for n in range(3)
    ]


def _ingestor(es, emb, names, contextualizer):  # type: ignore[no-untyped-def]
    return Ingestor(
        es,
        emb,
        index=names["chunks"],
        corpus_state=CorpusState(es, names["corpus_state"]),
        contextualizer=contextualizer,
        chunk_size=32,
        overlap=0,
        batch_size=2,
    )


def _llm(srv: MessagesStandIn) -> AnthropicContextualizer:
    return AnthropicContextualizer(api_key="test-key", base_url=srv.base_url, max_retries=1)


def test_llm_headers_are_cached_per_document_costed_and_never_regenerated_when_unchanged(
    es, embedder, fresh_indices
):
    emb = MeteredEmbedder(embedder)
    docs = _docs()
    count = counter_for(emb)  # what the ingest uses: the wrapper has no tokenizer, so estimates
    chunks = {d.id: chunk_text(d.body, size=32, overlap=0, count=count) for d in docs}
    with MessagesStandIn() as srv:
        ing = _ingestor(es, emb, fresh_indices, _llm(srv))
        first = ing.ingest(docs, owner("t"), now=NOW)
        total = sum(len(c) for c in chunks.values())
        assert first.chunks == total == srv.calls == first.context.calls
        assert first.context.llm_headers == total and first.context.guardrail_rejections == 0

        # Prompt caching: each document's first request writes its block, the others read it.
        block = {d.id: len(DOCUMENT_PROMPT.format(document=document_text(d)).split()) for d in docs}
        u = first.context
        assert u.cache_creation_input_tokens == sum(block.values())
        assert u.cache_read_input_tokens == sum(block[d] * (len(chunks[d]) - 1) for d in block)
        spent = {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": u.cache_creation_input_tokens,
            "cache_read_input_tokens": u.cache_read_input_tokens,
        }
        assert u.cost_usd == pytest.approx(cost_usd(spent, PRICES[MODEL]))

        stored = es.get(fresh_indices["chunks"], chunk_key("t", chunk_id("C1", 1, 1)))["_source"]
        assert stored["header_prompt_version"] == f"anthropic-ctx-v1@{MODEL}"
        assert stored["context_header"].startswith("Situated in the document that begins")
        assert stored["search_payload"] == f"{stored['context_header']}\n{stored['raw_chunk_text']}"

        calls, embedded = srv.calls, emb.passages
        again = ing.ingest(docs, owner("t"), now=NOW)
        assert (again.chunks, again.skipped_unchanged, again.context.calls) == (0, 3, 0)
        assert (srv.calls, emb.passages) == (calls, embedded)  # no model call, no embedding

        # One changed document regenerates all of its chunks and headers, and only those.
        changed = Document.model_validate({**docs[2].model_dump(), "body": "Clause 0 only."})
        third = ing.ingest([docs[0], docs[1], changed], owner("t"), now=NOW)
        assert (third.chunks, third.skipped_unchanged) == (1, 2)
        assert third.removed_chunks == len(chunks["C2"]) - 1
        assert srv.calls == calls + 1
    assert unguarded(es).count(fresh_indices["chunks"], {"term": {"doc_id": "C2"}}) == 1


def test_rejected_headers_fall_back_to_extractive_ones_are_counted_and_not_retried(
    es, embedder, fresh_indices
):
    docs = _docs()[:1]
    with MessagesStandIn(answer=lambda d, c: "This chunk is from Globex Corp's 2031 plan.") as srv:
        ing = _ingestor(es, embedder, fresh_indices, _llm(srv))
        rep = ing.ingest(docs, owner("t"), now=NOW)
        assert rep.context.guardrail_rejections == rep.chunks == srv.calls > 0
        assert "introduces globex, corp, 2031" in rep.context.rejected_examples[0]
        src = es.get(fresh_indices["chunks"], chunk_key("t", chunk_id("C0", 1, 0)))["_source"]
        (first,) = chunk_text(docs[0].body, size=32, overlap=0, count=counter_for(embedder))[:1]
        assert src["context_header"] == extractive_header(docs[0], first)
        assert src["header_prompt_version"] == f"anthropic-ctx-v1@{MODEL}+fallback:extractive-v2"
        calls = srv.calls
        assert ing.ingest(docs, owner("t"), now=NOW).skipped_unchanged == 1 and srv.calls == calls


def test_a_model_service_failure_fails_only_that_document_and_a_rerun_writes_it(
    es, embedder, fresh_indices
):
    docs = _docs()
    with MessagesStandIn(fail_first=2, fail_status=500) as srv:  # 1 try + 1 SDK retry: C0 fails
        ing = _ingestor(es, embedder, fresh_indices, _llm(srv))
        rep = ing.ingest(docs, owner("t"), now=NOW, raise_on_error=False)
        assert [f["doc_id"] for f in rep.failed_documents] == ["C0"]
        assert "InternalServerError" in rep.failed_documents[0]["reason"]
        assert rep.chunks > 0 and not rep.ok
        again = ing.ingest(docs, owner("t"), now=NOW, raise_on_error=False)
        assert again.ok and again.skipped_unchanged == 2 and again.documents == 3


def test_a_partly_written_document_is_written_again_in_full(es, embedder, fresh_indices):
    # What a killed ingest leaves behind: some chunks of a document, not all of them.
    emb = MeteredEmbedder(embedder)
    ing = _ingestor(es, emb, fresh_indices, ExtractiveContextualizer())
    docs = _docs()
    first = ing.ingest(docs, owner("t"), now=NOW)
    es.delete(fresh_indices["chunks"], chunk_key("t", chunk_id("C2", 1, 1)), refresh="true")
    before = emb.passages
    again = ing.ingest(docs, owner("t"), now=NOW)
    n_c2 = unguarded(es).count(fresh_indices["chunks"], {"term": {"doc_id": "C2"}})
    assert (again.skipped_unchanged, again.chunks, emb.passages - before) == (2, n_c2, n_c2)
    assert unguarded(es).count(fresh_indices["chunks"]) == first.chunks


def test_a_new_contextualizer_version_reprocesses_unchanged_documents(es, embedder, fresh_indices):
    docs = _docs()[:2]
    plain = _ingestor(es, embedder, fresh_indices, NoContextualizer()).ingest(
        docs, owner("t"), now=NOW
    )
    rich = _ingestor(es, embedder, fresh_indices, ExtractiveContextualizer()).ingest(
        docs, owner("t"), now=NOW
    )
    assert rich.chunks == plain.chunks and rich.skipped_unchanged == 0


def test_two_versions_in_one_run_end_with_the_older_superseded(es, embedder, fresh_indices):
    ing = _ingestor(es, embedder, fresh_indices, ExtractiveContextualizer())
    v1 = Document(id="K", tenant="t", body="Rate JPY 28,000.", valid_from="2025-04-01")
    v2 = Document.model_validate(
        {**v1.model_dump(), "version": 2, "body": "Rate JPY 31,500.", "valid_from": "2026-04-01"}
    )
    rep = ing.ingest([v1, v2], owner("t"), now=NOW)
    assert rep.superseded == 1
    old = es.get(fresh_indices["chunks"], chunk_key("t", chunk_id("K", 1, 0)))["_source"]
    assert old["superseded_by"] == chunk_id("K", 2, 0) and old["valid_to"] == "2026-04-01"


def test_two_tenants_each_own_their_document_of_the_same_id(es, embedder, fresh_indices):
    # Issue 11 B: document ids are a namespace per tenant; no message names another tenant.
    ing = _ingestor(es, embedder, fresh_indices, ExtractiveContextualizer())
    ing.ingest(
        [Document(id="X", tenant="demo-B", body="Tenant B's text.")], owner("demo-B"), now=NOW
    )
    rep = ing.ingest(
        [Document(id="X", tenant="demo-A", body="Tenant A's text.")], owner("demo-A"), now=NOW
    )
    assert rep.ok and rep.chunks == 1 and rep.failed_documents == []
    for tenant, text in (("demo-A", "Tenant A's text."), ("demo-B", "Tenant B's text.")):
        src = es.get(fresh_indices["chunks"], chunk_key(tenant, chunk_id("X", 1, 0)))
        assert (src["_source"]["tenant"], src["_source"]["raw_chunk_text"]) == (tenant, text)
