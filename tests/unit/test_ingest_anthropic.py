"""The LLM contextualizer through the real anthropic SDK, against a local stand-in of the
Messages API (no model service is reachable from here): request shape, prompt caching, cost from
the returned usage, the guardrail fallback, and how failures are classified."""

from __future__ import annotations

import pytest

from hybrid_es.errors import ConfigurationError, ModelError
from hybrid_es.ingest.anthropic_context import (
    CHUNK_PROMPT,
    MAX_HEADER_TOKENS,
    PRICES,
    RETRY_MAX_TOKENS,
    AnthropicContextualizer,
    build_request,
    cost_usd,
)
from hybrid_es.ingest.chunking import chunk_text
from hybrid_es.ingest.contextual import ContextUsage, extractive_header
from hybrid_es.ingest.documents import Document
from tests.fixtures.messages_stand_in import MessagesStandIn

DOC = Document(
    id="K",
    tenant="t",
    title="Supplier contract KYO-H12",
    body=" ".join(f"Clause {i} of contract KYO-H12 fixes the April rate." for i in range(12)),
)
CHUNKS = chunk_text(DOC.body, size=24, overlap=0)


def _ctx(srv: MessagesStandIn, **kw: object) -> AnthropicContextualizer:
    return AnthropicContextualizer(api_key="test-key", base_url=srv.base_url, max_retries=1, **kw)  # type: ignore[arg-type]


def _words(n: int) -> str:
    """An answer of ``n`` tokens (the stand-in counts words) that the guardrail accepts."""
    opening = ["This", "chunk", "fixes", "the", "April", "rate", "of", "contract", "KYO-H12"]
    return " ".join((opening + ["rate"] * n)[:n])


def _billed(usage: ContextUsage) -> float:
    p = PRICES["claude-haiku-4-5"]
    return (
        usage.input_tokens * p.input
        + usage.cache_creation_input_tokens * p.cache_write
        + usage.cache_read_input_tokens * p.cache_read
        + usage.output_tokens * p.output
    ) / 1e6


def test_the_request_caches_the_whole_document_and_asks_only_for_a_succinct_context():
    req = build_request(DOC, CHUNKS[1], model="claude-haiku-4-5")
    (message,) = req["messages"]
    doc_block, chunk_block = message["content"]
    assert doc_block == {
        "type": "text",
        "text": f"<document>\n{DOC.title}\n\n{DOC.body}\n</document>",
        "cache_control": {"type": "ephemeral"},
    }
    assert chunk_block == {"type": "text", "text": CHUNK_PROMPT.format(chunk=CHUNKS[1].text)}
    assert "Answer only with the succinct context and nothing else." in chunk_block["text"]
    assert req["model"] == "claude-haiku-4-5" and req["max_tokens"] == 200
    # Byte-identical first block for every chunk of a document: that is what makes it a cache hit.
    assert build_request(DOC, CHUNKS[0], model="m")["messages"][0]["content"][0] == doc_block


def test_seed_002_ingestion_cost_arithmetic():
    # 8,000-token document, ten chunks, 100-token answers, Claude 3 Haiku prices.
    haiku = PRICES["claude-3-haiku-20240307"]
    total = (
        cost_usd({"cache_creation_input_tokens": 8000}, haiku)
        + 9 * cost_usd({"cache_read_input_tokens": 8000}, haiku)
        + 10 * cost_usd({"output_tokens": 100}, haiku)
    )
    assert total == pytest.approx(8000 * 0.30e-6 + 9 * 8000 * 0.03e-6 + 10 * 100 * 1.25e-6)
    assert round(total, 5) == 0.00581  # seed 002: about $0.0058 per document


