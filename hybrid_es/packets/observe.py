"""Looking up a packet's dependencies now: the I/O half of revalidation.

:func:`observe_packet` gathers all that ``verdict.revalidate`` reads: the chain first (is there
a newer version? :func:`observe_chain`), then the members, the watermark and the policy version
(:func:`observe`). It decides nothing; it only skips the lookups that cannot matter (a packet
whose verdict the manifest alone settles, one already superseded).

Member records are read by id with only their policy fields, version and hash (never their text),
and judged for the current caller by the same policy rules the search filter uses. They are read
by their stored keys under the packet's tenant, so nothing of another tenant can be reached. Any
failure to look something up, including one member's lookup failing, becomes
``Observations(unavailable=...)``: an error is not evidence of change, and never a hit. A writer
run that is pending for the tenant (``corpus_state``) means the evidence may be changing right
now: that too is ``unavailable``.
"""

from __future__ import annotations

from datetime import datetime

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import HybridEsError, error_reason
from hybrid_es.identity import chunk_key
from hybrid_es.models import Principal
from hybrid_es.packets.manifest import Manifest
from hybrid_es.packets.store import PacketStore
from hybrid_es.packets.verdict import MemberState, Observations, settled_by_manifest
from hybrid_es.retrieval.policy import POLICY_VERSION, authorize

_AUTH_RULES = {"tenant", "acl"}
_FIELDS = [
    "tenant",
    "acl_users",
    "acl_groups",
    "version",
    "chunk_hash",
    "deleted",
    "valid_from",
    "valid_to",
    "superseded_by",
    "embargo_until",
    "retention_until",
    "booking_ids",
    "property_ids",
    "jurisdiction",
    "source_type",
]


def observe_packet(
    store: PacketStore,
    client: Engine,
    chunks_index: str,
    corpus_state: CorpusState,
    manifest: Manifest,
    caller: Principal,
    now: datetime,
    *,
    members: Observations | None = None,
) -> Observations:
    """Everything ``revalidate`` reads about ``manifest``, looked up now for ``caller``.

    Nothing is looked up when the manifest alone settles the verdict
    (``verdict.settled_by_manifest``: a caller who is not the owner, a revoked packet), so
    nothing is ever read on behalf of a stranger. Otherwise the chain, and when the packet is
    still current, the members (:func:`observe`; ``members``: observations to take instead of
    looking them up, the chain being read all the same)."""
    if settled_by_manifest(manifest, caller) is not None:
        return Observations()
    chain = observe_chain(store, caller, manifest)
    if chain.unavailable is not None or chain.successor is not None:
        return chain
    if members is not None:
        return members
    return observe(client, chunks_index, corpus_state, manifest, caller, now)


def observe_chain(store: PacketStore, caller: Principal, manifest: Manifest) -> Observations:
    """Whether a newer version of the packet's chain exists: a real-time GET of the next
    version under the caller's own key (``PacketStore.successor``), so a version written a
    moment ago counts. A failed lookup is ``unavailable``, never "not superseded"."""
    try:
        return Observations(successor=store.successor(caller, manifest))
    except HybridEsError as exc:
        return Observations(unavailable=exc.message)


def observe(
    client: Engine,
    chunks_index: str,
    corpus_state: CorpusState,
    manifest: Manifest,
    caller: Principal,
    now: datetime,
) -> Observations:
    """The members as the chunks index holds them now, judged for ``caller``, with the tenant's
    corpus watermark and the policy version (the module docstring says how failures read)."""
    keys = {m.chunk_id: chunk_key(manifest.tenant, m.chunk_id) for m in manifest.members}
    try:
        state = corpus_state.read(manifest.tenant)
        docs = {
            d["_id"]: d
            for d in client.mget(chunks_index, list(keys.values()), source_includes=_FIELDS)
        }
    except HybridEsError as exc:
        return Observations(unavailable=exc.message)
    errors = [d for d in docs.values() if "error" in d]
    if errors:
        return Observations(
            unavailable=f"{len(errors)} member lookup(s) failed: {error_reason(errors[0])}"
        )
    if state.pending:
        return Observations(
            unavailable=f"{len(state.pending)} ingest run(s) for the tenant are in progress or "
            "were interrupted: the evidence may be changing"
        )
    watermark = state.watermark
    states = []
    scope = manifest.query_scope.scope
    for m in manifest.members:
        d = docs.get(keys[m.chunk_id], {})
        if not d.get("found"):
            states.append(MemberState(chunk_id=m.chunk_id, exists=False))
            continue
        src = d["_source"]
        decision = authorize(caller, scope, now, src)
        failed = [o for o in decision.outcomes if not o.passed]
        authorized = not any(o.rule in _AUTH_RULES for o in failed)
        not_applicable = [o for o in failed if o.rule not in _AUTH_RULES and o.rule != "deletion"]
        states.append(
            MemberState(
                chunk_id=m.chunk_id,
                exists=True,
                version=int(src.get("version", 0)),
                chunk_hash=src.get("chunk_hash"),
                deleted=bool(src.get("deleted", False)),
                authorized=authorized,
                applicable=not not_applicable,
                detail="; ".join(f"{o.rule}: {o.detail}" for o in not_applicable),
            )
        )
    return Observations(
        corpus_watermark=watermark, policy_version=POLICY_VERSION, members=tuple(states)
    )
