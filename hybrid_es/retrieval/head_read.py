"""The fused head and the read of its records: the second request of a search.

The legs return ids and scores only (``queries.search_body``), so that a window of 100 candidates
does not carry 100 records over the wire; the records of the fused head (the hits asked for, or
the rerank pool when a reranker will score it) are then read by key, under the same policy filter
as the legs (``queries.records_body``). When the head is the whole window the legs carry the
records themselves instead, and nothing is read twice. The read is a generator of effects
(``retrieval.effects``): it yields its ``_msearch`` and does no I/O itself; the rest is pure.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from hybrid_es.retrieval.candidates import local_id
from hybrid_es.retrieval.effects import Msearch, Steps
from hybrid_es.retrieval.queries import records_body
from hybrid_es.retrieval.stages import Candidate, Prepared, ms_since

log = logging.getLogger(__name__)


def head_size(req: Prepared, reranks: bool) -> int:
    """How many fused candidates the later stages read: the hits asked for, or the rerank pool
    when a reranker will score it (``reranks``: the searcher has one)."""
    if req.rerank and reranks:
        return max(req.top_k, req.rerank_depth)
    return req.top_k


def legs_carry_records(req: Prepared, reranks: bool, window: int) -> bool:
    """Whether the legs return the records themselves: when the head is the whole fusion
    ``window`` (an evaluation's top 100), a second read would fetch every candidate anyway, one
    round trip later. Otherwise the legs return ids and scores."""
    return head_size(req, reranks) >= window


def read_head_steps(
    req: Prepared,
    candidates: list[Candidate],
    timings: dict[str, float],
    *,
    size: int,
    carried: bool,
) -> Steps[list[Candidate]]:
    """The first ``size`` candidates with their records, in fused order: read by key (one
    ``_msearch``), or as they are when the legs ``carried`` them. A candidate whose record is no
    longer in the caller's scope when it is read (a new version, a deletion between the two
    requests) is left out; nothing past the head is read. The time counts as retrieval."""
    head = candidates[:size]
    if not head or carried:
        return head
    t = time.perf_counter()
    (resp,), _ = yield Msearch([records_body([c.key for c in head], req.policy)], req)
    timings["retrieval"] = round(timings.get("retrieval", 0.0) + ms_since(t), 3)
    return with_records(head, resp)


def with_records(head: list[Candidate], resp: dict[str, Any]) -> list[Candidate]:
    """The candidates of ``head`` that ``resp`` (the read by key) holds, each given its record's
    ``_source`` and chunk id, in ``head``'s order."""
    # By index and key: an alias over two indices (a reindex in progress) may hold a key twice,
    # and the candidate is the record its leg scored.
    found = {(h["_index"], h["_id"]): h for h in resp["hits"]["hits"]}
    kept = []
    for c in head:
        hit = found.get((c.index, c.key))
        if hit is None:
            log.debug("record %s left the caller's scope before it was read", c.key)
            continue
        c.source = hit.get("_source", {})
        c.chunk_id = local_id(hit)
        kept.append(c)
    return kept
