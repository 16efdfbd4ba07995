"""Chunk sizes in tokens of the embedding model's tokenizer, and chunk offsets."""

from __future__ import annotations

import pytest

from hybrid_es.ingest.chunking import chunk_text, counter_for, estimate_tokens, token_counter


def test_token_counter_takes_a_count_or_the_tokens_and_memoises():
    calls: list[str] = []

    def tokens(text: str) -> list[str]:
        calls.append(text)
        return list(text.replace(" ", ""))

    count = token_counter(tokens)
    assert count("ab c") == 3 and count("ab c") == 3
    assert calls == ["ab c"]
    assert token_counter(len)("abcd") == 4


def test_counter_for_uses_the_embedders_tokenizer_when_it_has_one():
    class WithTokenizer:
        def count_tokens(self, text: str) -> int:
            return 2 * len(text.split())

    class Without:
        pass

    assert counter_for(WithTokenizer())("a b c") == 6
    assert counter_for(Without()) is estimate_tokens


def test_chunks_sized_by_a_tokenizer_respect_its_counts():
    def chars(text: str) -> int:  # a tokenizer that makes one token per character
        return len(text.replace(" ", ""))

    text = " ".join(f"Sentence number {i} is here." for i in range(20))
    chunks = chunk_text(text, size=40, overlap=0, count=token_counter(chars))
    assert len(chunks) > 5
    assert all(chars(c.text) <= 40 for c in chunks)


def test_chunks_know_where_they_start_in_the_text():
    text = "# Title\nFirst sentence here. Second one follows.\n\n# Next\nThird part."
    for c in chunk_text(text, size=16, overlap=0):
        assert c.start is not None and text[c.start :].startswith(c.text[:10])
    s = " ".join(f"Sentence {i} has five words." for i in range(12))
    chunks = chunk_text(s, size=16, overlap=6)
    starts = [c.start for c in chunks]
    assert starts == sorted(starts) and all(s[c.start :].startswith(c.text) for c in chunks)


@pytest.mark.models
def test_minilm_token_counts_keep_chunk_and_header_within_the_model_window(embedder):
    count = counter_for(embedder)
    assert count("KYO-H12") > estimate_tokens("KYO-H12")  # word pieces, not words
    text = " ".join(f"The KYO-H12 contract clause {i} fixes the April rate." for i in range(60))
    chunks = chunk_text(text, size=200, overlap=40, count=count)
    assert len(chunks) > 2 and max(count(c.text) for c in chunks) <= 200
