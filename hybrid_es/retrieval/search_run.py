"""One search, run from the question to the response: the stages in order, each in its span.

prepare -> retrieve -> read the records -> authorize -> rerank -> assemble, as one generator of
effects (``retrieval.effects``) that ``HybridSearcher.search`` runs blocking and
``AsyncHybridSearcher.search`` awaits, so both run this code. Every stage takes the search's
context (``context.SearchContext``: the searcher's configuration when the search started) and the
request, and nothing calls back into the searcher. The run draws the search's trace id
first (its requests carry it as ``X-Opaque-Id``, the response holds it, an error raised holds it
as ``.trace_id``), times the stages (``SearchResponse.timings``) and reports the outcome to the
hooks and the telemetry (``observers``). The work a runner may move off its thread is yielded as
a computation: a tenant's first prepare (it reads the corpus state and the index's model) and a
cross-encoder that will run.
"""

from __future__ import annotations

import time
import uuid

from hybrid_es import telemetry
from hybrid_es.models import SearchRequest, SearchResponse
from hybrid_es.retrieval import head_read, observers
from hybrid_es.retrieval.context import SearchContext
from hybrid_es.retrieval.effects import Compute, Steps
from hybrid_es.retrieval.fusion import fallback_kind
from hybrid_es.retrieval.prepare import known, prepare
from hybrid_es.retrieval.retrieve import GenerationMoved, retrieve_steps
from hybrid_es.retrieval.stages import (
    Prepared,
    Reranked,
    assemble,
    authorize_stage,
    ms_since,
    rerank_stage,
)


def search_steps(ctx: SearchContext, request: SearchRequest) -> Steps[SearchResponse]:
    """The search of ``HybridSearcher.search``, from its trace id to the hooks that see its
    outcome."""
    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    trace_id = uuid.uuid4().hex
    # Stage spans and metrics (``hybrid_es.telemetry``; no-ops without OpenTelemetry). The
    # stages the timings do not hold (prepare, authorize, assemble) are timed for the
    # metrics only, so responses and traces keep their keys.
    staged: dict[str, float] = {}
    path: str | None = None
    principal = request.principal
    db = telemetry.db_attributes(ctx.client, "search", ctx.index_for(principal))
    with telemetry.span("hybrid_es.search", db, trace_id=trace_id, top_k=request.top_k) as root:
        try:
            t = time.perf_counter()
            with telemetry.span("hybrid_es.prepare"):

                def prepared() -> Prepared:
                    return prepare(ctx, request, trace_id)

                # A tenant's first search reads its corpus state and the index's model (a
                # blocking computation); later ones only validate and build the filter.
                req = prepared() if known(ctx, principal) else (yield Compute(prepared))
            staged["prepare"] = ms_since(t)
            seen: list[str] = []
            try:
                try:
                    response = yield from stages_steps(ctx, req, timings, staged, t_all, seen)
                except GenerationMoved as moved:
                    # The index moved to its next generation (a rebuild switched it) after it
                    # was checked: check it again (its model may have changed) and search again,
                    # once. What the first try read is dropped whole.
                    ctx.checks.forget(moved.index)
                    seen.clear()
                    req = yield Compute(prepared)
                    response = yield from stages_steps(ctx, req, timings, staged, t_all, seen)
            finally:
                path = seen[0] if seen else None
        except Exception as exc:
            observers.search_failed(
                exc,
                trace_id=trace_id,
                principal=principal,
                query=request.question,
                on_error=ctx.on_error,
                timings=timings,
                staged=staged,
                path=path,
            )
            raise
        observers.search_answered(root, response, timings, staged)
    if ctx.on_response is not None:
        observers.notify(ctx.on_response, principal, response, req.text)
    return response


def stages_steps(
    ctx: SearchContext,
    req: Prepared,
    timings: dict[str, float],
    staged: dict[str, float],
    t_all: float,
    seen: list[str],
) -> Steps[SearchResponse]:
    """retrieve -> read the records -> authorize -> rerank -> assemble, each in its span;
    ``seen`` gets the fusion path once the legs have run (for the error metrics)."""
    with telemetry.span("hybrid_es.retrieve") as sp:
        retrieved = yield from retrieve_steps(ctx, req, timings)
        seen.append(retrieved.path)
        sp.set(fusion_path=retrieved.path, fallback=fallback_kind(retrieved.path, retrieved.reason))
    with telemetry.span("hybrid_es.read_records") as sp:
        reranks = ctx.reranker is not None
        retrieved.candidates = yield from head_read.read_head_steps(
            req,
            retrieved.candidates,
            timings,
            size=head_read.head_size(req, reranks),
            carried=head_read.legs_carry_records(req, reranks, ctx.params.window),
        )
        sp.set(candidates=len(retrieved.candidates))
    t = time.perf_counter()
    with telemetry.span("hybrid_es.authorize"):
        authorized = authorize_stage(req, retrieved.candidates)
    staged["authorize"] = ms_since(t)
    with telemetry.span("hybrid_es.rerank", reranker=ctx.reranker is not None):
        reranker = ctx.reranker

        def rerank() -> Reranked:
            return rerank_stage(req, authorized, reranker, timings)

        # Only a cross-encoder that will run is a computation to hand off.
        reranked = (yield Compute(rerank)) if req.rerank and reranker else rerank()
    t = time.perf_counter()
    timings["total"] = ms_since(t_all)
    with telemetry.span("hybrid_es.assemble"):
        response = assemble(req, retrieved, authorized, reranked, timings, ctx.hash_key)
    staged["assemble"] = ms_since(t)
    return response
