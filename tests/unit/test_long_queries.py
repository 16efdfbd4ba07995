"""Long queries (issue 15): the length limit is a setting, each leg reads a bounded start of the
query, and the response says when it did."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import pytest
from elasticsearch import Elasticsearch
from pydantic import ValidationError

from hybrid_es.errors import BadQueryError
from hybrid_es.models import Principal, RequestScope, SearchRequest
from hybrid_es.retrieval.dialects import ElasticsearchDialect, OpenSearchDialect
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.prepare import prepare
from hybrid_es.retrieval.queries import (
    MAX_QUERY_CHARS,
    MAX_QUERY_CHARS_LIMIT,
    MAX_QUERY_TERMS,
    MAX_QUERY_TERMS_LIMIT,
    RetrievalParams,
    clean_query,
    sparse_query,
    standard_retriever,
)
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.text.analysis import cap_terms

PRINCIPAL = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
SCOPE = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
POLICY = policy_filter(PRINCIPAL, SCOPE, datetime(2026, 4, 1, 9, 0, tzinfo=UTC))
ORDINARY = "KYO-H12 April roll-in shower rate"


def _words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


# --- the length limit -------------------------------------------------------------------------


def test_the_default_limit_passes_a_real_long_question():
    # A real collection holds a 2,023-character question; the old limit (2,000) refused it.
    text = ("roll-in shower " * 200)[:2023]
    assert MAX_QUERY_CHARS >= 8000
    assert clean_query(text) == " ".join(text.split())


def test_clean_query_takes_its_limit_and_none_lifts_it():
    assert clean_query("a" * 50, 50) == "a" * 50
    with pytest.raises(BadQueryError, match="limit is 50") as err:
        clean_query("a" * 51, 50)
    assert "HYBRID_ES_MAX_QUERY_CHARS" in str(err.value.hint)
    assert clean_query("a" * (MAX_QUERY_CHARS + 1), None) == "a" * (MAX_QUERY_CHARS + 1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_query_chars": 0},
        {"max_query_chars": MAX_QUERY_CHARS_LIMIT + 1},
        {"max_query_chars": True},
        {"max_query_terms": 0},
        {"max_query_terms": MAX_QUERY_TERMS_LIMIT + 1},
        {"max_query_terms": 6.5},
    ],
)
def test_retrieval_params_refuse_bad_limits(kwargs):
    with pytest.raises(BadQueryError, match=next(iter(kwargs))):
        RetrievalParams(**kwargs)


def test_settings_read_the_limits_from_the_environment(monkeypatch):
    assert Settings().max_query_chars == MAX_QUERY_CHARS
    assert Settings().max_query_terms == MAX_QUERY_TERMS
    monkeypatch.setenv("HYBRID_ES_MAX_QUERY_CHARS", "30000")
    monkeypatch.setenv("HYBRID_ES_MAX_QUERY_TERMS", "32")
    s = Settings()
    assert (s.max_query_chars, s.max_query_terms) == (30000, 32)
    # Settings and RetrievalParams accept the same range.
    RetrievalParams(max_query_chars=s.max_query_chars, max_query_terms=s.max_query_terms)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HYBRID_ES_MAX_QUERY_CHARS", "0"),
        ("HYBRID_ES_MAX_QUERY_CHARS", str(MAX_QUERY_CHARS_LIMIT + 1)),
        ("HYBRID_ES_MAX_QUERY_TERMS", str(MAX_QUERY_TERMS_LIMIT + 1)),
        ("HYBRID_ES_MAX_QUERY_TERMS", "many"),
    ],
)
def test_settings_refuse_bad_limits(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        Settings()


# --- the term cap -----------------------------------------------------------------------------


def test_cap_terms_cuts_after_the_nth_term():
    assert cap_terms("roll-in shower rate, April", 3) == ("roll-in shower", True)
    assert cap_terms("roll-in shower rate, April", 5) == ("roll-in shower rate, April", False)
    assert cap_terms(ORDINARY, MAX_QUERY_TERMS) == (ORDINARY, False)


def test_cap_terms_counts_each_cjk_character_emoji_and_255_character_run():
    assert cap_terms("无障碍淋浴 rate", 3) == ("无障碍", True)
    assert cap_terms("😀😀 rate", 2) == ("😀😀", True)
    assert cap_terms("a" * 600, 2) == ("a" * 510, True)


def _clauses(query: dict[str, Any]) -> int:
    """An upper bound on the clauses a sparse query expands to in Lucene: each analysed token
    of the multi_match text once per field, each term of a match, each terms query once."""
    n = 0
    for clause in query["bool"]["should"]:
        if "multi_match" in clause:
            mm = clause["multi_match"]
            tokens = len(re.findall(r"\w{1,255}", mm["query"])) + sum(
                1 for c in mm["query"] if "\u4e00" <= c <= "\u9fff"
            )
            n += tokens * len(mm["fields"])
        elif "match" in clause:
            ((_, spec),) = clause["match"].items()
            n += len(spec["query"].split())
        else:
            n += 1
    return n


@pytest.mark.parametrize(
    "text",
    [
        _words(400),  # 400 distinct words
        "".join(chr(0x4E00 + i) for i in range(9_999)),  # CJK: one token a character
        "AbAbAbAbAb" * 1000,  # one "word" that code_terms splits into thousands
        "x_" * 5000,
        ("KYO-H12 JPN-2026-0417 " + "rate " * 50) * 30,
    ],
)
def test_a_long_query_stays_under_opensearch_clause_limit(text):
    for terms in (MAX_QUERY_TERMS, MAX_QUERY_TERMS_LIMIT):
        query = sparse_query(clean_query(text), POLICY, max_terms=terms)
        assert _clauses(query) < 1024 - 50  # room for the policy filter's own clauses


def test_every_sparse_clause_comes_from_the_capped_text():
    text = "rate " * 70 + "KYO-H12 late_checkout_fee"
    should = sparse_query(text, POLICY)["bool"]["should"]
    kinds = [next(iter(c)) for c in should]
    # The identifier and the code terms come after the 64th term: cut, like the text itself.
    assert kinds == ["multi_match", "match"]
    assert should[0]["multi_match"]["query"] == ("rate " * 64).strip()
    assert should[1]["match"]["search_terms"]["query"] == ("rate " * 64).strip()
    with_ids = sparse_query(text, POLICY, max_terms=MAX_QUERY_TERMS_LIMIT)["bool"]["should"]
    assert {"terms"} <= {next(iter(c)) for c in with_ids}


def test_an_ordinary_query_is_built_exactly_as_before():
    capped = standard_retriever(ORDINARY, POLICY, max_terms=MAX_QUERY_TERMS)
    assert json.dumps(capped) == json.dumps(standard_retriever(ORDINARY, POLICY))
    assert capped["standard"]["query"]["bool"]["should"][0]["multi_match"]["query"] == ORDINARY


@pytest.mark.parametrize("dialect", [ElasticsearchDialect(), OpenSearchDialect()])
def test_both_dialects_cap_with_the_params(dialect):
    params = RetrievalParams(max_query_terms=5)
    bodies = [
        dialect.sparse_body(_words(40), POLICY, params),
        dialect.native(_words(40), [0.1] * 4, POLICY, params, "rrf", 0.5),
    ]
    text = json.dumps(bodies)
    assert '"query": "w0 w1 w2 w3 w4"' in text and "w5" not in text
    for body in bodies:
        assert dialect.assert_policy(body, POLICY) >= 1


# --- the searcher says what it cut --------------------------------------------------------------


class _Embedder:
    model_id, dims = "fake", 4

    def __init__(self, window: int | None) -> None:
        self.window = window

    def embed_queries(self, texts: list[str]) -> Any:
        return np.ones((len(texts), 4), dtype=np.float32)

    embed_passages = embed_queries

    def truncates(self, text: str) -> bool:
        return self.window is not None and len(text.split()) > self.window


def _searcher(window: int | None, **kwargs: Any) -> HybridSearcher:
    # No request reaches the cluster: only what the searcher decides before sending is tested.
    return HybridSearcher(
        Elasticsearch("http://127.0.0.1:1"), _Embedder(window), index="chunks", **kwargs
    )


def test_the_searcher_names_the_legs_that_read_only_the_start():
    s = _searcher(100)
    assert s.truncated(ORDINARY, "client-rrf") == ()
    assert s.truncated(_words(80), "client-rrf") == ("sparse",)
    assert s.truncated(_words(200), "client-rrf") == ("sparse", "dense")
    assert s.truncated(_words(200), "bm25-only") == ("sparse",)
    assert s.truncated(_words(200), "dense-only") == ("dense",)
    # An embedder that cannot tell (no ``truncates``) is not claimed to have cut anything.
    assert _searcher(None).truncated(_words(80), "dense-only") == ()
    roomy = _searcher(None, params=RetrievalParams(max_query_terms=100))
    assert roomy.truncated(_words(80), "client-rrf") == ()


def test_the_searcher_cleans_with_its_own_limit():
    s = _searcher(None, params=RetrievalParams(max_query_chars=20))
    with pytest.raises(BadQueryError, match="limit is 20"):
        prepare(s.context(), SearchRequest("x" * 21, PRINCIPAL))


# --- the embedders' token window ------------------------------------------------------------------

LONG = " ".join(["Cells of the immune system respond to infection within hours."] * 500)[:30_000]


@pytest.mark.models
@pytest.mark.parametrize("name", ["minilm", "e5"])
def test_a_30000_character_query_embeds_within_the_token_window(name):
    from hybrid_es.encoders.embedder import make_embedder

    emb = make_embedder(name)
    vec = emb.embed_queries([LONG])
    assert vec.shape == (1, emb.dims) and np.isfinite(vec).all()
    assert emb.truncates(LONG) and not emb.truncates("immune response")  # type: ignore[attr-defined]
    # What is past the window changes nothing: the start decides the vector.
    same = emb.embed_queries([LONG[:20_000]])
    assert float(np.dot(vec[0], same[0])) > 0.999
