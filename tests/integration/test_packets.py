"""Evidence packets against the real cluster: the seed's five cases and the extra checks."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime, timedelta

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.errors import ManifestConflictError, PacketNotFoundError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.conftest import ingest_as_owners, owner, travel_documents
from tests.constants import QUERY

pytestmark = pytest.mark.integration

CASE = "JPN-2026-0417"
AGENT = Principal(
    tenant="demo-A", user_id="agent-1", groups=("travel-agents",), scope_version="scope-v3"
)
SCOPE = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14), booking_ids=(CASE,))
T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
DOCS = (
    "D0-stale-contract",
    "D1-current-contract",
    "D2-accessibility-note",
    "D4-generic-brochure",
    "D5-other-tenant",
    "D3-booking-itinerary",
)


@pytest.fixture
def world(es, embedder, fresh_indices):  # type: ignore[no-untyped-def]
    state = CorpusState(es, fresh_indices["corpus_state"])
    ingestor = Ingestor(es, embedder, index=fresh_indices["chunks"], corpus_state=state)
    ingest_as_owners(ingestor, travel_documents(*DOCS), now=T0)
    searcher = HybridSearcher(
        es,
        embedder,
        index=fresh_indices["chunks"],
        corpus_state_index=fresh_indices["corpus_state"],
    )
    service = PacketService(
        searcher, PacketStore(es, fresh_indices["packets"]), ttl=timedelta(minutes=5)
    )
    stored = service.build(
        CASE,
        "KYO-H12-current-rate-and-accessibility",
        QUERY,
        AGENT,
        SCOPE,
        unresolved=("date-specific-room-availability",),
        now=T0,
    )
    return {
        "service": service,
        "ingestor": ingestor,
        "state": state,
        "pid": stored.manifest.packet_id,
    }


def _members(service, pid):  # type: ignore[no-untyped-def]
    return {m.source_id for m in service.store.get(AGENT, pid).manifest.members}


def test_the_manifest_has_every_seed_field(world):
    m = world["service"].store.get(AGENT, world["pid"]).manifest
    assert m.packet_id == "JPN-2026-0417-packet-v1" and m.tenant == "demo-A"
    assert m.principal_scope_version == "scope-v3" and m.policy_version
    assert m.corpus_watermark == world["state"].watermark("demo-A") == 1
    assert m.query_scope.label == "KYO-H12-current-rate-and-accessibility"
    assert m.expires_at - m.assembled_at == timedelta(minutes=5)
    assert {"D1-current-contract", "D2-accessibility-note"} <= {x.source_id for x in m.members}
    assert not {"D0-stale-contract", "D5-other-tenant"} & {x.source_id for x in m.members}
    assert m.unresolved == ("date-specific-room-availability",)
    assert set(m.invalidation_dependencies) == {
        "member_versions",
        "corpus_watermark",
        "principal_scope_version",
        "policy_version",
        "deletion_state",
        "query_scope",
    }
    assert all(x.chunk_hash and x.version for x in m.members)


def test_case_1_unchanged_before_expiry_is_reused(world):
    s = world["service"]
    v = s.validate(world["pid"], AGENT, scope=SCOPE, now=T0 + timedelta(minutes=1))
    assert v.kind == "reuse"
    verdict, rendered = s.render(world["pid"], AGENT, scope=SCOPE, now=T0 + timedelta(minutes=2))
    assert verdict.kind == "reuse" and rendered is not None
    assert "[D1-current-contract@v3]" in rendered.text and "31,500" in rendered.text
    assert 'trust="untrusted"' in rendered.text
    assert s.metrics.reuse_rate == 1.0


def test_case_2_a_changed_contract_requires_a_refresh_and_the_stale_passage_is_gone(world):
    s, ing = world["service"], world["ingestor"]
    d1 = travel_documents("D1-current-contract")[0]
    changed = Document.model_validate(
        {**d1.model_dump(), "body": d1.body.replace("JPY 31,500", "JPY 33,000")}
    )
    ing.ingest([changed], owner("demo-A"), now=T0)
    v = s.validate(world["pid"], AGENT, scope=SCOPE, now=T0 + timedelta(minutes=1))
    assert v.kind == "refresh_required"
    assert any(r.startswith("member_versions: D1-current-contract") for r in v.reasons)
    new = s.refresh(world["pid"], AGENT, now=T0 + timedelta(minutes=1))
    assert new.manifest.packet_id == "JPN-2026-0417-packet-v2"
    old = s.store.get(AGENT, world["pid"]).manifest
    assert old.status == "superseded" and old.superseded_by == new.manifest.packet_id
    verdict, rendered = s.render(
        new.manifest.packet_id, AGENT, scope=SCOPE, now=T0 + timedelta(minutes=2)
    )
    assert verdict.kind == "reuse" and rendered is not None
    assert "33,000" in rendered.text and "31,500" not in rendered.text
    # The superseded version itself can no longer be reused.
    assert (
        s.validate(world["pid"], AGENT, scope=SCOPE, now=T0 + timedelta(minutes=2)).kind != "reuse"
    )


def test_case_3_a_newly_added_correction_requires_a_refresh(world):
    s, ing = world["service"], world["ingestor"]
    correction = Document(
        id="D7-rate-correction",
        tenant="demo-A",
        title="Correction to KYO-H12",
        body="Correction: the April 2026 roll-in shower room rate under KYO-H12 "
        "excludes breakfast.",
        source_type="correction",
        valid_from="2026-03-30",
        acl_groups=("travel-agents",),
    )
    ing.ingest([correction], owner("demo-A"), now=T0)
    v = s.validate(world["pid"], AGENT, scope=SCOPE, now=T0 + timedelta(minutes=1))
    assert v.kind == "refresh_required"
    assert any(r.startswith("corpus_watermark") for r in v.reasons)
    new = s.refresh(world["pid"], AGENT, now=T0 + timedelta(minutes=1))
    assert "D7-rate-correction" in _members(s, new.manifest.packet_id)


def test_case_4_revoked_scope_is_denied_and_the_context_discarded(world):
    s = world["service"]
    revoked = Principal(tenant="demo-A", user_id="agent-1", groups=(), scope_version="scope-v4")
    v = s.validate(world["pid"], revoked, scope=SCOPE, now=T0 + timedelta(minutes=1))
    assert v.kind == "deny"
    assert any(c.startswith("D1-current-contract") for c in v.discard)
    assert any(c.startswith("D2-accessibility-note") for c in v.discard)
    assert s.store.get(AGENT, world["pid"]).manifest.status == "revoked"
    verdict, rendered = s.render(world["pid"], AGENT, scope=SCOPE, now=T0 + timedelta(minutes=2))
    assert rendered is None and verdict.kind == "deny"  # nobody reuses a revoked packet
    assert (
        s.release_check(world["pid"], revoked, scope=SCOPE, now=T0 + timedelta(minutes=2)).kind
        == "deny"
    )


def _unreachable(es, settings):  # type: ignore[no-untyped-def]
    """An engine of the same flavour as ``es`` whose cluster is down (nothing listens on :9)."""
    from hybrid_es.cluster.client import make_client
    from hybrid_es.cluster.engine import ElasticsearchEngine, OpenSearchEngine, _opensearch_client

    down = settings.model_copy(
        update={"url": "http://127.0.0.1:9", "max_retries": 0, "request_timeout": 2}
    )
    if es.flavor == "opensearch":
        return OpenSearchEngine(_opensearch_client(down), url=down.redacted_url())
    return ElasticsearchEngine(make_client(down), url=down.redacted_url())


def test_case_5_expired_with_the_source_unavailable_withholds(world, es, settings):
    s = world["service"]
    manifest = s.store.get(AGENT, world["pid"]).manifest
    down = HybridSearcher(
        _unreachable(es, settings),
        s.searcher.embedder,
        layout=s.searcher.layout,
    )
    offline = PacketService(down, s.store)
    after = manifest.expires_at + timedelta(seconds=1)
    assert offline.check(manifest, AGENT, scope=SCOPE, now=after).kind == "withhold"
    # Before expiry the same outage is "unverified": never an automatic reuse.
    assert (
        offline.check(manifest, AGENT, scope=SCOPE, now=T0 + timedelta(minutes=1)).kind
        == "unverified"
    )
    # Expired with the sources reachable: refresh, not reuse.
    assert s.validate(world["pid"], AGENT, scope=SCOPE, now=after).kind == "refresh_required"


def test_another_tenants_packet_is_indistinguishable_from_one_that_does_not_exist(world):
    s = world["service"]
    other = Principal(tenant="demo-B", user_id="agent-1", groups=("travel-agents",))
    with pytest.raises(PacketNotFoundError) as theirs:
        s.validate(world["pid"], other, scope=SCOPE, now=T0 + timedelta(minutes=1))
    with pytest.raises(PacketNotFoundError) as nobodys:
        s.validate("JPN-0000-0000-packet-v9", AGENT, scope=SCOPE, now=T0)
    assert str(theirs.value) == str(nobodys.value).replace("JPN-0000-0000-packet-v9", world["pid"])
    assert "demo-A" not in str(theirs.value)
    assert s.store.get(AGENT, world["pid"]).manifest.status == "active"  # nothing was revoked


def test_a_follow_up_about_another_scope_requires_a_refresh(world):
    s = world["service"]
    may = RequestScope(stay_from=date(2026, 5, 10), stay_to=date(2026, 5, 14), booking_ids=(CASE,))
    v = s.validate(world["pid"], AGENT, scope=may, now=T0 + timedelta(minutes=1))
    assert v.kind == "refresh_required" and any(r.startswith("query_scope") for r in v.reasons)
    verdict, rendered = s.render(world["pid"], AGENT, scope=may, now=T0 + timedelta(minutes=1))
    assert rendered is None and verdict.kind == "refresh_required"


def test_concurrent_refreshes_cannot_lose_an_update(world):
    s, ing = world["service"], world["ingestor"]
    ing.ingest(
        [
            Document(
                id="D8-note", tenant="demo-A", body="KYO-H12 note.", acl_groups=("travel-agents",)
            )
        ],
        owner("demo-A"),
        now=T0,
    )
    results: list[object] = []

    def go() -> None:
        try:
            results.append(s.refresh(world["pid"], AGENT, now=T0 + timedelta(minutes=1)))
        except ManifestConflictError as exc:
            results.append(exc)

    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wins = [r for r in results if not isinstance(r, Exception)]
    losses = [r for r in results if isinstance(r, ManifestConflictError)]
    assert len(wins) == 1 and len(losses) == 1
    latest = s.store.latest(AGENT, CASE).manifest
    assert latest.packet_version == 2
    assert s.store.get(AGENT, world["pid"]).manifest.superseded_by == latest.packet_id


def test_packet_metrics_are_recorded(world):
    s = world["service"]
    s.validate(world["pid"], AGENT, scope=SCOPE, now=T0 + timedelta(minutes=1))
    s.validate(world["pid"], AGENT, scope=SCOPE, now=T0 + timedelta(hours=1))
    assert s.metrics.verdicts == {"reuse": 1, "refresh_required": 1}
    assert s.metrics.reuse_rate == 0.5
    p50, p95 = s.metrics.percentiles("packet_build")
    assert 0 < p50 <= p95
