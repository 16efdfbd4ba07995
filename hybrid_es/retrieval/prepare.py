"""The first stage of a search: the request checked, the caller's index found and checked, the
policy filter built once.

Everything a search is refused for on its input is refused here, before any request is sent:
a caller that is no :class:`~hybrid_es.models.Principal` (PolicyViolationError), limits out of
range or a query that cleans to nothing (BadQueryError), a metadata filter that is malformed or
names an undeclared field (FilterError). A tenant's first search also reads its corpus state
(UnknownTenantError for a tenant with no corpus) and checks its chunks index once (its
embedding model, its policy fields' types: ``index_checks``); later searches of the same tenant
send nothing here, unless a filter names a field the index's mapping may lack.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from hybrid_es.errors import BadQueryError, PolicyViolationError
from hybrid_es.models import Principal, RequestScope, SearchRequest
from hybrid_es.retrieval.context import SearchContext
from hybrid_es.retrieval.filters import translate_filter
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import clean_query
from hybrid_es.retrieval.stages import Prepared

MAX_TOP_K = 100
"""The most hits one search returns."""


def known(ctx: SearchContext, principal: Principal) -> bool:
    """Whether this caller's tenant and index were checked before: :func:`prepare` then sends
    no request (so a runner need not move it off its thread)."""
    index = ctx.index_for(principal)
    return principal.tenant in ctx.known_tenants and index in ctx.checks.model_checked


def prepare(ctx: SearchContext, request: SearchRequest, trace_id: str | None = None) -> Prepared:
    """``request`` validated, its caller's tenant and index checked, its policy filter built
    (the caller's ``filters`` inside it). ``trace_id`` (default: a new one) is the search's,
    sent as ``X-Opaque-Id``. Raises as the module docstring says."""
    principal = request.principal
    if not isinstance(principal, Principal):
        got = "none" if principal is None else type(principal).__name__
        raise PolicyViolationError(
            f"a search needs the caller's hybrid_es.Principal (got {got})",
            hint="build the Principal from your application's authenticated context",
        )
    if not 1 <= request.top_k <= MAX_TOP_K:
        raise BadQueryError(f"top_k must be 1..{MAX_TOP_K}, got {request.top_k}")
    window = ctx.params.window
    if not 1 <= request.rerank_depth <= window:
        raise BadQueryError(
            f"rerank_depth must be 1..{window} (the fusion window), got {request.rerank_depth}"
        )
    text = clean_query(request.question, ctx.params.max_query_chars)
    narrowing = translate_filter(request.filters, ctx.filterable_fields)
    scope = request.scope or RequestScope()
    now = request.now or datetime.now(UTC)
    index = ctx.index_for(principal)
    if principal.tenant not in ctx.known_tenants:
        ctx.corpus_state.watermark(principal.tenant)  # UnknownTenantError if it has none
        ctx.known_tenants.add(principal.tenant)
    ctx.checks.check_model(ctx.client, ctx.door, index, principal, ctx.embedders)
    if narrowing is not None:
        ctx.checks.check_filter_mapped(ctx.client, index, request.filters, ctx.filterable_fields)
    return Prepared(
        text=text,
        principal=principal,
        scope=scope,
        now=now,
        top_k=request.top_k,
        rerank=request.rerank,
        rerank_depth=request.rerank_depth,
        index=index,
        policy=policy_filter(principal, scope, now, narrowed_by=narrowing),
        trace_id=trace_id or uuid.uuid4().hex,
    )
