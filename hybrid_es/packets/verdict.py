"""Revalidation before every reuse: pure decision logic over observed dependencies.

The whole verdict is decided here, from the manifest, the caller, the follow-up's scope and what
``observe.py`` looked up; the service only looks up and acts on the verdict. The checks, in the
order they are made (the first that applies decides):

1. ``deny`` from the manifest alone (:func:`settled_by_manifest`): the caller is not the packet's
   owner (every member is listed for discarding; nothing else is said), or it is revoked.
2. ``refresh_required``: the packet is superseded, a newer version of its chain exists
   (``Observations.successor``): the chain, not the members, says it is no longer current.
3. ``withhold``: the packet has expired and its sources cannot be reached: no current factual
   claim may be released from it.
4. ``unverified``: the dependencies cannot be checked (cluster unreachable or timing out).
5. ``deny``: a member is no longer authorized for the caller (revoked scope). The affected
   members are listed for discarding; nothing is released.
6. ``unverified``: a member, the watermark or the policy version was not looked up. An
   unchecked dependency is never a hit.
7. ``refresh_required``: a dependency changed (reasons name which): member version or content,
   deletion, applicability, corpus watermark, caller scope version, policy version, query scope
   (the follow-up's request scope differs from the packet's), or expiry.
8. ``reuse``: everything checked and unchanged, before expiry.

The follow-up's scope is part of every decision: there is no reuse without one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from hybrid_es.models import Principal, RequestScope
from hybrid_es.packets.manifest import Manifest

VerdictKind = Literal["reuse", "refresh_required", "deny", "unverified", "withhold"]


class MemberState(BaseModel):
    """What the chunks index says about a member now, judged for the current caller."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    exists: bool
    version: int | None = None
    chunk_hash: str | None = None
    deleted: bool = False
    authorized: bool = True
    """tenant and ACL still admit the caller"""
    applicable: bool = True
    """current version, validity, embargo, retention still hold for the packet's scope"""
    detail: str = ""


class Observations(BaseModel):
    """The dependencies as looked up now; ``unavailable`` when they could not be looked up."""

    model_config = ConfigDict(frozen=True)

    unavailable: str | None = None
    successor: str | None = None
    """the id of the next version of the packet's chain, when one exists: it is superseded"""
    corpus_watermark: int | None = None
    policy_version: str | None = None
    members: tuple[MemberState, ...] = ()


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: VerdictKind
    reasons: tuple[str, ...] = ()
    discard: tuple[str, ...] = ()
    """chunk ids to drop from any context built on this packet"""

    @property
    def releasable(self) -> bool:
        return self.kind == "reuse"


def revalidate(
    manifest: Manifest,
    caller: Principal,
    now: datetime,
    observed: Observations,
    *,
    scope: RequestScope,
) -> Verdict:
    """Decide whether ``manifest`` may be reused for ``caller``'s follow-up about ``scope`` at
    ``now``, in the precedence of the module docstring. A packet is its owner's working set:
    anyone else is denied (the store never hands them one; this is the pure rule behind it),
    with no detail about the packet."""
    settled = settled_by_manifest(manifest, caller)
    if settled is not None:
        return settled
    if observed.successor is not None:
        return Verdict(kind="refresh_required", reasons=(f"superseded by {observed.successor}",))
    expired = now >= manifest.expires_at
    if observed.unavailable is not None:
        if expired:
            return Verdict(
                kind="withhold",
                reasons=(
                    f"packet expired at {manifest.expires_at.isoformat()} and its sources are "
                    f"unavailable ({observed.unavailable}): no current factual claims",
                ),
            )
        return Verdict(
            kind="unverified", reasons=(f"dependencies cannot be checked: {observed.unavailable}",)
        )
    states = {s.chunk_id: s for s in observed.members}
    revoked = [
        m.chunk_id
        for m in manifest.members
        if m.chunk_id in states and not states[m.chunk_id].authorized
    ]
    if revoked:
        return Verdict(
            kind="deny",
            reasons=(
                f"caller scope {caller.scope_version} no longer admits {len(revoked)} member(s)",
            ),
            discard=tuple(revoked),
        )
    unchecked = [m.chunk_id for m in manifest.members if m.chunk_id not in states]
    if unchecked:
        return Verdict(kind="unverified", reasons=(f"member {unchecked[0]} was not checked",))
    if observed.corpus_watermark is None or observed.policy_version is None:
        missing = "corpus watermark" if observed.corpus_watermark is None else "policy version"
        return Verdict(kind="unverified", reasons=(f"{missing} was not checked",))
    reasons = [
        *_member_changes(manifest, states),
        *_dependency_changes(manifest, caller, observed, scope),
    ]
    if expired:
        reasons.append(f"expired at {manifest.expires_at.isoformat()}")
    if reasons:
        return Verdict(kind="refresh_required", reasons=tuple(reasons))
    return Verdict(kind="reuse", reasons=("all dependencies unchanged, before expiry",))


def settled_by_manifest(manifest: Manifest, caller: Principal) -> Verdict | None:
    """The verdict that the manifest alone decides, before anything is looked up (None: the
    dependencies decide): ``deny`` for a caller who is not the owner (every member listed for
    discarding, nothing else said), and ``deny`` for a packet already revoked. ``observe.py``
    looks nothing up for such a packet, so nothing is read on behalf of a stranger."""
    if caller.tenant != manifest.tenant or caller.user_id != manifest.principal_id:
        return Verdict(
            kind="deny",
            reasons=("the caller is not this packet's owner",),
            discard=tuple(m.chunk_id for m in manifest.members),
        )
    if manifest.status == "revoked":
        return Verdict(kind="deny", reasons=("packet is revoked",))
    return None


def _member_changes(manifest: Manifest, states: dict[str, MemberState]) -> list[str]:
    """Why each member no longer is what the packet recorded (deleted, new version, new text,
    no longer applicable), in member order."""
    reasons: list[str] = []
    for m in manifest.members:
        s = states[m.chunk_id]
        if not s.exists:
            reasons.append(f"deletion_state: {m.chunk_id} no longer exists")
        elif s.deleted:
            reasons.append(f"deletion_state: {m.source_id} was deleted")
        elif s.version != m.version:
            reasons.append(f"member_versions: {m.source_id} v{m.version} -> v{s.version}")
        elif s.chunk_hash != m.chunk_hash:
            reasons.append(f"member_versions: {m.source_id} content changed")
        elif not s.applicable:
            reasons.append(f"member_versions: {m.source_id} no longer applies ({s.detail})")
    return reasons


def _dependency_changes(
    manifest: Manifest, caller: Principal, observed: Observations, scope: RequestScope
) -> list[str]:
    """The packet-wide dependencies that moved: watermark, grants, policy, question scope."""
    reasons: list[str] = []
    if observed.corpus_watermark != manifest.corpus_watermark:
        reasons.append(
            f"corpus_watermark: {manifest.corpus_watermark} -> "
            f"{observed.corpus_watermark} (new or corrected evidence)"
        )
    if caller.scope_version != manifest.principal_scope_version:
        reasons.append(
            f"principal_scope_version: {manifest.principal_scope_version} -> {caller.scope_version}"
        )
    if observed.policy_version != manifest.policy_version:
        reasons.append(f"policy_version: {manifest.policy_version} -> {observed.policy_version}")
    if scope.digest() != manifest.query_scope.scope.digest():
        reasons.append("query_scope: the follow-up asks about a different scope")
    return reasons
