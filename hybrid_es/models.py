"""Typed values shared across the package: who asks, what the question is about, what comes back.

Principals come from the authenticated context handed to the searcher, never from query text.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import date, datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

FusionPath = Literal[
    "native-rrf", "native-linear", "client-rrf", "client-linear", "bm25-only", "dense-only"
]
Pipeline = Literal["hybrid", "bm25", "dense"]

EVERYONE = "*"
"""ACL group meaning every user of the document's tenant."""


TENANT_PATTERN = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?"
"""A tenant id: 1-64 ASCII letters, digits, ``.``, ``_`` or ``-``, starting and ending
alphanumeric. It must match the whole value (``re.fullmatch``: a trailing newline is not "the
end"); :func:`check_tenant` is the one check, used by the library, the CLI and bootstrap.

The tenant is part of every stored identity (chunk and packet ids, index names in the
index-per-tenant layout, role names), so it must never contain the separators those use."""
MAX_TENANT_CHARS = 64
MAX_ID_BYTES = 256
"""Limit on a user, document, case or group id, in UTF-8 bytes: with the tenant prefix and the
version and chunk suffixes, a stored ``_id`` stays under Elasticsearch's 512 bytes."""
OPERATOR_ROLE = "hybrid-es-operator"
"""A principal with this role may read every tenant's traces (operations staff, not end users)."""
WRITER_ROLE = "hybrid-es-writer"
"""A principal with this role is its tenant's writer (an ingest service identity): it may create,
replace and delete any document of its tenant, with any ACL. Everyone else is a member and writes
under the member's rule (``hybrid_es.ingest.authority``)."""

_TENANT = re.compile(TENANT_PATTERN)
_REFUSED_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
"""Unicode categories an id may not contain: controls (NUL, CR, LF, U+0085 NEXT LINE), format
characters (bidi overrides, zero-width joiners), surrogates, private-use and unassigned code
points, and the line and paragraph separators U+2028 and U+2029."""


def check_id(value: str, what: str = "id") -> str:
    """``value`` if it is a usable user, group, role, document or case id, else ValueError saying
    which rule it breaks and what to do.

    An id is non-empty text without surrounding whitespace, with no character of
    :data:`_REFUSED_CATEGORIES` (so no line break of any kind and no NUL anywhere), in Unicode
    NFC form, and at most :data:`MAX_ID_BYTES` in UTF-8. Any script is allowed (ids are names
    of people, files and contracts) and ids are compared code point by code point, so a
    lookalike (Cyrillic U+0430 for Latin ``a``) is another id and matches nothing of the one it
    imitates. NFC is required rather than applied: two spellings of the same visible text
    (``é`` as one code point or as ``e`` + U+0301) would otherwise be two ids, and a document's
    ACL would silently fail to name the user it shows; normalising silently would instead merge
    ids that the source keeps apart."""
    if not isinstance(value, str) or not value or value != value.strip():
        raise ValueError(f"{what} must be non-empty text without surrounding whitespace")
    bad = next((c for c in value if unicodedata.category(c) in _REFUSED_CATEGORIES), None)
    if bad is not None:
        raise ValueError(
            f"{what} must not contain control characters, line breaks or invisible format "
            f"characters (it holds U+{ord(bad):04X}, {unicodedata.category(bad)})"
        )
    if not unicodedata.is_normalized("NFC", value):
        raise ValueError(
            f"{what} is not in Unicode NFC form: give it as "
            f"{unicodedata.normalize('NFC', value)!r} (unicodedata.normalize('NFC', ...))"
        )
    size = len(value.encode("utf-8"))
    if size > MAX_ID_BYTES:
        raise ValueError(f"{what} is {size} bytes in UTF-8; the limit is {MAX_ID_BYTES}")
    return value


def check_tenant(value: str) -> str:
    """``value`` if it is a valid tenant id (the whole of it matches :data:`TENANT_PATTERN`),
    else ValueError saying what a tenant id may hold."""
    if not isinstance(value, str) or _TENANT.fullmatch(value) is None:
        raise ValueError(
            f"tenant {value!r} is not a valid tenant id: use 1-{MAX_TENANT_CHARS} ASCII letters, "
            "digits, '.', '_' or '-', starting and ending with a letter or digit, and nothing "
            "else (no spaces or line breaks)"
        )
    return value


