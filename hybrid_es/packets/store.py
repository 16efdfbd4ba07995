"""The packets index: every read and write is keyed by the caller.

A packet version is stored under ``identity.packet_key(tenant, owner, packet_id)``: the caller's
own tenant and user id are part of the key, so a lookup can only reach the caller's own packets,
and another tenant's (or another user's) packet of the same id is simply a different record. A
packet that is not the caller's looks exactly like one that does not exist: same error, same
single GET.

The owner's part of the key is an HMAC under the deployment's secret (:func:`owner_secret`), so
a packet ``_id`` seen alone (in the URL of a GET, an audit log, a conflict message) does not
confirm a guessed user id. The document itself keeps ``tenant`` and ``principal_id`` in clear:
finding the newest version searches on them and every read compares them with the caller's
(defence in depth), and whoever may read the packets index reads the manifest's query, scope and
members anyway, as the traces name their user (``user.id``). Keying the ``_id`` protects the
user id from those who see ids only, not from readers of the index.

The chain of a case is committed by ``op_type=create`` alone: version n+1 can be created once,
so of two concurrent refreshes exactly one writes it and the other is told which version won.
Whether a version is current is read from the chain (does version n+1 exist? a real-time GET),
not from a status field, so no write waits for an index refresh; the ``superseded`` mark on the
old version is written afterwards for readers of the index and may be missing after a crash
without changing any verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.errors import ManifestConflictError, PacketNotFoundError, VersionConflictError
from hybrid_es.identity import packet_key
from hybrid_es.models import Principal
from hybrid_es.packets.manifest import Manifest, packet_id, parse_packet_id
from hybrid_es.settings import Settings


@dataclass(frozen=True)
class Stored:
    manifest: Manifest
    seq_no: int
    primary_term: int


def _not_found(pid: str) -> PacketNotFoundError:
    # The same words whether the packet does not exist or belongs to someone else.
    return PacketNotFoundError(f"no packet {pid!r}", hint="build one with `hybrid-es packet build`")


def owner_secret(settings: Settings) -> bytes | None:
    """The secret that keys packet owners (``identity.owner_digest``): the deployment's
    ``HYBRID_ES_TRACE_HASH_KEY``, or None when it sets none.

    One secret, set once per deployment, read alike by every process (``hybrid-es packet build``
    and a later ``packet show`` must compute the same ``_id``), so never a random key of the
    process as traces use when it is unset: without it the owner digest is unkeyed."""
    key = settings.trace_hash_key
    return key.get_secret_value().encode("utf-8") if key else None


class PacketStore:
    """The packets index, keyed by the caller (the module docstring).

    ``owner_secret``: the deployment's secret (:func:`owner_secret` of its settings); every
    process of a deployment must pass the same one, or each finds only its own packets. None
    digests owners unkeyed."""

    def __init__(
        self,
        client: Engine | Any,
        index: str = "hybrid-es-packets",
        *,
        owner_secret: bytes | None = None,
    ) -> None:
        self.client = as_engine(client)
        self.index = index
        self._secret = owner_secret

    def key(self, owner: Principal, pid: str) -> str:
        """The stored ``_id`` of ``owner``'s packet ``pid``."""
        return packet_key(owner.tenant, owner.user_id, pid, self._secret)

    def create(self, manifest: Manifest) -> Stored:
        """Write a new packet version (the commit point of a build or refresh).

        Raises ManifestConflictError, naming the version that exists, when it already does.
        """
        key = packet_key(manifest.tenant, manifest.principal_id, manifest.packet_id, self._secret)
        try:
            resp = self.client.index(
                self.index,
                manifest.to_document(),
                id=key,
                op_type="create",
                what="writing a packet",
            )
        except VersionConflictError as exc:
            raise ManifestConflictError(
                f"packet {manifest.packet_id} was already written by a concurrent build or "
                f"refresh; {manifest.packet_id} is the current version",
                hint="revalidate that version instead of writing again",
            ) from exc
        return Stored(manifest, int(resp["_seq_no"]), int(resp["_primary_term"]))

    def find(self, owner: Principal, pid: str) -> Stored | None:
        """The caller's packet ``pid``, or None (also when ``pid`` is malformed)."""
        try:
            parse_packet_id(pid)
        except ValueError:
            return None
        doc = self.client.get(self.index, self.key(owner, pid))
        if doc is None:
            return None
        stored = Stored(
            Manifest.from_document(doc["_source"]), int(doc["_seq_no"]), int(doc["_primary_term"])
        )
        m = stored.manifest
        if m.tenant != owner.tenant or m.principal_id != owner.user_id:  # defence in depth
            return None
        return stored

    def get(self, owner: Principal, pid: str) -> Stored:
        """The caller's packet ``pid``. Raises PacketNotFoundError otherwise."""
        stored = self.find(owner, pid)
        if stored is None:
            raise _not_found(pid)
        return stored

    def successor(self, owner: Principal, manifest: Manifest) -> str | None:
        """The id of the version after ``manifest`` when one exists (real-time), else None."""
        nxt = packet_id(manifest.case_id, manifest.packet_version + 1)
        return nxt if self.find(owner, nxt) is not None else None

    def latest(self, owner: Principal, case_id: str) -> Stored | None:
        """The newest version of the caller's packet for ``case_id``, or None.

        A search finds a recent version; real-time GETs then walk forward to the newest, so a
        version written a moment ago is never missed.
        """
        query = {
            "bool": {
                "filter": [
                    {"term": {"tenant": owner.tenant}},
                    {"term": {"principal_id": owner.user_id}},
                    {"term": {"case_id": case_id}},
                ]
            }
        }
        resp = self.client.search(
            self.index,
            {
                "size": 1,
                "sort": [{"packet_version": "desc"}],
                "query": query,
                "_source": ["packet_version"],
            },
            ignore_unavailable=True,  # no packets index yet: simply no packet
            what="finding a packet",
        )
        hits = resp["hits"]["hits"]
        version = int(hits[0]["_source"]["packet_version"]) if hits else 1
        current = self.find(owner, packet_id(case_id, version))
        while current is not None:
            nxt = self.find(owner, packet_id(case_id, current.manifest.packet_version + 1))
            if nxt is None:
                return current
            current = nxt
        return None

    def mark(self, old: Stored, *, status: str, superseded_by: str | None = None) -> Stored:
        """Change a stored version's status, only if nobody changed it since it was read."""
        m = old.manifest.model_copy(update={"status": status, "superseded_by": superseded_by})
        try:
            resp = self.client.index(
                self.index,
                m.to_document(),
                id=packet_key(m.tenant, m.principal_id, m.packet_id, self._secret),
                if_seq_no=old.seq_no,
                if_primary_term=old.primary_term,
                what="updating a packet",
            )
        except VersionConflictError as exc:
            raise ManifestConflictError(
                f"packet {m.packet_id} changed since it was read", hint="re-read and retry"
            ) from exc
        return Stored(m, int(resp["_seq_no"]), int(resp["_primary_term"]))
