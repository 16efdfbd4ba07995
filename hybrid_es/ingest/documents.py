"""Source documents as a typed model, and the chunk records derived from them."""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from hybrid_es.identity import SEPARATOR
from hybrid_es.metadata_fields import check_metadata
from hybrid_es.models import check_id, check_tenant

MAX_DOCUMENT_CHARS = 2_000_000
"""Larger documents are refused at load time: split them first (one contract, one file). About
500,000 tokens: beyond what a context-header prompt can hold whole, and far beyond any one
contract, audit or itinerary."""
MAX_DOCUMENT_BYTES = 4 * MAX_DOCUMENT_CHARS
"""A file larger than this cannot be within MAX_DOCUMENT_CHARS (UTF-8 takes at most 4 bytes a
character), so it is refused before it is read."""
MAX_VERSION = 999_999_999
"""The highest document version: an integer (never a boolean: JSON ``true`` is refused)."""
_SCOPE_IDS = {
    "booking_ids": "booking id",
    "property_ids": "property id",
    "source_type": "source type",
    "jurisdiction": "jurisdiction",
}


class Document(BaseModel):
    """One source document with everything the policy filter needs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    tenant: str
    title: str = ""
    body: str
    version: int = Field(default=1, ge=1, le=MAX_VERSION)
    """The ordering key among a document's versions (a higher number supersedes a lower one)."""
    version_label: str | None = Field(default=None, max_length=256)
    """A label such as ``contract-v4``, kept for people; ordering comes from ``version`` only."""
    acl_users: tuple[str, ...] | None = None
    acl_groups: tuple[str, ...] | None = None
    """None (both): the document names no ACL and the ingest applies its default ACL
    (``HYBRID_ES_DEFAULT_ACL``: nobody, unless the deployment chose every user of the tenant)."""
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
    """The document's own fields (a file's ``path``, a URL, a Markdown file's front matter,
    ``team``...): stored on every chunk as given, never indexed, except the fields declared
    filterable (``hybrid_es.metadata_fields``). What cannot be stored refuses the document."""

    @field_validator("body")
    @classmethod
    def _body_ok(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the document body is empty")
        if len(v) > MAX_DOCUMENT_CHARS:
            raise ValueError(f"the body has {len(v)} characters; the limit is {MAX_DOCUMENT_CHARS}")
        return v

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata_storable(cls, v: Any) -> dict[str, Any]:
        # Binary values, NaN, lone surrogates, 100 levels of nesting: refused here, with the
        # key path, rather than failing the chunks' bulk write (metadata_fields.check_metadata).
        return check_metadata(v)

    @field_validator("version", mode="before")
    @classmethod
    def _version_not_bool(cls, v: Any) -> Any:
        # JSON true is not a version; pydantic's lax mode would read it as 1.
        if isinstance(v, bool):
            raise ValueError("version must be an integer, not a boolean")
        return v

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        if SEPARATOR in v:
            raise ValueError(f"must not contain {SEPARATOR!r} (it separates the parts of a key)")
        return check_id(v, "document id")

    @field_validator("tenant")
    @classmethod
    def _tenant_ok(cls, v: str) -> str:
        return check_tenant(v)

    @field_validator("acl_users", "acl_groups")
    @classmethod
    def _acl_ok(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        # An entry no principal can hold (a trailing newline, a NUL) would silently match nobody.
        for entry in v or ():
            check_id(entry, "an ACL entry")
        return v

    @field_validator("booking_ids", "property_ids", "source_type", "jurisdiction")
    @classmethod
    def _scope_ids_ok(
        cls, v: str | tuple[str, ...] | None, info: ValidationInfo
    ) -> str | tuple[str, ...] | None:
        # The values a RequestScope is compared with, exactly: the same rules on both sides, so
        # a record is never scoped by a value that no request can name.
        what = _SCOPE_IDS[info.field_name or ""]
        for value in (v,) if isinstance(v, str) else v or ():
            check_id(value, what)
        return v

    @property
    def acl_unset(self) -> bool:
        """The document names no ACL at all (the ingest's default applies)."""
        return self.acl_users is None and self.acl_groups is None

    def with_acl(self, groups: tuple[str, ...]) -> Document:
        """A copy whose unset ACL is ``groups`` (an explicit ACL is kept as it is)."""
        if not self.acl_unset:
            return self
        return self.model_copy(update={"acl_users": (), "acl_groups": groups})

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
                "version_label",
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
