"""Looking up a packet's dependencies now: the I/O half of revalidation.

Member records are read by id with only their policy fields, version and hash (never their text),
and judged for the current caller by the same policy rules the search filter uses. Any failure to
look something up becomes ``Observations(unavailable=...)``: never an automatic hit.
"""

from __future__ import annotations

from datetime import datetime

from elasticsearch import Elasticsearch

from hybrid_es.corpus_state import CorpusState
from hybrid_es.errors import EngineUnavailableError, HybridEsError, translate_es_error
from hybrid_es.models import Principal
from hybrid_es.packets.manifest import Manifest
from hybrid_es.packets.verdict import MemberState, Observations
from hybrid_es.policy import POLICY_VERSION, authorize

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


def observe(
    client: Elasticsearch,
    chunks_index: str,
    corpus_state: CorpusState,
    manifest: Manifest,
    caller: Principal,
    now: datetime,
) -> Observations:
    try:
        resp = client.mget(
            index=chunks_index, ids=[m.chunk_id for m in manifest.members], source_includes=_FIELDS
        )
        docs = {d["_id"]: d for d in resp["docs"]}
        watermark = corpus_state.watermark(manifest.tenant)
    except EngineUnavailableError as exc:
        return Observations(unavailable=exc.message)
    except HybridEsError as exc:
        return Observations(unavailable=exc.message)
    except Exception as exc:
        err = translate_es_error(exc, what="revalidating a packet")
        return Observations(unavailable=err.message)
    states = []
    scope = manifest.query_scope.scope
    for m in manifest.members:
        d = docs.get(m.chunk_id, {})
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
