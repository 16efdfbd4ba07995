"""Stored identities: the tenant is part of every one of them. Pure.

Callers name their objects with tenant-local ids (document ``D1``, chunk ``D1::v3::c0000``,
packet ``JPN-2026-0417-packet-v1``); what is stored in Elasticsearch is keyed by the caller's
tenant as well, so one tenant's write can never land on another tenant's record, and a lookup by
id can only ever reach the caller's own:

- chunk ``_id``: ``<tenant>::<doc id>::v<version>::c<number>``. Tenant ids cannot contain ``:``
  (``models.TENANT_PATTERN``) and the suffix always has the same shape, so the key is injective.
- packet ``_id``: ``<tenant>::<digest of the owner>::<packet id>``. A packet is a working set of
  one principal, so the owner is part of its identity too; the owner's id is digested (user ids
  may hold any character, including the separator).

Keys are built from the caller's principal, never read from a document or a request.
"""

from __future__ import annotations

import hashlib

SEPARATOR = "::"


def chunk_id(doc_id: str, version: int, number: int) -> str:
    """The tenant-local id of a chunk: ``D1::v3::c0000``."""
    return f"{doc_id}{SEPARATOR}v{version}{SEPARATOR}c{number:04d}"


def chunk_key(tenant: str, local_chunk_id: str) -> str:
    """The stored ``_id`` of a tenant's chunk."""
    return f"{tenant}{SEPARATOR}{local_chunk_id}"


def local_chunk_id(key: str) -> str:
    """The tenant-local chunk id of a stored ``_id`` (everything after the tenant)."""
    return key.split(SEPARATOR, 1)[1] if SEPARATOR in key else key


def owner_digest(user_id: str) -> str:
    """A fixed-length, separator-free stand-in for a user id inside a key."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:24]


def packet_key(tenant: str, owner: str, packet_id: str) -> str:
    """The stored ``_id`` of a packet version owned by ``owner`` of ``tenant``."""
    return f"{tenant}{SEPARATOR}{owner_digest(owner)}{SEPARATOR}{packet_id}"
