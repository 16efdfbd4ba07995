"""A caller's records without a query, as the searcher lists them (``HybridSearcher.records``
and ``count_records``).

The searcher's side of a listing: the caller's metadata filter is translated (FilterError before
any request), the tenant's corpus is looked up (a tenant with none lists nothing, where a search
raises UnknownTenantError), an index whose policy fields are mapped otherwise than the chunks
template is refused (once per index, as for a search), a filter on a field the index does not map
is refused, and the policy filter is built exactly as for a search, with the caller's filter
inside it. The body and its
read through the chunks door are ``records``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import UnknownTenantError
from hybrid_es.metadata_fields import FilterableField
from hybrid_es.models import Principal, Record, RequestScope
from hybrid_es.retrieval import records as records_mod
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.filters import translate_filter
from hybrid_es.retrieval.index_checks import IndexChecks
from hybrid_es.retrieval.policy import policy_filter


class Lister(Protocol):
    """What a listing reads of its searcher (``HybridSearcher``), at each call: a field declared
    filterable after the searcher was made is followed."""

    @property
    def client(self) -> Engine: ...

    @property
    def door(self) -> ChunksDoor: ...

    @property
    def corpus_state(self) -> CorpusState: ...

    @property
    def checks(self) -> IndexChecks: ...

    @property
    def filterable_fields(self) -> Sequence[FilterableField]: ...

    def index_for(self, principal: Principal) -> str: ...


def list_records(
    s: Lister,
    principal: Principal,
    *,
    filters: Mapping[str, Any] | None = None,
    scope: RequestScope | None = None,
    doc_ids: Sequence[str] | None = None,
    chunk_ids: Sequence[str] | None = None,
    limit: int = 1000,
    now: datetime | None = None,
) -> list[Record]:
    """Every record ``principal`` may read now that matches ``filters`` and, when given, the
    document or chunk ids, ordered by document id and chunk number (``records.read``)."""
    scoped = listing_scope(s, principal, filters, scope, now)
    if scoped is None:
        return []
    index, policy = scoped
    body = records_mod.listing_body(policy, doc_ids=doc_ids, chunk_ids=chunk_ids)
    return records_mod.read(s.door, index, policy, body, limit)


def count_records(
    s: Lister,
    principal: Principal,
    *,
    filters: Mapping[str, Any] | None = None,
    scope: RequestScope | None = None,
    now: datetime | None = None,
) -> int:
    """How many records :func:`list_records` would list (without a limit)."""
    scoped = listing_scope(s, principal, filters, scope, now)
    if scoped is None:
        return 0
    index, policy = scoped
    return records_mod.count(s.door, index, policy, records_mod.listing_body(policy))


def listing_scope(
    s: Lister,
    principal: Principal,
    filters: Mapping[str, Any] | None,
    scope: RequestScope | None,
    now: datetime | None,
) -> tuple[str, dict[str, Any]] | None:
    """The caller's index and policy (the filter inside it), or None for a tenant with no
    corpus yet: it has nothing to list."""
    narrowing = translate_filter(filters, s.filterable_fields)
    try:
        s.corpus_state.watermark(principal.tenant)
    except UnknownTenantError:
        return None
    index = s.index_for(principal)
    s.checks.check_policy_fields(s.client, index)
    if narrowing is not None:
        s.checks.check_filter_mapped(s.client, index, filters, s.filterable_fields)
    now = now or datetime.now(UTC)
    return index, policy_filter(principal, scope or RequestScope(), now, narrowed_by=narrowing)
