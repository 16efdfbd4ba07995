"""The adversarial suite's world: two tenants with the travel fixture, and callers of every kind.

Tenant demo-A has a manager (wide grants), an agent (the travel-agents group, as the manager) and
a guest (no groups); tenant demo-B has an agent with the same user id and groups as demo-A's
agent. The attacker controls everything an attacker of one tenant controls: their own
documents, their own query text, their own CLI arguments and library calls. Every test gets its
own indices (by tenancy mode where that matters), deleted afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout
from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents
from tests.constants import NOW, QUERY

LATER = NOW + timedelta(minutes=1)
CASE = "JPN-2026-0417"
SCOPE = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14), booking_ids=(CASE,))
MANAGER = Principal(tenant="demo-A", user_id="manager", groups=("travel-agents", "managers"))
AGENT_A = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
GUEST_A = Principal(tenant="demo-A", user_id="guest")
AGENT_B = Principal(tenant="demo-B", user_id="agent-1", groups=("travel-agents",))
SECRET_TEXT = "31,500"
"""A phrase of demo-A's current contract that no one outside demo-A's travel agents may see."""
A_IDS = (
    "D0-stale-contract",
    "D1-current-contract",
    "D2-accessibility-note",
    "D3-booking-itinerary",
)


@dataclass
class World:
    layout: IndexLayout
    ingestor: Ingestor
    searcher: HybridSearcher
    service: PacketService
    state: CorpusState

    @property
    def indices(self) -> str:
        return ",".join(
            [self.layout.chunks_pattern(), self.layout.packets, self.layout.corpus_state]
        )


def make_world(es, mode: str, *, embedder=None) -> World:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-sec-{tag}",
        packets=f"hybrid-es-packets-sec-{tag}",
        traces="hybrid-es-traces",
        corpus_state=f"hybrid-es-corpus-state-sec-{tag}",
        mode=mode,  # type: ignore[arg-type]
    )
    emb = embedder or HashEmbedder()
    state = CorpusState(es, layout.corpus_state)
    ingestor = Ingestor(es, emb, layout=layout, corpus_state=state)
    searcher = HybridSearcher(es, emb, layout=layout, native_rrf=False)
    service = PacketService(searcher, PacketStore(es, layout.packets), ttl=timedelta(minutes=10))
    return World(layout, ingestor, searcher, service, state)


@pytest.fixture(params=["index-per-tenant", "shared"])
def world(request, es, bootstrapped) -> Iterator[World]:  # type: ignore[no-untyped-def]
    """Both tenants' travel fixture, in each tenancy mode."""
    w = make_world(es, request.param)
    ingest_as_owners(w.ingestor, travel_documents(), now=NOW)
    try:
        yield w
    finally:
        es.delete_index(w.indices)


@pytest.fixture
def packet(world: World) -> str:
    """The manager's packet for the case (built from demo-A's records)."""
    stored = world.service.build(
        CASE, "KYO-H12", QUERY, MANAGER, SCOPE, unresolved=("availability",), now=NOW
    )
    members = {m.source_id for m in stored.manifest.members}
    assert {"D1-current-contract", "D2-accessibility-note"} <= members
    return stored.manifest.packet_id
