"""Stored identities: the tenant is part of every one of them. Pure.

Callers name their objects with tenant-local ids (document ``D1``, chunk ``D1::v3::c0000``,
packet ``JPN-2026-0417-packet-v1``); what is stored in Elasticsearch is keyed by the caller's
tenant as well, so one tenant's write can never land on another tenant's record, and a lookup by
id can only ever reach the caller's own:

- chunk ``_id``: ``<tenant>::<doc id>::v<version>::c<number>``. Tenant ids cannot contain ``:``
  (``models.TENANT_PATTERN``) and the suffix always has the same shape, so the key is injective.
  The audit copy of a chunk that a write replaced adds ``::r<digest of the replaced text>``
  (a shape no live chunk has: document ids cannot hold ``::``).
- packet ``_id``: ``<tenant>::<digest of the owner>::<packet id>``. A packet is a working set of
  one principal, so the owner is part of its identity too; the owner's id is digested (user ids
  may hold any character, including the separator). The digest is keyed (HMAC-SHA-256) with the
  deployment's secret where it has one (:func:`owner_digest`), so that whoever sees a packet
  ``_id`` (a proxy's access log of ``GET /<packets>/_doc/<_id>``, an audit log, a version
  conflict's message) cannot confirm a guessed user id by hashing it.

- a source's sync state ``_id`` in the corpus-state index: ``<tenant>::source::<source>``
  (:func:`sync_key`), beside the tenant's own document (``_id`` the tenant id, which holds no
  separator): one checkpoint per tenant and source index.

Keys are built from the caller's principal, never read from a document or a request.
"""

from __future__ import annotations

import hashlib
import hmac

SEPARATOR = "::"

_OWNER_DOMAIN = b"hybrid-es packet owner v1"
"""What the deployment's secret is bound to before it keys owner digests: the same secret also
keys the query hashes of traces (``hashing.keyed_digest``), and a query equal to a user id must
not hash to that user's packet digest."""


def chunk_id(doc_id: str, version: int, number: int) -> str:
    """The tenant-local id of a chunk: ``D1::v3::c0000``."""
    return f"{doc_id}{SEPARATOR}v{version}{SEPARATOR}c{number:04d}"


def audit_doc_id(doc_id: str, doc_hash: str) -> str:
    """The document id of an audit copy: the text that a write replaced, kept as it was
    (``D1::r<16 hex of its doc_hash>``). Document ids cannot hold the separator, so no live
    document can have it, and a search, a listing or an ingest reading ``D1`` never meets it."""
    return f"{doc_id}{SEPARATOR}r{doc_hash[:16]}"


def audit_chunk_id(local_chunk_id: str, doc_hash: str) -> str:
    """The chunk id of the audit copy of chunk ``local_chunk_id`` as it was under ``doc_hash``
    (``D1::v3::c0000::r<16 hex>``): the same for the same text, so a retried write copies it
    onto itself."""
    return f"{local_chunk_id}{SEPARATOR}r{doc_hash[:16]}"


def chunk_key(tenant: str, local_chunk_id: str) -> str:
    """The stored ``_id`` of a tenant's chunk."""
    return f"{tenant}{SEPARATOR}{local_chunk_id}"


def local_chunk_id(key: str) -> str:
    """The tenant-local chunk id of a stored ``_id`` (everything after the tenant)."""
    return key.split(SEPARATOR, 1)[1] if SEPARATOR in key else key


def owner_digest(user_id: str, secret: bytes | None = None) -> str:
    """A fixed-length, separator-free stand-in for a user id inside a key: 24 hex characters.

    ``secret``: the deployment's (``HYBRID_ES_TRACE_HASH_KEY``: ``packets.store.owner_secret``);
    the digest is HMAC-SHA-256 under a key derived from it, the same in every process of the
    deployment, so a packet built by one process is found by the next. None (no secret set):
    the unkeyed SHA-256 of the user id, which anyone can recompute from a guess; the ids such a
    deployment stored before keeping are the ones it still finds. A new or changed secret gives
    new packet ids: the packets stored under the old ones are not found and are built again."""
    data = user_id.encode("utf-8")
    if secret is None:
        return hashlib.sha256(data).hexdigest()[:24]
    key = hmac.new(secret, _OWNER_DOMAIN, hashlib.sha256).digest()
    return hmac.new(key, data, hashlib.sha256).hexdigest()[:24]


def packet_key(tenant: str, owner: str, packet_id: str, secret: bytes | None = None) -> str:
    """The stored ``_id`` of a packet version owned by ``owner`` of ``tenant``; ``secret`` keys
    the owner's digest (:func:`owner_digest`)."""
    return f"{tenant}{SEPARATOR}{owner_digest(owner, secret)}{SEPARATOR}{packet_id}"


def rebuild_key(tenant: str, name: str) -> str:
    """The stored ``_id`` of the state of an online rebuild of ``tenant``'s chunks index
    ``name`` (in the corpus-state index): ``<tenant>::rebuild::<name>``."""
    return f"{tenant}{SEPARATOR}rebuild{SEPARATOR}{name}"


def sync_key(tenant: str, source: str) -> str:
    """The stored ``_id`` of ``tenant``'s sync state of the source index ``source`` (in the
    corpus-state index): ``<tenant>::source::<source>``."""
    return f"{tenant}{SEPARATOR}source{SEPARATOR}{source}"
