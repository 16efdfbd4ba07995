"""The retrieve stage: both legs (and the native fusion where the cluster runs it) in one
``_msearch``, fused.

A generator of effects (``retrieval.effects``) over the search's context (``context``): the
query is embedded (a :class:`~hybrid_es.retrieval.effects.Compute`), the bodies (``legs``) go out
in one :class:`~hybrid_es.retrieval.effects.Msearch` and the answers are fused (``candidates``).
The decisions taken at query time are named in the response's ``fusion_reason``
(``fusion.fallback_kind`` reads them back for the metrics and dashboards):

- the path (``fusion.choose_path``), narrowed to the BM25 leg alone when the index's
  embedder was not trained on the query's script (:func:`script_gate`);
- with fusion ``auto``, a native fusion the cluster refuses at query time is fused client-side,
  and this searcher does not try it again (``fusion.FusionFindings``);
- OpenSearch's ``hybrid`` query refused for a user under document-level security is sent again
  with the suggest workaround (neural-search#1303), used from then on;
- a native fusion over several shards, on an engine that fuses per shard (OpenSearch 2.19), is
  replaced by the client-side fusion of the global legs (``fusion.per_shard``).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from hybrid_es import telemetry
from hybrid_es.cluster.capabilities import fuses_per_shard
from hybrid_es.cluster.generations import current
from hybrid_es.encoders.embedder import Embedder, covers, ensure_loaded, needs_loading
from hybrid_es.errors import CapabilityMissingError, EngineError
from hybrid_es.models import FusionPath
from hybrid_es.retrieval import fusion as fusion_mod
from hybrid_es.retrieval.answers import HybridUnderDls
from hybrid_es.retrieval.candidates import fuse_legs
from hybrid_es.retrieval.context import SearchContext
from hybrid_es.retrieval.effects import Compute, Msearch, Steps
from hybrid_es.retrieval.fusion import choose_path, client_side, per_shard
from hybrid_es.retrieval.head_read import legs_carry_records
from hybrid_es.retrieval.legs import Bodies, leg_answers, leg_bodies, searches, truncated_legs
from hybrid_es.retrieval.stages import Prepared, Retrieved, ms_since


def fusion_path(ctx: SearchContext) -> tuple[FusionPath, str]:
    """The path a search takes before it has seen its query, and why (``fusion``)."""
    probe = partial(ctx.found.native_probe, ctx.client)
    return choose_path(ctx.pipeline, ctx.fusion, ctx.fusion_method, ctx.alpha, probe)


def script_gate(
    path: FusionPath, reason: str, embedder: Embedder, text: str
) -> tuple[FusionPath, str]:
    """``path`` and ``reason``, or the BM25 leg alone when a path with a dense leg meets a
    query in a script ``embedder`` was not trained on (``encoders.embedder.covers``)."""
    if path in ("bm25-only", "dense-only"):
        return path, reason
    covered, script = covers(embedder, text)
    if covered:
        return path, reason
    return "bm25-only", (
        f"the embedder {embedder.model_id} was not trained on {script} text: "
        "the BM25 leg alone answers"
    )


def retrieve_steps(
    ctx: SearchContext, req: Prepared, timings: dict[str, float]
) -> Steps[Retrieved]:
    """Both legs (and the native fusion where it runs) in one round trip, fused; a native
    fusion refused at query time under fusion ``auto`` is fused client-side instead."""
    path, reason = fusion_path(ctx)
    embedder = ctx.embedder_for(req.index)
    path, reason = script_gate(path, reason, embedder, req.text)
    vector = None
    if path != "bm25-only":
        vector = yield from embed_steps(ctx, req, embedder, timings)
    try:
        retrieved = yield from legs_steps(ctx, path, reason, vector, req, timings)
    except CapabilityMissingError:
        if ctx.fusion != "auto" or not path.startswith("native"):
            raise
        ctx.found.refused(ctx.fusion_method)
        reason = "auto: native fusion refused at query time, fused client-side"
        retrieved = yield from legs_steps(ctx, client_side(path), reason, vector, req, timings)
    retrieved.truncated = truncated_legs(req.text, path, ctx.params.max_query_terms, embedder)
    retrieved.embedder = embedder.model_id if vector is not None else None
    return retrieved


def embed_steps(
    ctx: SearchContext, req: Prepared, embedder: Embedder, timings: dict[str, float]
) -> Steps[list[float]]:
    """The query's vector by ``embedder`` (``timings['embed']``); a first load of the model is
    timed apart (``timings['model_load']``)."""
    if needs_loading(embedder):
        loaded = yield Compute(lambda: ensure_loaded(embedder))
        timings["model_load"] = round(timings.get("model_load", 0.0) + loaded, 3)
    t = time.perf_counter()
    with telemetry.span("hybrid_es.embed"):
        vector: list[float] = yield Compute(
            lambda: ctx.vectors.vector(req.principal.tenant, req.text, embedder)
        )
    timings["embed"] = ms_since(t)
    return vector


def legs_steps(
    ctx: SearchContext,
    path: FusionPath,
    reason: str,
    vector: list[float] | None,
    req: Prepared,
    timings: dict[str, float],
) -> Steps[Retrieved]:
    """The legs of ``path`` in one ``_msearch`` (``timings['retrieval']``), fused
    (``timings['fusion']``)."""
    legs, native = bodies(ctx, path, vector, req)
    t = time.perf_counter()
    db = telemetry.db_attributes(ctx.client, "msearch", req.index)
    with telemetry.span("hybrid_es.legs", db, fusion_path=path, legs=len(legs)):
        try:
            responses, digest = yield Msearch(searches(legs, native), req)
        except EngineError as exc:
            # A vector of another size than the index's: the alias may have moved to a new
            # generation of another model since it was checked (``GenerationMoved``).
            if exc.status == 400 and moved_on(ctx, req.index):
                raise GenerationMoved(req.index) from exc
            raise
        except HybridUnderDls:
            # OpenSearch 2.19 refuses a hybrid query for a document-level-security user
            # (neural-search#1303); a suggest section is the known workaround, and DLS still
            # holds (tests/security/test_opensearch_dls.py proves both). Used from now on.
            ctx.found.dls_suggest = True
            legs, native = bodies(ctx, path, vector, req)
            responses, digest = yield Msearch(searches(legs, native), req)
    timings["retrieval"] = ms_since(t)
    seen = {str(h.get("_index")) for r in responses for h in r.get("hits", {}).get("hits", [])}
    if ctx.checks.moved(req.index, seen):
        raise GenerationMoved(req.index)
    answers = leg_answers(list(legs), responses, native is not None)
    path, reason, fused = shard_check(ctx, path, reason, answers.fused)
    t = time.perf_counter()
    with telemetry.span("hybrid_es.fusion", fusion_path=path) as sp:
        candidates, weight = fuse_legs(
            path,
            answers.sparse,
            answers.dense,
            fused,
            alpha=ctx.alpha,
            rank_constant=ctx.params.rank_constant,
            window=ctx.params.window,
        )
        sp.set(candidates=len(candidates))
    timings["fusion"] = ms_since(t)
    return Retrieved(path, reason, candidates, answers.ids(), digest, dense_weight=weight)


class GenerationMoved(Exception):
    """The search's index moved to another generation (``cluster.generations``) after it was
    checked: its model and mapping must be checked again, and the search run once more
    (``search_run``). Never leaves the search."""

    def __init__(self, index: str) -> None:
        super().__init__(index)
        self.index = index


def moved_on(ctx: SearchContext, index: str) -> bool:
    """Whether ``index`` now points at another generation than the one its check saw."""
    behind = ctx.checks.physical_of.get(index)
    if behind is None:
        return False
    live = current(ctx.client, index)
    return live is not None and live.index not in behind


def bodies(
    ctx: SearchContext, path: FusionPath, vector: list[float] | None, req: Prepared
) -> tuple[Bodies, dict[str, Any] | None]:
    """The legs' bodies and the native fusion's (``legs.leg_bodies``), as the context sends
    them now."""
    return leg_bodies(
        ctx.dialect,
        path,
        vector,
        req,
        ctx.params,
        alpha=fusion_mod.fixed_alpha(ctx.alpha),
        rank_constant_at=ctx.client.rrf_rank_constant_at or "parameters",
        dls_workaround=ctx.found.dls_suggest,
        carry_records=legs_carry_records(req, ctx.reranker is not None, ctx.params.window),
    )


def shard_check(
    ctx: SearchContext, path: FusionPath, reason: str, fused: dict[str, Any] | None
) -> tuple[FusionPath, str, dict[str, Any] | None]:
    """The path, reason and native answer to fuse with: on an engine that fuses per shard, a
    native answer over several shards is set aside (``auto``) or kept and said (``native``)."""
    if fused is None or not fuses_per_shard(ctx.client):
        return path, reason, fused
    shards = int(fused.get("_shards", {}).get("total", 1))
    if shards <= 1:
        return path, reason, fused
    path, reason = per_shard(path, reason, shards, ctx.fusion)
    return path, reason, (fused if path.startswith("native") else None)