def test_headers_from_the_stand_in_are_cached_per_document_and_costed_from_usage():
    usage = ContextUsage()
    with MessagesStandIn() as srv:
        headers = _ctx(srv).headers(DOC, CHUNKS, usage)
        assert srv.calls == len(CHUNKS) > 1
    assert [h.prompt_version for h in headers] == ["anthropic-ctx-v1@claude-haiku-4-5"] * len(
        CHUNKS
    )
    assert headers[0].text.startswith("Situated in the document that begins: Supplier contract")
    block = len(f"<document>\n{DOC.title}\n\n{DOC.body}\n</document>".split())
    assert usage.cache_creation_input_tokens == block
    assert usage.cache_read_input_tokens == block * (len(CHUNKS) - 1)
    assert usage.cost_usd == pytest.approx(_billed(usage))
    assert usage.summary()["llm_headers"] == len(CHUNKS)


def test_a_document_too_short_to_cache_pays_full_input_each_time():
    usage = ContextUsage()
    with MessagesStandIn(min_cacheable=10_000) as srv:
        _ctx(srv).headers(DOC, CHUNKS, usage)
    assert usage.cache_creation_input_tokens == usage.cache_read_input_tokens == 0
    assert usage.input_tokens > len(DOC.body.split()) * len(CHUNKS)


def test_a_header_naming_what_the_document_does_not_is_replaced_and_counted():
    usage = ContextUsage()
    with MessagesStandIn(answer=lambda d, c: "From Globex Corp's contract KYO-H99.") as srv:
        headers = _ctx(srv).headers(DOC, CHUNKS, usage)
    assert usage.guardrail_rejections == len(CHUNKS) and usage.llm_headers == 0
    assert headers[0].text == extractive_header(DOC, CHUNKS[0])
    assert headers[0].rejected == "introduces globex, corp, kyo-h99 (absent from the document)"
    assert headers[0].prompt_version == "anthropic-ctx-v1@claude-haiku-4-5+fallback:extractive-v2"
    assert usage.calls == len(CHUNKS)  # the calls were made and paid for


def test_overload_is_retried_by_the_sdk():
    with MessagesStandIn(fail_first=1, fail_status=529) as srv:
        _ctx(srv).headers(DOC, CHUNKS[:1], ContextUsage())
        assert srv.failures_sent == 1 and srv.calls == 1


def test_persistent_server_errors_fail_the_document():
    with (
        MessagesStandIn(fail_first=5, fail_status=500) as srv,
        pytest.raises(ModelError, match="K chunk 0: InternalServerError"),
    ):
        _ctx(srv).headers(DOC, CHUNKS, ContextUsage())


