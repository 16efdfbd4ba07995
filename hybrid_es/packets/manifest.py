"""The packet manifest: application state, not a provider cache key.

It records what the packet depends on (member versions and hashes, the corpus watermark, the
caller's scope version, the policy version, the query scope) so that every reuse can be checked
against the authoritative stores. It holds references, never passage text: the text is read from
the chunks index at render time, through the policy filter.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hybrid_es.models import RequestScope, check_id

INVALIDATION_DEPENDENCIES = (
    "member_versions",
    "corpus_watermark",
    "principal_scope_version",
    "policy_version",
    "deletion_state",
    "query_scope",
)

_VERSIONED = re.compile(r"(?P<case>.+)-packet-v(?P<n>[1-9][0-9]{0,17})", re.DOTALL)
"""Matched whole (``fullmatch``): ASCII digits without leading zeros, so each packet has one id."""


def packet_id(case_id: str, version: int) -> str:
    """``JPN-2026-0417`` + 1 -> ``JPN-2026-0417-packet-v1``."""
    return f"{case_id}-packet-v{version}"


def parse_packet_id(pid: str) -> tuple[str, int]:
    """``JPN-2026-0417-packet-v1`` -> ``("JPN-2026-0417", 1)``. Raises ValueError unless the
    whole of ``pid`` is :func:`packet_id` of a valid case id (:func:`check_id`) and a version
    of 1 or more written in ASCII digits without leading zeros."""
    m = _VERSIONED.fullmatch(pid) if isinstance(pid, str) else None
    if not m:
        raise ValueError(f"{pid!r} is not a packet id of the form <case>-packet-v<N>")
    try:
        check_id(m.group("case"), "case id")
    except ValueError as exc:
        raise ValueError(f"{pid!r} is not a packet id: {exc}") from exc
    return m.group("case"), int(m.group("n"))


class Member(BaseModel):
    model_config = ConfigDict(frozen=True)

    source_id: str
    version: int
    chunk_id: str
    chunk_hash: str
    section: str
    title: str = ""


class Section(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    label: str
    order: int


class QueryScope(BaseModel):
    """What the packet answers: a label, the retrieval question and the request scope."""

    model_config = ConfigDict(frozen=True)

    label: str
    query: str
    scope: RequestScope

    def digest(self) -> str:
        import hashlib
        import json

        canon = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canon.encode()).hexdigest()[:16]


class Manifest(BaseModel):
    model_config = ConfigDict(frozen=True)

    packet_id: str
    case_id: str
    packet_version: int = Field(ge=1)
    status: str = "active"
    superseded_by: str | None = None
    tenant: str
    principal_id: str
    principal_scope_version: str
    policy_version: str
    corpus_watermark: int
    query_scope: QueryScope
    assembled_at: datetime
    expires_at: datetime
    members: tuple[Member, ...]
    sections: tuple[Section, ...]
    unresolved: tuple[str, ...] = ()
    invalidation_dependencies: tuple[str, ...] = INVALIDATION_DEPENDENCIES
    retrieval_settings: dict[str, Any] = Field(default_factory=dict)

    def to_document(self) -> dict[str, Any]:
        """The packets-index document."""
        doc = self.model_dump(mode="json")
        doc["query_scope_hash"] = self.query_scope.digest()
        return doc

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> Manifest:
        data = {k: v for k, v in doc.items() if k != "query_scope_hash"}
        return cls.model_validate(data)