class Principal(BaseModel):
    """The authenticated caller: who asks, for which tenant, with which grants.

    It comes from the application's authenticated context, never from query text. Every
    operation of the library takes one and checks it before it reads or writes anything.

    ``scope_version`` names the state of the caller's grants; packets record it and are
    refreshed when it changes. Left empty, it is derived from the grants themselves (a digest of
    the groups and roles), so losing or gaining a group changes it without anyone having to
    remember to bump a number. An application whose identity provider versions grants may pass
    its own value instead.
    """

    model_config = ConfigDict(frozen=True)

    tenant: str
    user_id: str
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    scope_version: str = ""

    @field_validator("tenant")
    @classmethod
    def _tenant_ok(cls, v: str) -> str:
        return check_tenant(v)

    @field_validator("user_id")
    @classmethod
    def _user_ok(cls, v: str) -> str:
        return check_id(v, "user id")

    @field_validator("groups", "roles")
    @classmethod
    def _names_ok(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for g in v:
            check_id(g, "group or role")
        return v

    @model_validator(mode="after")
    def _derive_scope_version(self) -> Principal:
        if not self.scope_version:
            grants = json.dumps([sorted(set(self.groups)), sorted(set(self.roles))])
            digest = hashlib.sha256(grants.encode()).hexdigest()[:12]
            object.__setattr__(self, "scope_version", f"grants-{digest}")
        return self

    @property
    def is_operator(self) -> bool:
        return OPERATOR_ROLE in self.roles

    @property
    def is_writer(self) -> bool:
        """Whether this principal holds its tenant's writer role (:data:`WRITER_ROLE`)."""
        return WRITER_ROLE in self.roles


_SCOPE_IDS = {
    "booking_ids": "booking id",
    "property_ids": "property id",
    "source_types": "source type",
    "jurisdictions": "jurisdiction",
}


class RequestScope(BaseModel):
    """What the question is about. Applicability rules read this, never the query text.

    ``as_of`` is a single date; ``stay_from``/``stay_to`` a date range (a stay). With neither, the
    question is about ``now``. ``historical`` admits superseded versions (change comparisons,
    "what did the old contract say").

    Booking, property, source type and jurisdiction values are ids (:func:`check_id`) and are
    compared exactly, code point by code point, with what a document stores: ``bk-1`` does not
    reach a record of booking ``BK-1``. They decide which records a caller may read, so the
    engine's clause and the Python re-check must not differ on what matches (``policy``).
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

    @field_validator("booking_ids", "property_ids", "source_types", "jurisdictions")
    @classmethod
    def _scope_ids_ok(cls, v: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        what = _SCOPE_IDS[info.field_name or ""]
        for value in v:
            check_id(value, what)
        return v

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


@dataclass(frozen=True)
class SearchRequest:
    """One search, as one value: what is asked, by whom, about what, and how much to return.

    The blocking and the async searcher take it (``searcher.search(SearchRequest(...))``), and
    so does everything that hands a search on (adapters, evaluation, the CLI), so the options of
    a search are written here once. ``question``: the user's text; ``principal``: the caller
    from the application's authenticated context; ``scope``: the request scope (None: a question
    about now); ``filters``: a narrowing in the neutral filter grammar
    (``retrieval.filters``); ``top_k``: hits returned (1-100); ``rerank``: whether the
    cross-encoder, where there is one, reorders the fused head of ``rerank_depth`` candidates;
    ``now``: the moment the policy is evaluated at (None: the clock's). Checked when the search
    runs (BadQueryError, FilterError), not when it is made."""

    question: str
    principal: Principal
    scope: RequestScope | None = None
    filters: Mapping[str, Any] | None = None
    top_k: int = 10
    rerank: bool = True
    rerank_depth: int = 50
    now: datetime | None = None

    @classmethod
    def of(
        cls,
        request: SearchRequest | str,
        principal: Principal | None = None,
        scope: RequestScope | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> SearchRequest:
        """``request`` itself, or the request a question, its caller, scope and keyword options
        make (the searchers' shorthand ``search(question, principal, scope, top_k=5)``). Raises
        TypeError for an option a search does not have, or a request given with more."""
        if isinstance(request, SearchRequest):
            if principal is not None or scope is not None or options:
                raise TypeError("give a SearchRequest alone, or a question with its options")
            return request
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options or {}) - known)
        if unknown:
            raise TypeError(f"search() got unexpected keyword(s): {', '.join(unknown)}")
        return cls(request, principal, scope, **(options or {}))  # type: ignore[arg-type]


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


class Record(BaseModel):
    """One stored chunk as its caller may read it now, unscored (``HybridSearcher.records``):
    what a framework store lists, counts and fetches by id."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    doc_id: str
    chunk_no: int
    index: str
    source_version: int
    title: str = ""
    text: str = ""
    """The chunk's text as written (no contextual header)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The document's own metadata, as the writer gave it."""
    source: dict[str, Any] = Field(default_factory=dict, repr=False)
    """The stored record (``_source``), without the embedding."""


class SearchResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    query_hash: str
    fusion_path: FusionPath
    fusion_reason: str
    reranked: bool
    rerank_note: str
    hits: tuple[Hit, ...]
    candidates: int
    """The fused candidates whose records were read and re-checked: the head the later stages
    use (the hits asked for, or the rerank pool); the legs return ids and scores only."""
    timings_ms: dict[str, float]
    reranker_inputs: tuple[str, ...] = ()
    """chunk ids handed to the reranker, in order: kept so isolation can be audited."""
    legs: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """chunk ids each leg returned (``sparse``, ``dense``), in rank order."""
    request_digest: str = ""
    """SHA-256 of the request bodies sent (query vector included): equal inputs, equal digest."""
    trace_id: str = ""
    """The search's trace id, drawn before its first request: the ``X-Opaque-Id`` its requests
    carried (the cluster's slow log and tasks API show it) and the id of its trace."""
    embedder: str | None = None
    """The model that embedded the query: the one the searched index records (with
    ``HYBRID_ES_EMBEDDER=auto``, chosen per index at its first ingest); None when no dense leg
    ran (BM25 alone, or the script gate)."""
    dense_weight: float | None = None
    """The dense leg's weight in this search's linear fusion: the configured one, or the one the
    spread rule chose from the legs' scores (``HYBRID_ES_FUSION_ALPHA``); None for RRF or one
    leg alone."""
    truncated: tuple[str, ...] = ()
    """The legs that read only the start of a long query: ``sparse`` (its first
    ``max_query_terms`` terms, ``HYBRID_ES_MAX_QUERY_TERMS``) and ``dense`` (the embedder's
    token window). Empty for a query read whole."""
