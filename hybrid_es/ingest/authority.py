"""Who may write what inside a tenant: the one rule that every writer follows. Pure.

Every write runs for a principal and stays in its tenant (a document of another tenant is
refused, and every stored key holds the tenant: ``hybrid_es.identity``). Inside the tenant:

- The tenant's **writer** (a principal holding :data:`~hybrid_es.models.WRITER_ROLE`: an ingest
  service identity; ``hybrid-es ingest`` runs as one unless told ``--member``) may create,
  replace and delete any document of its tenant, with any ACL.
- Any other principal of the tenant is a **member**. A member may create a document under an id
  that its tenant does not hold yet. It may replace or delete a document only when it may read
  it: the ACL of the document's latest version, and of every stored version the write would
  change, admits it, by the very rule a search applies (``retrieval.policy.acl_admits``). A
  member's replacement never widens the ACL: its users and groups stay within those of the
  version it replaces, its own user aside (it reads the document already), unless that version
  was open to every user of the tenant (``*``).

Only the ACL decides. Validity dates, embargo, retention and deletion decide what a search
shows, not who answers for a record: a member who may read a document's ACL may correct it
while it is embargoed, and may write again a document it could read before it was deleted.

**What a refusal looks like.** A refused delete does exactly what a delete of a missing id does:
nothing, and no error. A refused write is reported with the others that were not written
(``IngestReport.failed_documents``), in one wording for every reason, which names no other
principal, ACL, version or text. Because a member may create new ids, a refused write does tell
the member that the id is taken (as any shared namespace of names does); ids that hybrid-es
derives for the frameworks' stores are content or position hashes, so a member learns from them
only what it already wrote. Every refusal is counted: ``IngestReport.refused`` for writes, and
the metric ``hybrid_es.writes.refused`` (by ``operation`` and ``reason``) for writes and deletes
alike, so operators see refusals that their callers cannot tell from missing ids.

Replacement never overwrites in place either: the text a write replaces is kept as an audit
copy (``identity.audit_chunk_id``, marked deleted, never searched) before the new text takes
its key (``ingest.indexer``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hybrid_es.ingest.documents import Document
from hybrid_es.models import EVERYONE, WRITER_ROLE, Principal
from hybrid_es.retrieval.policy import acl_admits, acl_clause

Reason = Literal["writer", "new", "reader", "missing", "hidden", "widens-acl"]
"""Why a write or delete was allowed (``writer``, ``new``, ``reader``), had nothing to do
(``missing``), or was refused (``hidden``: the principal may not read the document;
``widens-acl``: a member's replacement would let more people read it)."""
REFUSALS: tuple[Reason, ...] = ("hidden", "widens-acl")
"""The reasons of a refusal: the values of the refusal metric's ``reason``."""


@dataclass(frozen=True)
class Verdict:
    """Whether one write or delete may go ahead, and why (a :data:`Reason`)."""

    allowed: bool
    reason: Reason


def refusal_message(principal: Principal, doc_id: str) -> str:
    """The one wording of a refused write, whatever the reason: it names the caller and its own
    id, and nothing of the stored document."""
    return (
        f"not written: {principal.user_id!r} may not write document {doc_id!r}. A member of a "
        "tenant creates new documents and replaces only documents it may read, keeping their "
        f"ACL; the tenant's writer role ({WRITER_ROLE}) writes any document"
    )


def write_verdict(principal: Principal, doc: Document, stored: Sequence[dict[str, Any]]) -> Verdict:
    """May ``principal`` write ``doc`` (its ACL already final), given ``stored``: the tenant's
    live chunks of the same document id, any version (``acl_users``, ``acl_groups``,
    ``version``, ``superseded_by``)? See the module docstring for the rule."""
    if principal.is_writer:
        return Verdict(True, "writer")
    if not stored:
        return Verdict(True, "new")
    latest = max(_version(c) for c in stored)
    touched = [
        c
        for c in stored
        if _version(c) in (latest, doc.version)
        or (_version(c) < doc.version and not c.get("superseded_by"))
    ]
    if not all(acl_admits(principal, c) for c in touched):
        return Verdict(False, "hidden")
    current = [c for c in stored if _version(c) == latest]
    if widens(principal, doc.acl_users or (), doc.acl_groups or (), current):
        return Verdict(False, "widens-acl")
    return Verdict(True, "reader")


def delete_verdict(principal: Principal, stored: Sequence[dict[str, Any]]) -> Verdict:
    """May ``principal`` delete the document whose stored chunks (any version) are ``stored``?
    Nothing stored is ``missing``; a member needs to read every version it would mark."""
    if not stored:
        return Verdict(False, "missing")
    if principal.is_writer:
        return Verdict(True, "writer")
    if all(acl_admits(principal, c) for c in stored):
        return Verdict(True, "reader")
    return Verdict(False, "hidden")


def widens(
    principal: Principal,
    users: Iterable[str],
    groups: Iterable[str],
    replaced: Sequence[dict[str, Any]],
) -> bool:
    """Whether the ACL ``users``/``groups`` lets anyone read what the ``replaced`` chunks' ACL
    did not: a user or group it does not list (``principal``'s own user aside), unless it
    listed every user of the tenant."""
    old_users = {u for c in replaced for u in _listed(c.get("acl_users"))}
    old_groups = {g for c in replaced for g in _listed(c.get("acl_groups"))}
    if EVERYONE in old_groups:
        return False
    return bool(set(users) - old_users - {principal.user_id} or set(groups) - old_groups)


def writable_clauses(principal: Principal) -> list[dict[str, Any]]:
    """The clauses (beside the tenant's) that select the documents ``principal`` may replace or
    delete now, as its store counts them and checks duplicates against: the tenant's live
    (not deleted, not superseded) records, and for a member only those its ACL admits."""
    live: list[dict[str, Any]] = [
        {
            "bool": {
                "must_not": [{"term": {"deleted": True}}, {"exists": {"field": "superseded_by"}}]
            }
        }
    ]
    return live if principal.is_writer else [*live, acl_clause(principal)]


def _version(chunk: dict[str, Any]) -> int:
    return int(chunk.get("version") or 0)


def _listed(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
