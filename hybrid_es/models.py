"""Typed values shared across the package: who asks, what the question is about, what comes back.

Principals come from the authenticated context handed to the searcher, never from query text.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FusionPath = Literal["native-rrf", "client-rrf", "client-linear", "bm25-only", "dense-only"]
Pipeline = Literal["hybrid", "bm25", "dense"]

EVERYONE = "*"
"""ACL group meaning every user of the document's tenant."""


class Principal(BaseModel):
    """The authenticated caller. ``scope_version`` changes whenever its grants change."""

    model_config = ConfigDict(frozen=True)

    tenant: str = Field(min_length=1, max_length=128)
    user_id: str = Field(min_length=1, max_length=256)
    groups: tuple[str, ...] = ()
    scope_version: str = "1"

    @field_validator("tenant", "user_id")
    @classmethod
    def _no_blank(cls, v: str) -> str:
        if v.strip() != v or not v:
            raise ValueError("must be non-empty without surrounding whitespace")
        return v


class RequestScope(BaseModel):
    """What the question is about. Applicability rules read this, never the query text.

    ``as_of`` is a single date; ``stay_from``/``stay_to`` a date range (a stay). With neither, the
    question is about ``now``. ``historical`` admits superseded versions (change comparisons,
    "what did the old contract say").
    """

    model_config = ConfigDict(frozen=True)

    as_of: date | None = None
    stay_from: date | None = None
    stay_to: date | None = None
    booking_ids: tuple[str, ...] = ()
    property_ids: tuple[str, ...] = ()
    source_types: tuple[str, ...] = ()
    jurisdictions: tuple[str, ...] = ()
    historical: bool = False

    @model_validator(mode="after")
    def _check_dates(self) -> RequestScope:
        if (self.stay_from is None) != (self.stay_to is None):
            raise ValueError("stay_from and stay_to go together")
        if self.stay_from and self.stay_to and self.stay_from > self.stay_to:
            raise ValueError("stay_from is after stay_to")
        if self.as_of and self.stay_from:
            raise ValueError("give either as_of or a stay range, not both")
        return self

    def window(self, now: datetime) -> tuple[date, date]:
        """The date range the question is about (inclusive)."""
        if self.stay_from and self.stay_to:
            return self.stay_from, self.stay_to
        d = self.as_of or now.date()
        return d, d

    def digest(self) -> str:
        """A stable hash of the scope (packets depend on it)."""
        canon = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(canon.encode()).hexdigest()[:16]


class RuleOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    rule: str
    passed: bool
    detail: str


class AuthorizationDecision(BaseModel):
    """Which policy rules admitted (or would have refused) a record, readable by a person."""

    model_config = ConfigDict(frozen=True)

    allowed: bool
    outcomes: tuple[RuleOutcome, ...]
    policy_version: str

    def short(self) -> str:
        """The deciding facts only (for tables): ACL, version state, validity."""
        keep = ("acl", "current-version", "applicability", "booking", "property")
        if not self.allowed:
            return self.summary()
        return "allow: " + "; ".join(o.detail for o in self.outcomes if o.rule in keep)

    def summary(self) -> str:
        if self.allowed:
            return "allow: " + "; ".join(o.detail for o in self.outcomes)
        failed = [o for o in self.outcomes if not o.passed]
        return "deny: " + "; ".join(f"{o.rule}: {o.detail}" for o in failed)


class Hit(BaseModel):
    """One result with full provenance."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    doc_id: str
    index: str
    source_version: int
    title: str = ""
    text: str = ""
    sparse_rank: int | None = None
    dense_rank: int | None = None
    sparse_score: float | None = None
    dense_score: float | None = None
    fused_score: float
    rerank_score: float | None = None
    final_rank: int
    fusion_path: FusionPath
    authorization: AuthorizationDecision
    source: dict[str, Any] = Field(default_factory=dict, repr=False)


class SearchResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    query_hash: str
    fusion_path: FusionPath
    fusion_reason: str
    reranked: bool
    rerank_note: str
    hits: tuple[Hit, ...]
    candidates: int
    timings_ms: dict[str, float]
    reranker_inputs: tuple[str, ...] = ()
    """chunk ids handed to the reranker, in order: kept so isolation can be audited."""
    legs: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """chunk ids each leg returned (``sparse``, ``dense``), in rank order."""
    request_digest: str = ""
    """SHA-256 of the request bodies sent (query vector included): equal inputs, equal digest."""
