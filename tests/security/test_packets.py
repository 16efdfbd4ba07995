"""Packets as an attacker: another tenant, and users of the same tenant with equal or fewer
rights, against the manager's packet (issue 11: D, E, F, G, packets 2-4, watermark 6)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from hybrid_es.errors import HybridEsError, ManifestConflictError, PacketNotFoundError
from hybrid_es.ingest.documents import Document
from hybrid_es.models import Principal
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from tests.conftest import owner
from tests.security.conftest import (
    AGENT_A,
    AGENT_B,
    CASE,
    GUEST_A,
    LATER,
    MANAGER,
    NOW,
    QUERY,
    SCOPE,
    World,
)

pytestmark = pytest.mark.integration

STRANGERS = {
    "another tenant, same user id and groups": AGENT_B,
    "same tenant, equal rights": AGENT_A,
    "same tenant, fewer rights": GUEST_A,
}


def _untouched(world: World, pid: str) -> None:
    stored = world.service.store.get(MANAGER, pid)
    assert stored.manifest.status == "active" and stored.manifest.superseded_by is None
    assert world.service.store.successor(MANAGER, stored.manifest) is None
    assert world.service.validate(pid, MANAGER, scope=SCOPE, now=LATER).kind == "reuse"


@pytest.mark.parametrize("who", list(STRANGERS))
def test_a_packet_of_anyone_else_is_indistinguishable_from_one_that_does_not_exist(
    world, packet, who, es, wire
):
    # D, F, G: before, `show` took no principal, `validate`/`render` by another tenant printed
    # the owner tenant and every member chunk id, a guest's render left the manager's packet
    # revoked, and a guest's refresh wrote v2 as the guest and superseded the manager's v1.
    caller = STRANGERS[who]
    svc = world.service
    absent = "JPN-0000-0000-packet-v1"
    operations = {
        "show": lambda pid: svc.show(pid, caller, now=LATER),
        "validate": lambda pid: svc.validate(pid, caller, scope=SCOPE, now=LATER),
        "render": lambda pid: svc.render(pid, caller, scope=SCOPE, now=LATER),
        "release_check": lambda pid: svc.release_check(pid, caller, scope=SCOPE, now=LATER),
        "refresh": lambda pid: svc.refresh(pid, caller, now=LATER),
    }
    recording, log = wire
    spy = PacketService(world.searcher, PacketStore(recording, world.layout.packets))
    for name, op in operations.items():
        with pytest.raises(PacketNotFoundError) as theirs:
            op(packet)
        with pytest.raises(PacketNotFoundError) as nobodys:
            op(absent)
        assert str(theirs.value).replace(packet, "<id>") == str(nobodys.value).replace(
            absent, "<id>"
        ), name
        text = str(theirs.value) + (theirs.value.hint or "")
        assert "demo-A" not in text and "manager" not in text and "D1" not in text, name
    # The same requests reach the cluster for someone else's packet as for no packet at all
    # (one GET that finds nothing): the same timing class.
    shapes = []
    for pid in (packet, absent):
        log.clear()
        with pytest.raises(PacketNotFoundError):
            spy.validate(pid, caller, scope=SCOPE, now=LATER)
        shapes.append([(method, path.rsplit("/", 1)[0]) for method, path, _ in log])
    assert shapes[0] == shapes[1] and len(shapes[0]) == 1 and shapes[0][0][0] == "GET"
    _untouched(world, packet)


def test_case_ids_are_a_namespace_per_owner(world, packet):
    # E: before, tenant B could build a case id first and lock tenant A out of it, and a build
    # conflict confirmed that A had that case.
    for caller in (AGENT_B, AGENT_A, GUEST_A):
        if caller.tenant == "demo-B":
            world.ingestor.ingest(
                [
                    Document(
                        id="B1",
                        tenant="demo-B",
                        body="KYO-H12 April rate for B.",
                        acl_groups=("*",),
                    )
                ],
                owner("demo-B"),
                now=NOW,
            )
        own = world.service.build(CASE, "mine", QUERY, caller, SCOPE, now=NOW).manifest
        assert own.packet_id == f"{CASE}-packet-v1"
        assert own.principal_id == caller.user_id and own.tenant == caller.tenant
        if caller is GUEST_A:  # the guest's own packet holds only what the guest may see
            assert {m.source_id for m in own.members} <= {"D4-generic-brochure", "D6-guest-review"}
    _untouched(world, packet)
    # And the manager's chain goes on, untouched by anyone else's builds.
    nxt = world.service.build(CASE, "again", QUERY, MANAGER, SCOPE, now=LATER).manifest
    assert nxt.packet_id == f"{CASE}-packet-v2" and nxt.principal_id == "manager"


def test_the_owner_whose_grants_shrank_is_denied_for_themselves(world, packet):
    # G: the packet is bound to its owner, and scope versions are compared for the owner only.
    demoted = Principal(tenant="demo-A", user_id="manager", groups=())
    assert demoted.scope_version != MANAGER.scope_version  # derived from the grants
    v = world.service.validate(packet, demoted, scope=SCOPE, now=LATER)
    assert v.kind == "deny" and any(c.startswith("D1-current-contract") for c in v.discard)
    # Regaining nothing: the revocation sticks, and nobody else's packet was touched.
    assert world.service.validate(packet, MANAGER, scope=SCOPE, now=LATER).kind == "deny"
    agent_packet = world.service.build(CASE, "a", QUERY, AGENT_A, SCOPE, now=NOW).manifest
    assert (
        world.service.validate(agent_packet.packet_id, AGENT_A, scope=SCOPE, now=LATER).kind
        == "reuse"
    )


def test_a_failed_member_lookup_is_unverified_not_a_change(world, packet, es):
    # Packets 2: an mget error for a member made the verdict refresh_required.
    index = world.layout.chunks_for("demo-A")
    es.close_index(index)
    try:
        v = world.service.validate(packet, MANAGER, scope=SCOPE, now=LATER)
        assert v.kind == "unverified" and "lookup" in v.reasons[0]
        expired = world.service.validate(packet, MANAGER, scope=SCOPE, now=NOW + timedelta(hours=1))
        assert expired.kind == "withhold"
    finally:
        es.open_index(index)
    assert world.service.validate(packet, MANAGER, scope=SCOPE, now=LATER).kind == "reuse"


class _DiesBetweenTheWrites(PacketStore):
    """A store whose process 'dies' after the new version is written and before the old one
    is marked superseded (the injected failure between the two writes)."""

    def mark(self, old, *, status, superseded_by=None):  # type: ignore[no-untyped-def]
        if status == "superseded":
            raise RuntimeError("killed between the two writes")
        return super().mark(old, status=status, superseded_by=superseded_by)


def test_concurrent_refreshes_and_a_crash_between_writes_leave_exactly_one_current_version(
    world, packet, es
):
    # Packets 3: supersede was create-then-mark; a conflict on the mark raised after v(n+1) was
    # written, and validate could raise instead of returning a verdict.
    world.ingestor.ingest(
        [
            Document(
                id="D9-note",
                tenant="demo-A",
                body="KYO-H12 April note.",
                acl_groups=("travel-agents",),
            )
        ],
        owner("demo-A"),
        now=NOW,
    )
    crashing = PacketService(world.searcher, _DiesBetweenTheWrites(es, world.layout.packets))
    results: list[object] = []
    barrier = threading.Barrier(3)

    def go(svc: PacketService) -> None:
        barrier.wait()
        try:
            results.append(svc.refresh(packet, MANAGER, now=LATER).manifest.packet_id)
        except ManifestConflictError as exc:
            results.append(exc)

    threads = [threading.Thread(target=go, args=(s,)) for s in (world.service, crashing, crashing)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if isinstance(r, str)]
    losers = [r for r in results if isinstance(r, ManifestConflictError)]
    assert winners == [f"{CASE}-packet-v2"] and len(losers) == 2
    assert all(f"{CASE}-packet-v2" in str(e) for e in losers)  # told which version is current
    # Exactly one current version, whatever the marks say; every check returns a verdict.
    store = world.service.store
    assert store.latest(MANAGER, CASE).manifest.packet_id == f"{CASE}-packet-v2"
    v1 = world.service.validate(packet, MANAGER, scope=SCOPE, now=LATER)
    assert v1.kind == "refresh_required" and v1.reasons == (f"superseded by {CASE}-packet-v2",)
    assert world.service.validate(f"{CASE}-packet-v2", MANAGER, scope=SCOPE, now=LATER).kind == (
        "reuse"
    )


def test_render_runs_the_release_check_and_refuses_context_that_changed_meanwhile(world, packet):
    # Packets 4: release_check existed but nothing called it.
    svc = world.service
    original = svc._passages

    def and_meanwhile(manifest, principal, now):  # type: ignore[no-untyped-def]
        passages = original(manifest, principal, now)
        world.ingestor.ingest(  # a correction lands while the context is being assembled
            [
                Document(
                    id="D7-correction",
                    tenant="demo-A",
                    body="KYO-H12 rate corrected.",
                    acl_groups=("travel-agents",),
                )
            ],
            owner("demo-A"),
            now=NOW,
        )
        return passages

    svc._passages = and_meanwhile  # type: ignore[method-assign]
    verdict, rendered = svc.render(packet, MANAGER, scope=SCOPE, now=LATER)
    assert rendered is None and verdict.kind == "refresh_required"
    assert any(r.startswith("corpus_watermark") for r in verdict.reasons)


def test_a_packet_built_while_an_ingest_is_in_flight_is_never_reused_silently(world):
    # Watermark 6: the watermark moved before the index refresh, so a packet built in that window
    # recorded the new watermark without the new document, and was reused for ever.
    run = world.state.begin("demo-A")  # an ingest is writing (its bump is not done yet)
    stored = world.service.build(CASE, "w", QUERY, MANAGER, SCOPE, now=NOW)
    pid = stored.manifest.packet_id
    v = world.service.validate(pid, MANAGER, scope=SCOPE, now=LATER)
    assert v.kind == "unverified" and "in progress" in v.reasons[0]
    world.state.finish("demo-A", run, "ingest")  # the writes became searchable, then it moved
    after = world.service.validate(pid, MANAGER, scope=SCOPE, now=LATER)
    assert after.kind == "refresh_required"
    assert any(r.startswith("corpus_watermark") for r in after.reasons)


def test_no_packet_operation_leaks_through_an_error(world, packet):
    # Whatever a stranger tries, the error they get is a library error with nothing of demo-A.
    for caller in STRANGERS.values():
        for call in (
            lambda c=caller: world.service.refresh(packet, c, now=LATER),
            lambda c=caller: world.service.build("", "x", QUERY, c, SCOPE, now=NOW),
            lambda c=caller: world.service.show(packet + "x", c),
        ):
            with pytest.raises(HybridEsError) as info:
                call()
            text = f"{info.value} {info.value.hint or ''}"
            assert "31,500" not in text and "D1-current-contract" not in text
            assert "manager" not in text
            if caller.tenant != "demo-A":
                assert "demo-A" not in text
