"""Source documents as a typed model, and the chunk records derived from them."""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

MAX_DOCUMENT_CHARS = 2_000_000
"""Larger documents are refused at load time: split them first (one contract, one file). About
500,000 tokens: beyond what a context-header prompt can hold whole, and far beyond any one
contract, audit or itinerary."""
MAX_DOCUMENT_BYTES = 4 * MAX_DOCUMENT_CHARS
"""A file larger than this cannot be within MAX_DOCUMENT_CHARS (UTF-8 takes at most 4 bytes a
character), so it is refused before it is read."""


class Document(BaseModel):
    """One source document with everything the policy filter needs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=256)
    tenant: str = Field(min_length=1, max_length=128)
    title: str = ""
    body: str
    version: int = Field(default=1, ge=1)
    acl_users: tuple[str, ...] = ()
    acl_groups: tuple[str, ...] = ("*",)
    valid_from: date | datetime | None = None
    valid_to: date | datetime | None = None
    superseded_by: str | None = None
    deleted: bool = False
    retention_until: date | datetime | None = None
    embargo_until: date | datetime | None = None
    source_type: str = "document"
    jurisdiction: str | None = None
    booking_ids: tuple[str, ...] = ()
    property_ids: tuple[str, ...] = ()
    contract_ids: tuple[str, ...] = ()
    room_codes: tuple[str, ...] = ()
    lang: str = "en"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("body")
    @classmethod
    def _body_ok(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the document body is empty")
        if len(v) > MAX_DOCUMENT_CHARS:
            raise ValueError(f"the body has {len(v)} characters; the limit is {MAX_DOCUMENT_CHARS}")
        return v

    @field_validator("id", "tenant")
    @classmethod
    def _trimmed(cls, v: str) -> str:
        if v != v.strip():
            raise ValueError("must not have surrounding whitespace")
        return v

    def content_hash(self) -> str:
        """SHA-256 over everything that shapes the chunks (text and policy fields)."""
        canon = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canon.encode()).hexdigest()

    def policy_fields(self) -> dict[str, Any]:
        """The fields copied onto every chunk for filtering."""
        d = self.model_dump(
            mode="json",
            include={
                "tenant",
                "acl_users",
                "acl_groups",
                "version",
                "valid_from",
                "valid_to",
                "superseded_by",
                "deleted",
                "retention_until",
                "embargo_until",
                "source_type",
                "jurisdiction",
                "booking_ids",
                "property_ids",
                "contract_ids",
                "room_codes",
                "lang",
            },
        )
        return {k: v for k, v in d.items() if v not in (None, [], ())}


def validation_summary(exc: ValidationError) -> str:
    """One line naming each invalid field and why, for load errors."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'document'}: {e['msg']}" for e in exc.errors()
    )
