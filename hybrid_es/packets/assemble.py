"""Assembling a packet version from one retrieval: its members, in sections, and its dependencies.

A manifest records everything revalidation compares against later (each member's version and
hash, the corpus watermark, the caller's scope version, the policy version, the query scope and
the retrieval settings), so that ``verdict.revalidate`` can say exactly what changed. The search
goes through the searcher, so the members are only ever what the caller may see.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.models import Principal
from hybrid_es.packets.manifest import Manifest, Member, QueryScope, Section, packet_id
from hybrid_es.retrieval.policy import POLICY_VERSION
from hybrid_es.retrieval.searcher import HybridSearcher

# Deliberate order: the case's own records, then binding terms, then qualifying evidence, then
# background. Unknown source types land in "supporting".
SECTIONS = (
    Section(key="case", label="Case records", order=1),
    Section(key="terms", label="Binding terms (contracts)", order=2),
    Section(key="evidence", label="Qualifying evidence (audits, inspections)", order=3),
    Section(key="supporting", label="Supporting material", order=4),
    Section(key="background", label="Background (brochures, reviews)", order=5),
)
SECTION_OF = {
    "itinerary": "case",
    "booking": "case",
    "contract": "terms",
    "correction": "terms",
    "accessibility-audit": "evidence",
    "inspection": "evidence",
    "audit": "evidence",
    "brochure": "background",
    "review": "background",
}


def assemble(
    searcher: HybridSearcher,
    corpus_state: CorpusState,
    *,
    case_id: str,
    version: int,
    query_scope: QueryScope,
    principal: Principal,
    now: datetime,
    unresolved: tuple[str, ...],
    ttl: timedelta,
    max_members: int,
) -> Manifest:
    """Version ``version`` of ``principal``'s packet for ``case_id``: the top ``max_members``
    hits of ``query_scope`` as members, valid for ``ttl`` from ``now``. Not yet stored."""
    # The watermark is read before the search: a change that lands in between moves it, so
    # the packet can only ever record a watermark older than what it saw.
    watermark = corpus_state.watermark(principal.tenant)
    qs = query_scope
    resp = searcher.search(qs.query, principal, qs.scope, top_k=max_members, now=now)
    members = tuple(
        Member(
            source_id=h.doc_id,
            version=h.source_version,
            chunk_id=h.chunk_id,
            chunk_hash=str(h.source.get("chunk_hash", "")),
            section=SECTION_OF.get(str(h.source.get("source_type")), "supporting"),
            title=h.title,
        )
        for h in resp.hits
    )
    return Manifest(
        packet_id=packet_id(case_id, version),
        case_id=case_id,
        packet_version=version,
        tenant=principal.tenant,
        principal_id=principal.user_id,
        principal_scope_version=principal.scope_version,
        policy_version=POLICY_VERSION,
        corpus_watermark=watermark,
        query_scope=qs,
        assembled_at=now,
        expires_at=now + ttl,
        members=members,
        sections=SECTIONS,
        unresolved=unresolved,
        retrieval_settings={
            "fusion_path": resp.fusion_path,
            "reranked": resp.reranked,
            "window": searcher.params.window,
            "rank_constant": searcher.params.rank_constant,
            "top_k": max_members,
            "request_digest": resp.request_digest,
        },
    )
