"""One search, run from the question to the response: the stages in order, each in its span.

prepare -> retrieve -> read the records -> authorize -> rerank -> assemble, as one generator of
effects (``retrieval.effects``) that ``HybridSearcher.search`` runs blocking and
``AsyncHybridSearcher.search`` awaits, so both run this code. The run draws the search's trace id
first (its requests carry it as ``X-Opaque-Id``, the response holds it, an error raised holds it
as ``.trace_id``), times the stages (``SearchResponse.timings``) and reports the outcome to the
hooks and the telemetry (``observers``). The work a runner may move off its thread is yielded as
a computation: a tenant's first prepare (it reads the corpus state and the index's model) and a
cross-encoder that will run.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from hybrid_es import telemetry
from hybrid_es.encoders.reranker import Reranker
from hybrid_es.models import Principal, RequestScope, SearchResponse
from hybrid_es.retrieval import observers
from hybrid_es.retrieval.effects import Compute, Steps
from hybrid_es.retrieval.fusion_choice import fallback_kind
from hybrid_es.retrieval.observers import OnError, OnResponse
from hybrid_es.retrieval.stages import (
    Candidate,
    Reranked,
    Retrieved,
    SearchRequest,
    assemble,
    authorize_stage,
    ms_since,
    rerank_stage,
)


class Stages(Protocol):
    """What a run reads of its searcher (``HybridSearcher``), at each search: a hook attached,
    or a stage replaced, after the searcher was made is followed."""

    @property
    def reranker(self) -> Reranker | None: ...

    @property
    def hash_key(self) -> bytes: ...

    @property
    def on_response(self) -> OnResponse | None: ...

    @property
    def on_error(self) -> OnError | None: ...

    def prepared(self, principal: Principal) -> bool: ...

    def prepare(
        self,
        query: str,
        principal: Principal,
        scope: RequestScope | None,
        top_k: int,
        rerank: bool,
        rerank_depth: int,
        now: datetime | None,
        *,
        trace_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> SearchRequest: ...

    def retrieve_steps(self, req: SearchRequest, timings: dict[str, float]) -> Steps[Retrieved]: ...

    def read_records_steps(
        self, req: SearchRequest, candidates: list[Candidate], timings: dict[str, float]
    ) -> Steps[list[Candidate]]: ...


def search_steps(
    s: Stages,
    query: str,
    principal: Principal,
    scope: RequestScope | None = None,
    *,
    top_k: int = 10,
    rerank: bool = True,
    rerank_depth: int = 50,
    now: datetime | None = None,
    filters: Mapping[str, Any] | None = None,
) -> Steps[SearchResponse]:
    """The search of ``HybridSearcher.search`` (the same arguments), from its trace id to the
    hooks that see its outcome."""
    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    trace_id = uuid.uuid4().hex
    # Stage spans and metrics (``hybrid_es.telemetry``; no-ops without OpenTelemetry). The
    # stages the timings do not hold (prepare, authorize, assemble) are timed for the
    # metrics only, so responses and traces keep their keys.
    staged: dict[str, float] = {}
    path: str | None = None
    with telemetry.span("hybrid_es.search", trace_id=trace_id, top_k=top_k) as root:
        try:
            t = time.perf_counter()
            with telemetry.span("hybrid_es.prepare"):

                def prepare() -> SearchRequest:
                    return s.prepare(
                        query,
                        principal,
                        scope,
                        top_k,
                        rerank,
                        rerank_depth,
                        now,
                        trace_id=trace_id,
                        filters=filters,
                    )

                # A tenant's first search reads its corpus state and the index's model (a
                # blocking computation); later ones only validate and build the filter.
                req = prepare() if s.prepared(principal) else (yield Compute(prepare))
            staged["prepare"] = ms_since(t)
            seen: list[str] = []
            try:
                response = yield from stages_steps(s, req, timings, staged, t_all, seen)
            finally:
                path = seen[0] if seen else None
        except Exception as exc:
            observers.search_failed(
                exc,
                trace_id=trace_id,
                principal=principal,
                query=query,
                on_error=s.on_error,
                timings=timings,
                staged=staged,
                path=path,
            )
            raise
        observers.search_answered(root, response, timings, staged)
    if s.on_response is not None:
        observers.notify(s.on_response, principal, response, req.text)
    return response


def stages_steps(
    s: Stages,
    req: SearchRequest,
    timings: dict[str, float],
    staged: dict[str, float],
    t_all: float,
    seen: list[str],
) -> Steps[SearchResponse]:
    """retrieve -> read the records -> authorize -> rerank -> assemble, each in its span;
    ``seen`` gets the fusion path once the legs have run (for the error metrics)."""
    with telemetry.span("hybrid_es.retrieve") as sp:
        retrieved = yield from s.retrieve_steps(req, timings)
        seen.append(retrieved.path)
        sp.set(fusion_path=retrieved.path, fallback=fallback_kind(retrieved.path, retrieved.reason))
    with telemetry.span("hybrid_es.read_records") as sp:
        retrieved.candidates = yield from s.read_records_steps(req, retrieved.candidates, timings)
        sp.set(candidates=len(retrieved.candidates))
    t = time.perf_counter()
    with telemetry.span("hybrid_es.authorize"):
        authorized = authorize_stage(req, retrieved.candidates)
    staged["authorize"] = ms_since(t)
    with telemetry.span("hybrid_es.rerank", reranker=s.reranker is not None):
        reranker = s.reranker

        def rerank() -> Reranked:
            return rerank_stage(req, authorized, reranker, timings)

        # Only a cross-encoder that will run is a computation to hand off.
        reranked = (yield Compute(rerank)) if req.rerank and reranker else rerank()
    t = time.perf_counter()
    timings["total"] = ms_since(t_all)
    with telemetry.span("hybrid_es.assemble"):
        response = assemble(req, retrieved, authorized, reranked, timings, s.hash_key)
    staged["assemble"] = ms_since(t)
    return response
