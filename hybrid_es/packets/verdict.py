"""Revalidation before every reuse: pure decision logic over observed dependencies.

Verdicts, in order of precedence:

- ``deny``: the caller is not the packet's owner, or a member is no longer authorized for the
  caller (revoked scope). The affected members are listed for discarding; nothing is released.
- ``withhold``: the packet has expired and its sources cannot be reached: no current factual
  claim may be released from it.
- ``unverified``: a dependency cannot be checked (cluster unreachable or timing out). Never a hit.
- ``refresh_required``: a dependency changed (reasons name which): member version or content,
  deletion, applicability, corpus watermark, caller scope version, policy version, query scope
  (the follow-up's request scope differs from the packet's), or expiry.

The follow-up's scope is part of every decision: there is no reuse without one.
- ``reuse``: everything checked and unchanged, before expiry.
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
    if caller.tenant != manifest.tenant or caller.user_id != manifest.principal_id:
        return Verdict(
            kind="deny",
            reasons=("the caller is not this packet's owner",),
            discard=tuple(m.chunk_id for m in manifest.members),
        )
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
