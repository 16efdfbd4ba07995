"""The verdict decides a packet's place in its chain too: revoked and superseded are read from
the manifest and the observations alone, in ``verdict.revalidate`` (issue 27)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hybrid_es.models import Principal, RequestScope
from hybrid_es.packets.assemble import SECTIONS
from hybrid_es.packets.manifest import Manifest, Member, QueryScope
from hybrid_es.packets.verdict import MemberState, Observations, revalidate, settled_by_manifest

T0 = datetime(2026, 3, 29, 11, 0, tzinfo=UTC)
SOON = T0 + timedelta(minutes=1)
AGENT = Principal(tenant="demo-A", user_id="a", groups=("travel-agents",))
FOLLOW_UP = RequestScope()
D1 = Member(source_id="D1", version=3, chunk_id="D1::v3::c0000", chunk_hash="h1", section="terms")
MANIFEST = Manifest(
    packet_id="JPN-2026-0417-packet-v1",
    case_id="JPN-2026-0417",
    packet_version=1,
    tenant="demo-A",
    principal_id="a",
    principal_scope_version=AGENT.scope_version,
    policy_version="policy-v1",
    corpus_watermark=18,
    query_scope=QueryScope(label="rate", query="KYO-H12 rate", scope=FOLLOW_UP),
    assembled_at=T0,
    expires_at=T0 + timedelta(minutes=5),
    members=(D1,),
    sections=SECTIONS,
)
REVOKED = MANIFEST.model_copy(update={"status": "revoked"})


def _obs() -> Observations:
    """Everything looked up and unchanged: on its own, a reuse."""
    state = MemberState(chunk_id=D1.chunk_id, exists=True, version=3, chunk_hash="h1")
    return Observations(corpus_watermark=18, policy_version="policy-v1", members=(state,))


def test_unchanged_is_reuse_so_the_cases_below_are_decided_by_what_they_change():
    assert revalidate(MANIFEST, AGENT, SOON, _obs(), scope=FOLLOW_UP).kind == "reuse"


def test_a_known_successor_means_superseded_whatever_the_members_say():
    for observed in (_obs(), Observations()):
        v = revalidate(
            MANIFEST,
            AGENT,
            SOON,
            observed.model_copy(update={"successor": "JPN-2026-0417-packet-v2"}),
            scope=FOLLOW_UP,
        )
        assert v.kind == "refresh_required"
        assert v.reasons == ("superseded by JPN-2026-0417-packet-v2",)


def test_a_revoked_packet_is_denied_before_anything_looked_up_counts():
    for observed in (_obs(), Observations(unavailable="down"), Observations(successor="x-v2")):
        v = revalidate(REVOKED, AGENT, SOON, observed, scope=FOLLOW_UP)
        assert (v.kind, v.reasons, v.discard) == ("deny", ("packet is revoked",), ())


def test_the_manifest_alone_settles_only_strangers_and_revoked_packets():
    assert settled_by_manifest(MANIFEST, AGENT) is None
    assert settled_by_manifest(REVOKED, AGENT) is not None
    stranger = Principal(tenant="demo-B", user_id=AGENT.user_id, groups=AGENT.groups)
    v = settled_by_manifest(MANIFEST, stranger)
    assert v is not None and v.kind == "deny"
    assert v.discard == tuple(m.chunk_id for m in MANIFEST.members)
    # The stranger gets the same answer from revalidate, whatever was observed.
    assert revalidate(MANIFEST, stranger, SOON, _obs(), scope=FOLLOW_UP) == v