def test_bad_credentials_or_an_unknown_model_stop_everything(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with MessagesStandIn() as srv, pytest.raises(ConfigurationError, match="'claude-nonexistent'"):
        _ctx(srv, model="claude-nonexistent").headers(DOC, CHUNKS, ContextUsage())
    # The SDK sends no key at all when none is configured anywhere.
    with MessagesStandIn() as srv:
        bare = AnthropicContextualizer(base_url=srv.base_url, max_retries=0)
        bare._kwargs["api_key"] = None
        with pytest.raises(ConfigurationError):
            bare.headers(DOC, CHUNKS, ContextUsage())


def test_a_model_without_a_known_price_reports_cost_as_unknown():
    usage = ContextUsage()
    with MessagesStandIn() as srv:
        _ctx(srv, prices={}).headers(DOC, CHUNKS[:1], usage)
    assert usage.calls == 1 and usage.cost_usd is None and usage.summary()["cost_usd"] is None


def test_an_answer_cut_at_max_tokens_is_retried_once_with_twice_the_budget_and_paid_for():
    usage = ContextUsage()
    with MessagesStandIn(answer=lambda d, c: _words(60)) as srv:
        headers = _ctx(srv, max_tokens=40).headers(DOC, CHUNKS[:2], usage)
        assert [r["max_tokens"] for r in srv.requests] == [40, 80, 40, 80]
    assert [h.text for h in headers] == [_words(60)] * 2
    assert [h.rejected for h in headers] == [None, None]
    assert usage.calls == 4 and usage.llm_headers == 2 and usage.guardrail_rejections == 0
    assert usage.output_tokens == 2 * (40 + 60)  # the cut answers are billed too
    block = len(f"<document>\n{DOC.title}\n\n{DOC.body}\n</document>".split())
    assert usage.cache_read_input_tokens == 3 * block  # the retry reads the cached document
    assert usage.cost_usd == pytest.approx(_billed(usage))


def test_an_answer_cut_twice_is_refused_and_replaced_by_the_extractive_header():
    usage = ContextUsage()
    with MessagesStandIn(answer=lambda d, c: _words(200)) as srv:
        (header,) = _ctx(srv, max_tokens=40).headers(DOC, CHUNKS[:1], usage)
        assert [r["max_tokens"] for r in srv.requests] == [40, 80]
    assert header.text == extractive_header(DOC, CHUNKS[0])
    assert header.rejected == "cut off at max_tokens (40, then 80 tokens)"
    assert header.prompt_version == "anthropic-ctx-v1@claude-haiku-4-5+fallback:extractive-v2"
    assert (usage.calls, usage.llm_headers, usage.guardrail_rejections) == (2, 0, 1)
    assert usage.output_tokens == 40 + 80
    assert usage.rejected_examples == [f"K chunk 0: {header.rejected}"]
    assert usage.cost_usd == pytest.approx(_billed(usage))


def test_a_retry_asks_for_at_most_twice_the_header_limit():
    assert RETRY_MAX_TOKENS == 2 * MAX_HEADER_TOKENS == 200
    with MessagesStandIn(answer=lambda d, c: _words(99)) as srv:
        (header,) = _ctx(srv, max_tokens=99).headers(DOC, CHUNKS[:1], ContextUsage())
        assert srv.calls == 1 and header.rejected is None  # 99 words fit in 99: not cut
    with MessagesStandIn(answer=lambda d, c: _words(150)) as srv:
        (header,) = _ctx(srv, max_tokens=99).headers(DOC, CHUNKS[:1], ContextUsage())
        assert [r["max_tokens"] for r in srv.requests] == [99, 198]
    assert header.rejected == f"header of 150 tokens (limit {MAX_HEADER_TOKENS})"


def test_an_answer_cut_beyond_the_header_limit_is_refused_without_a_retry():
    # Cut at the default 200 tokens, the whole answer is over 100: a retry could only be refused.
    usage = ContextUsage()
    with MessagesStandIn(answer=lambda d, c: _words(250)) as srv:
        (header,) = _ctx(srv).headers(DOC, CHUNKS[:1], usage)
        assert [r["max_tokens"] for r in srv.requests] == [200]
    assert header.rejected == (
        "cut off at max_tokens after 200 tokens, over the 100-token limit (not retried)"
    )
    assert header.text == extractive_header(DOC, CHUNKS[0])
    assert (usage.calls, usage.guardrail_rejections, usage.output_tokens) == (1, 1, 200)


@pytest.mark.parametrize(
    ("tokens", "rejected"),
    [
        (12, None),  # shorter than the 50 the prompt asks for: accepted
        (MAX_HEADER_TOKENS, None),
        (MAX_HEADER_TOKENS + 1, "header of 101 tokens (limit 100)"),
        (150, "header of 150 tokens (limit 100)"),
    ],
)
def test_headers_over_the_token_limit_are_refused_and_shorter_ones_accepted(tokens, rejected):
    usage = ContextUsage()
    with MessagesStandIn(answer=lambda d, c: _words(tokens)) as srv:
        (header,) = _ctx(srv).headers(DOC, CHUNKS[:1], usage)
        assert srv.calls == 1
    assert header.rejected == rejected
    if rejected is None:
        assert header.text == _words(tokens) and usage.llm_headers == 1
    else:
        assert header.text == extractive_header(DOC, CHUNKS[0])
        assert usage.guardrail_rejections == 1 and usage.llm_headers == 0
    assert usage.output_tokens == tokens
