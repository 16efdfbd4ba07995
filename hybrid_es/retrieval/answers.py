"""A search's ``_msearch`` answers, checked before anything reads them, and the digest of what was
sent; and :class:`Answers`, the one place a search's stages send their bodies. The checks are
pure: the responses come in, errors go out.

Every item must be a whole answer: an item's error, a timeout or a failed shard is raised, never
passed on as a partial result. Two errors are told apart because the searcher acts on them: a
query that expands past the cluster's clause limit is the caller's (BadQueryError, with what to
do), and OpenSearch's refusal of a hybrid query for a document-level-security user
(neural-search#1303) is retried once with the known workaround (:class:`HybridUnderDls`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from hybrid_es.errors import BadQueryError, HybridEsError, SearchTimeoutError, from_error_body
from hybrid_es.hashing import keyed_digest
from hybrid_es.retrieval.dialects import is_hybrid_dls_refusal
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.effects import Msearch
from hybrid_es.retrieval.fusion import FusionFindings

TOO_MANY_CLAUSES = ("too_many_clauses", "too_many_nested_clauses", "maxClauseCount")
"""OpenSearch 2.19 allows 1,024 clauses per query (Elasticsearch 9 sizes the limit by heap): a
long question over several fields can pass ``MAX_QUERY_CHARS`` and still exceed it."""


class HybridUnderDls(Exception):
    """OpenSearch refused a hybrid query for a document-level-security user."""


def sent_digest(hash_key: bytes, pairs: list[tuple[str, dict[str, Any]]]) -> str:
    """A keyed digest of the ``_msearch`` lines for ``pairs`` (index, body): equal requests,
    equal digest, and nothing of the bodies readable from it."""
    lines = [line for index, body in pairs for line in ({"index": index}, body)]
    # orjson: about 0.01 ms for a search's two bodies against 0.28 ms for the json module (the
    # query vector's 384 floats are most of it; timeit, 2-core machine under load).
    return keyed_digest(hash_key, orjson.dumps(lines, option=_SORTED, default=str), length=64)


_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def check_answers(items: list[dict[str, Any]], *, url: str, dls_suggest: bool) -> None:
    """Raise for the first item that is not a whole answer (``dls_suggest``: the DLS workaround
    is already on, so a hybrid refusal is an error like any other)."""
    for item in items:
        if "error" in item:
            err = from_error_body(item.get("status"), item, url=url, what="search")
            if any(m in err.message for m in TOO_MANY_CLAUSES):
                raise BadQueryError(
                    "the query expands to more clauses than the cluster allows "
                    f"({err.message[:160]})",
                    hint="ask a shorter question (fewer distinct words), or raise the "
                    "cluster's indices.query.bool.max_clause_count",
                ) from err
            if is_hybrid_dls_refusal(err.message) and not dls_suggest:
                raise HybridUnderDls() from err
            raise err
        if item.get("timed_out"):
            raise SearchTimeoutError(
                f"the search timed out at {url}; no partial answer is returned",
                hint="retry, or raise HYBRID_ES_REQUEST_TIMEOUT",
            )
        shards = item.get("_shards", {})
        if shards.get("failed"):
            raise HybridEsError(
                f"search failed on {shards['failed']} shard(s): refusing a partial answer",
                hint="check the cluster health (`scripts/es.sh status`)",
            )


@dataclass(frozen=True)
class Answers:
    """Where a search's stages send their bodies: one ``_msearch`` through the chunks ``door``
    (every body checked against the request's policy first), every answer checked
    (:func:`check_answers`), and the keyed digest of what was sent (:func:`sent_digest`).
    ``found`` says whether OpenSearch's DLS workaround is on already."""

    door: ChunksDoor
    hash_key: bytes
    url: str
    found: FusionFindings

    def send(self, effect: Msearch) -> tuple[list[dict[str, Any]], str]:
        """The answers to one :class:`~hybrid_es.retrieval.effects.Msearch`, and the digest."""
        pairs = [(effect.req.index, body) for body in effect.searches]
        items = self.door.msearch(pairs, effect.req.policy, opaque_id=effect.req.trace_id or None)
        return self.checked(items, pairs)

    def checked(
        self, items: list[dict[str, Any]], pairs: list[tuple[str, dict[str, Any]]]
    ) -> tuple[list[dict[str, Any]], str]:
        """``items``, the answers to ``pairs`` (index, body), once checked; and the digest.
        Shared by the async searcher, whose door is awaited."""
        check_answers(items, url=self.url, dls_suggest=self.found.dls_suggest)
        return items, sent_digest(self.hash_key, pairs)
