"""Request builders for the retrievers, and the check that every leaf carries the policy filter.

Pure: they take values and return ``dict`` bodies. Nothing here sends a request. The same leaf
retrievers are used by the native ``rrf`` body and by the client-side ``_msearch`` legs, so the
two fusion paths score exactly the same candidates.

The sparse leg's scoring clauses (``multi_match``, ``match``, ``terms``) are built with
``elasticsearch.dsl``, elasticsearch-py's query builder; the same clauses serve OpenSearch. The
rest stays plain dicts, where the DSL would change the body sent or cost more than it says:

- the ``bool`` that holds the policy: ``Bool`` writes its keys in its own order (``filter``
  first) and re-parses a dict clause into query objects, which re-orders the policy's own
  ``bool`` clauses too. The policy goes into every leaf as the very dict ``policy.py`` built.
- the ``knn`` retriever: the DSL's ``Knn`` is the kNN *query*; it writes ``num_candidates``
  before ``k`` and always makes ``filter`` a list. ``Search.knn`` is the top-level kNN section,
  not a retriever.
- the ``rrf`` retriever: the DSL has no retriever classes.
- the search around a retriever: ``Search().extra(retriever=...)`` gives the same body, but
  ``to_dict`` copies all of it node by node (see ``search_body``).

The golden bodies under tests/golden/ pin all of this byte for byte.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elasticsearch.dsl.query import Match, MultiMatch, Query, Terms

from hybrid_es.errors import BadQueryError, PolicyViolationError
from hybrid_es.retrieval.fusion import DEFAULT_RANK_CONSTANT
from hybrid_es.text.analysis import cap_terms, client_terms, code_terms, has_cjk
from hybrid_es.text.folding import fold_for_matching
from hybrid_es.text.identifiers import extract_identifiers

MAX_QUERY_CHARS = 10_000
"""The default longest query (``RetrievalParams.max_query_chars``, ``HYBRID_ES_MAX_QUERY_CHARS``),
in characters after cleaning; longer ones are refused. What a query costs no longer grows with
its length past the caps (``MAX_QUERY_TERMS``, the embedder's token window): measured with
``scripts/bench_long_query.py``, a 10,000-character query costs about what a 2,000-character one
does. The limit is there to refuse what is not a question (a pasted document, a runaway
client); real questions reach 2,023 characters, and five times that leaves room."""
MAX_QUERY_CHARS_LIMIT = 1_000_000
"""The largest ``max_query_chars`` accepted: cleaning a query walks every character."""
MAX_QUERY_TERMS = 64
"""The default cap on the terms the sparse leg reads (``RetrievalParams.max_query_terms``,
``HYBRID_ES_MAX_QUERY_TERMS``): a longer query is matched on its first 64 terms (the
``multi_match`` text, the client-side terms and the identifiers all come from that start). 64
covers every query of the shared collections whole (the longest has 49), and bounds BM25's
cost, which grows with the number of terms."""
MAX_QUERY_TERMS_LIMIT = 150
"""The largest ``max_query_terms`` accepted. A term expands to at most five clauses (three text
fields, the client-side and code terms), so 150 terms, the identifier clauses and the policy
filter stay under OpenSearch 2.19's 1,024 clauses (``indices.query.bool.max_clause_count``)."""
MAX_NUM_CANDIDATES = 10_000
"""Elasticsearch's own cap on knn num_candidates."""
MAX_WINDOW = 1_000

TEXT_FIELDS = ("search_folded", "search_folded.cjk", "title_folded^0.5")
"""The folded copies of the search payload and the title (``folding.fold_for_matching``): the
stored ``search_payload`` and ``title`` keep the text as written, and BM25 reads these."""
CLIENT_TERMS_FIELD = "search_terms"
CODE_TERMS_FIELD = "code_terms"
ID_FIELDS = ("ids", "contract_ids", "room_codes", "booking_ids", "property_ids")
ID_BOOST = 5.0
SOURCE_EXCLUDES = ("embedding",)


@dataclass(frozen=True)
class RetrievalParams:
    """Knobs of the first stage. Validated on construction (bad values fail here, not in ES)."""

    window: int = 50
    """rank_window_size: how many results each leg contributes to fusion."""
    num_candidates: int = 100
    rank_constant: int = DEFAULT_RANK_CONSTANT
    """RRF's k: an integer >= 1, as the engines' native rrf accepts, on both fusion paths."""
    vector_field: str = "embedding"
    client_terms: bool = True
    """Add the BM25 clause over the client-side analysed terms (``analysis.client_terms``)."""
    max_query_chars: int = MAX_QUERY_CHARS
    """Longest query accepted, in characters after cleaning (:func:`clean_query`)."""
    max_query_terms: int = MAX_QUERY_TERMS
    """Terms of the query the sparse leg reads (:func:`sparse_query`); the rest is cut."""

    def __post_init__(self) -> None:
        if not 1 <= self.window <= MAX_WINDOW:
            raise BadQueryError(
                f"window (rank_window_size) must be 1..{MAX_WINDOW}, got {self.window}"
            )
        if not 1 <= self.num_candidates <= MAX_NUM_CANDIDATES:
            raise BadQueryError(
                f"num_candidates must be 1..{MAX_NUM_CANDIDATES} (Elasticsearch's cap), "
                f"got {self.num_candidates}"
            )
        if self.window > self.num_candidates:
            raise BadQueryError(
                f"knn needs k <= num_candidates: window {self.window} > num_candidates "
                f"{self.num_candidates}; raise num_candidates or lower the window"
            )
        k = self.rank_constant
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise BadQueryError(
                f"rank_constant must be an integer >= 1 (what native rrf accepts), got {k!r}"
            )
        for name, top in (
            ("max_query_chars", MAX_QUERY_CHARS_LIMIT),
            ("max_query_terms", MAX_QUERY_TERMS_LIMIT),
        ):
            n = getattr(self, name)
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= top:
                raise BadQueryError(f"{name} must be an integer 1..{top}, got {n!r}")


def clean_query(text: str, max_chars: int | None = MAX_QUERY_CHARS) -> str:
    """Normalise a user query; refuse empty ones, and ones longer than ``max_chars`` characters
    once cleaned (``None``: no limit, for text already accepted).

    Control characters become spaces (they carry no meaning and upset some analyzers). The text is
    never parsed as Lucene syntax: it goes to ``multi_match``, so ``AND``, ``:``, ``*`` or quotes
    are just characters.
    """
    if not isinstance(text, str):
        raise BadQueryError(f"the query must be text, got {type(text).__name__}")
    cleaned = "".join(" " if unicodedata.category(c).startswith("C") else c for c in text)
    cleaned = " ".join(cleaned.split())
    if not cleaned:
        raise BadQueryError("the query is empty", hint="ask a question with at least one word")
    if max_chars is not None and len(cleaned) > max_chars:
        raise BadQueryError(
            f"the query has {len(cleaned)} characters; the limit is {max_chars}",
            hint="shorten the question, or raise HYBRID_ES_MAX_QUERY_CHARS; put long context "
            "into a packet instead",
        )
    return cleaned


def sparse_query(
    query: str,
    policy: dict[str, Any],
    *,
    with_client_terms: bool = True,
    max_terms: int = MAX_QUERY_TERMS,
) -> dict[str, Any]:
    """BM25 over the search payload and title, plus exact identifier matches on keyword fields,
    with the policy in ``bool.filter``: the query of the sparse leg on both engines.
    ``with_client_terms`` adds the clause over the client-side analysed terms.

    Every clause is built from :func:`matching_text`: the query's first ``max_terms`` terms,
    folded as the chunks' matched fields are (Traditional Chinese as Simplified, full-width
    forms as ASCII), so a long question costs bounded work and stays under the engines' clause
    limits, and a Traditional question gets the very body of its Simplified twin. The dense leg
    embeds the question as written."""
    query = matching_text(query, max_terms)
    # most_fields (the fields' scores summed), not best_fields (the best field's maximum): a
    # sum of plain term disjunctions, which Lucene can skip through as one (a maximum over
    # fields is a dis_max it cannot see into). At 1M chunks the engine took 16 / 25 ms p50 / p95
    # against 30 / 81 (scripts/bench_sparse_shapes.py); nDCG@10 moved by +0.011 on Cranfield's
    # BM25 leg (p 0.01) and within noise on the other collections (docs/scale.md, "The BM25 leg
    # at 1M").
    should: list[Query] = [MultiMatch(query=query, fields=text_fields(query), type="most_fields")]
    terms = client_terms(query) if with_client_terms else ""
    if terms:
        # Stemmed English and CJK bigrams analysed client-side (see analysis.py): measured on
        # SciFact, Cranfield and XQuAD-zh, the sum of both clauses beats either alone.
        should.append(Match(CLIENT_TERMS_FIELD, {"query": terms}))
    # One camelCase word can split into many code terms: they are capped too.
    code = " ".join(code_terms(query).split()[:max_terms])
    if code:
        # Compound identifiers whole and split (analysis.code_terms): a question about
        # "DiffExecutor" or "run target" matches ``diff_executor`` and ``self.run_target``.
        should.append(Match(CODE_TERMS_FIELD, {"query": code}))
    ids = extract_identifiers(query)
    if ids:
        should.extend(_id_terms(f, ids) for f in ID_FIELDS)
    # A dict, not the DSL's Bool: the policy goes in as built (see the module docstring).
    return {
        "bool": {
            "should": [clause.to_dict() for clause in should],
            "minimum_should_match": 1,
            "filter": [policy],
        }
    }


def matching_text(query: str, max_terms: int = MAX_QUERY_TERMS) -> str:
    """The text the sparse leg matches on: ``query`` folded (``folding.fold_for_matching``) and
    cut after its ``max_terms``-th term.

    The query is cut at twice the cap before it is folded (the fold's cost stays bounded) and at
    the cap after: folding can merge characters (half-width katakana with their sound marks), so
    the cut is counted on the folded text, where a Traditional question and its Simplified twin
    count alike."""
    head = cap_terms(query, 2 * max_terms)[0]
    return cap_terms(fold_for_matching(head), max_terms)[0]


def text_fields(query: str) -> list[str]:
    """The text fields a query is matched on: the CJK sub-field only for a query with a CJK
    character. That sub-field keeps every token (English stop words too), so matching a Latin
    query on it would let "in" or "the" decide a match again; and it is a second postings walk
    that finds nothing the main field misses."""
    if has_cjk(query):
        return list(TEXT_FIELDS)
    return [f for f in TEXT_FIELDS if not f.endswith(".cjk")]


def _id_terms(field: str, ids: list[str]) -> Terms:
    """An exact, boosted match of the query's identifiers on one keyword field. The boost is set
    after the field: ``Terms(field, ids, boost=...)`` would write it first."""
    clause = Terms(field, ids)
    clause.boost = ID_BOOST
    return clause


def standard_retriever(
    query: str,
    policy: dict[str, Any],
    *,
    with_client_terms: bool = True,
    max_terms: int = MAX_QUERY_TERMS,
) -> dict[str, Any]:
    """The sparse leg as Elasticsearch's ``standard`` retriever."""
    sparse = sparse_query(query, policy, with_client_terms=with_client_terms, max_terms=max_terms)
    return {"standard": {"query": sparse}}


def knn_retriever(
    vector: Sequence[float], policy: dict[str, Any], params: RetrievalParams
) -> dict[str, Any]:
    """Approximate kNN over the chunk vectors; the policy filter is applied during the search.
    A dict: the DSL's ``Knn`` query would re-order the keys and make ``filter`` a list."""
    return {
        "knn": {
            "field": params.vector_field,
            "query_vector": list(map(float, vector)),
            "k": params.window,
            "num_candidates": params.num_candidates,
            "filter": policy,
        }
    }


def rrf_retriever(leaves: Sequence[dict[str, Any]], params: RetrievalParams) -> dict[str, Any]:
    """The native ``rrf`` retriever over the given leaves (a dict: the DSL has no retrievers)."""
    return {
        "rrf": {
            "retrievers": list(leaves),
            "rank_constant": params.rank_constant,
            "rank_window_size": params.window,
        }
    }


def search_body(retriever: dict[str, Any], size: int) -> dict[str, Any]:
    """A search over ``retriever`` for ``size`` hits: ids and scores, no ``_source``.

    The records are read afterwards for the fused head only (:func:`records_body`): a leg's 50
    sources were 330 KB of a SciFact search, and reading, sending and parsing them cost more
    than the scoring (``scripts/bench_legs.py``).

    A dict, not ``Search().extra(retriever=...).to_dict()``, which gives the same body but
    copies all of it node by node (the 384 floats of the vector and the policy included):
    measured, the three bodies of a search took 0.5 ms of CPU that way against 0.09 ms.

    ``track_total_hits`` is off: nothing reads ``hits.total``, so the engine need not count the
    first 10,000 matches (its default). Measured at 1M chunks this changed nothing visible; the
    BM25 leg's cost was its shape (``sparse_query``, docs/scale.md "The BM25 leg at 1M")."""
    return {"retriever": retriever, "size": size, "_source": False, "track_total_hits": False}


def records_body(keys: Sequence[str], policy: dict[str, Any]) -> dict[str, Any]:
    """The records of the fused head, by stored key, under the same ``policy`` as the legs
    (both engines): a record that left the caller's scope between the legs and this read (a
    new version, a deletion, an embargo) is not returned. Scores nothing; without the
    embedding."""
    return {
        "query": {"bool": {"filter": [policy, {"ids": {"values": list(keys)}}]}},
        "size": len(keys),
        "_source": {"excludes": list(SOURCE_EXCLUDES)},
    }


_ALLOWED_TOP = {
    "retriever",
    "query",
    "knn",
    "size",
    "from",
    "_source",
    "timeout",
    "track_total_hits",
    "explain",
    "sort",
    "search_after",
}


def check_sort(sort: Any) -> None:
    """A sort may name stored fields only (a rebuild pages a tenant's records by chunk id): a
    script or a geo sort could read values the policy has not admitted into an order."""
    if sort is None:
        return
    for item in sort if isinstance(sort, list) else [sort]:
        names = [item] if isinstance(item, str) else list(item) if isinstance(item, dict) else []
        if not names or any(
            not isinstance(n, str) or n.startswith(("_script", "_geo")) for n in names
        ):
            raise PolicyViolationError(f"request body sorts by {item!r}: only by stored fields")


def assert_policy(body: dict[str, Any], policy: dict[str, Any]) -> int:
    """Refuse a body in which any leaf lacks ``policy``; return the number of leaves checked.

    Walks the whole body: every ``standard`` query must carry the policy in ``bool.filter``, every
    ``knn`` must carry it as its ``filter``, and unknown retrievers or top-level keys are refused
    (they could score records outside the filter).
    """
    unknown = set(body) - _ALLOWED_TOP
    if unknown:
        raise PolicyViolationError(f"request body has unexpected top-level keys {sorted(unknown)}")
    check_sort(body.get("sort"))
    leaves = 0
    if "retriever" in body:
        leaves += _check_retriever(body["retriever"], policy)
    if "query" in body:
        _check_query(body["query"], policy)
        leaves += 1
    if "knn" in body:
        for k in body["knn"] if isinstance(body["knn"], list) else [body["knn"]]:
            _check_knn(k, policy)
            leaves += 1
    if leaves == 0:
        raise PolicyViolationError("request body has no retriever, query or knn to check")
    return leaves


def _check_retriever(node: Any, policy: dict[str, Any]) -> int:
    if not isinstance(node, dict) or len(node) != 1:
        raise PolicyViolationError(f"malformed retriever {str(node)[:80]}")
    ((kind, spec),) = node.items()
    if not isinstance(spec, dict):
        raise PolicyViolationError(f"malformed {kind} retriever")
    if kind in ("rrf", "linear"):
        children = spec.get("retrievers") or []
        if not children:
            raise PolicyViolationError(f"{kind} retriever without children")
        total = 0
        for child in children:
            inner = child.get("retriever", child) if isinstance(child, dict) else child
            total += _check_retriever(inner, policy)
        return total
    if kind == "standard":
        _check_query(spec.get("query"), policy)
        return 1
    if kind == "knn":
        _check_knn(spec, policy)
        return 1
    raise PolicyViolationError(f"retriever type {kind!r} is not allowed (cannot verify its filter)")


def check_query(query: Any, policy: dict[str, Any]) -> None:
    """Refuse a query that lacks ``policy`` in its ``bool.filter``."""
    _check_query(query, policy)


def _check_query(query: Any, policy: dict[str, Any]) -> None:
    filters = (query or {}).get("bool", {}).get("filter") if isinstance(query, dict) else None
    if not isinstance(filters, list) or policy not in filters:
        raise PolicyViolationError("a standard query lacks the policy filter in bool.filter")


def check_knn(knn: Any, policy: dict[str, Any]) -> None:
    """Refuse a kNN search (either engine's shape) whose filter is not ``policy``."""
    _check_knn(knn, policy)


def _check_knn(knn: Any, policy: dict[str, Any]) -> None:
    filt = knn.get("filter") if isinstance(knn, dict) else None
    if filt != policy and not (isinstance(filt, list) and policy in filt):
        raise PolicyViolationError("a knn search lacks the policy filter")
