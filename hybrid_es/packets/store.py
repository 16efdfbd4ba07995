"""The packets index: create, read, supersede with optimistic concurrency.

A packet version is created with ``op_type=create`` under its versioned id, so two concurrent
refreshes of v1 cannot both write v2: the second gets a conflict instead of overwriting. The
superseded version is kept (history), marked with ``superseded_by`` using ``if_seq_no``.
"""

from __future__ import annotations

from dataclasses import dataclass

from elasticsearch import ConflictError, Elasticsearch, NotFoundError

from hybrid_es.errors import ManifestConflictError, PacketNotFoundError, translate_es_error
from hybrid_es.packets.manifest import Manifest


@dataclass(frozen=True)
class Stored:
    manifest: Manifest
    seq_no: int
    primary_term: int


class PacketStore:
    def __init__(self, client: Elasticsearch, index: str = "hybrid-es-packets") -> None:
        self.client = client
        self.index = index

    def create(self, manifest: Manifest) -> Stored:
        """Write a new packet version; ManifestConflictError if that version already exists."""
        try:
            resp = self.client.index(
                index=self.index,
                id=manifest.packet_id,
                op_type="create",
                document=manifest.to_document(),
                refresh="wait_for",
            )
        except ConflictError as exc:
            raise ManifestConflictError(
                f"packet {manifest.packet_id} already exists (a concurrent refresh won)",
                hint="read the latest version and revalidate it instead of writing again",
            ) from exc
        except Exception as exc:
            raise translate_es_error(exc, what="writing a packet") from exc
        return Stored(manifest, int(resp["_seq_no"]), int(resp["_primary_term"]))

    def get(self, pid: str) -> Stored:
        try:
            doc = self.client.get(index=self.index, id=pid)
        except NotFoundError as exc:
            raise PacketNotFoundError(
                f"no packet {pid!r}", hint="build one with `hybrid-es packet build`"
            ) from exc
        except Exception as exc:
            raise translate_es_error(exc, what="reading a packet") from exc
        return Stored(
            Manifest.from_document(doc["_source"]), int(doc["_seq_no"]), int(doc["_primary_term"])
        )

    def latest(self, case_id: str, tenant: str) -> Stored:
        """The newest version of a case's packet for ``tenant``."""
        try:
            resp = self.client.search(
                index=self.index,
                size=1,
                sort=[{"packet_version": "desc"}],
                query={
                    "bool": {
                        "filter": [{"term": {"case_id": case_id}}, {"term": {"tenant": tenant}}]
                    }
                },
                seq_no_primary_term=True,
                ignore_unavailable=True,  # no packets index yet: simply no packet
            )
        except Exception as exc:
            raise translate_es_error(exc, what="finding a packet") from exc
        hits = resp["hits"]["hits"]
        if not hits:
            raise PacketNotFoundError(
                f"no packet for case {case_id!r} of tenant {tenant}",
                hint="build one with `hybrid-es packet build`",
            )
        h = hits[0]
        return Stored(
            Manifest.from_document(h["_source"]), int(h["_seq_no"]), int(h["_primary_term"])
        )

    def mark(self, old: Stored, *, status: str, superseded_by: str | None = None) -> Stored:
        """Change a stored version's status, only if nobody changed it since it was read."""
        m = old.manifest.model_copy(update={"status": status, "superseded_by": superseded_by})
        try:
            resp = self.client.index(
                index=self.index,
                id=m.packet_id,
                document=m.to_document(),
                if_seq_no=old.seq_no,
                if_primary_term=old.primary_term,
                refresh="wait_for",
            )
        except ConflictError as exc:
            raise ManifestConflictError(
                f"packet {m.packet_id} changed since it was read", hint="re-read and retry"
            ) from exc
        except Exception as exc:
            raise translate_es_error(exc, what="updating a packet") from exc
        return Stored(m, int(resp["_seq_no"]), int(resp["_primary_term"]))

    def supersede(self, old: Stored, new: Manifest) -> Stored:
        """Write ``new`` and mark ``old`` superseded by it; exactly one concurrent caller wins."""
        created = self.create(new)
        self.mark(old, status="superseded", superseded_by=new.packet_id)
        return created
