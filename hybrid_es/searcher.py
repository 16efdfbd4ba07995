"""Executing a hybrid search: policy filter, both legs, fusion (native or client-side), rerank.

The I/O edge of retrieval. Bodies come from ``queries``, fusion from ``fusion``, the filter and
authorization decisions from ``policy``. Every body is checked by ``assert_policy`` before it is
sent, and every candidate is re-checked against the same rules before it can reach the reranker.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from elasticsearch import ApiError, Elasticsearch

from hybrid_es import fusion as fusion_mod
from hybrid_es.capabilities import _retriever_works
from hybrid_es.corpus_state import CorpusState
from hybrid_es.embedder import Embedder
from hybrid_es.errors import (
    BadQueryError,
    CapabilityMissingError,
    HybridEsError,
    ModelError,
    PolicyViolationError,
    SearchTimeoutError,
    from_error_body,
    translate_es_error,
)
from hybrid_es.models import (
    FusionPath,
    Hit,
    Pipeline,
    Principal,
    RequestScope,
    SearchResponse,
)
from hybrid_es.policy import authorize, policy_filter
from hybrid_es.queries import (
    RetrievalParams,
    assert_policy,
    clean_query,
    knn_retriever,
    rrf_retriever,
    search_body,
    standard_retriever,
)
from hybrid_es.reranker import CrossEncoderReranker, rerank_passage

FusionMode = Literal["auto", "native", "client"]
FusionMethod = Literal["rrf", "linear"]
MAX_TOP_K = 100

OnResponse = Callable[[Principal, SearchResponse, str], None]
"""Called with the caller, the response and the cleaned query text (e.g. ``traces.search_hook``)."""
OnError = Callable[[Principal, object, BaseException, dict[str, float]], None]
"""Called with the caller, the raw query, the error and the stage timings taken so far."""

log = logging.getLogger(__name__)


def query_hash(text: str) -> str:
    """What traces keep instead of the query text."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class _Candidate:
    chunk_id: str
    index: str
    source: dict[str, Any]
    fused: float
    sparse_rank: int | None = None
    dense_rank: int | None = None
    sparse_score: float | None = None
    dense_score: float | None = None


class HybridSearcher:
    """Hybrid search for one chunks index.

    ``client`` may be a caller-scoped client (an API key or user bound by document-level
    security); the policy filter is applied on top of it in every case.
    """

    def __init__(
        self,
        client: Elasticsearch,
        embedder: Embedder,
        *,
        index: str = "hybrid-es-chunks",
        reranker: CrossEncoderReranker | None = None,
        fusion: FusionMode = "auto",
        params: RetrievalParams | None = None,
        native_rrf: bool | None = None,
        url: str = "",
        corpus_state_index: str = "hybrid-es-corpus-state",
        pipeline: Pipeline = "hybrid",
        fusion_method: FusionMethod = "rrf",
        alpha: float = 0.6,
        on_response: OnResponse | None = None,
        on_error: OnError | None = None,
    ) -> None:
        self.client = client
        self.embedder = embedder
        self.index = index
        self.reranker = reranker
        self.fusion = fusion
        self.params = params or RetrievalParams()
        self._native_rrf = native_rrf
        self.url = url
        self.on_response = on_response
        self.on_error = on_error
        self._model_checked = False
        self._known_tenants: set[str] = set()
        if not 0.0 <= alpha <= 1.0:
            raise BadQueryError(
                f"alpha (the dense weight of linear fusion) must be in [0, 1]: {alpha}"
            )
        self.pipeline = pipeline
        self.fusion_method = fusion_method
        self.alpha = alpha
        self.corpus_state = CorpusState(client, corpus_state_index)

    # -- capability and model checks ---------------------------------------------------------

    def native_rrf_available(self) -> bool:
        if self._native_rrf is None:
            self._native_rrf, _ = _retriever_works(self.client, "rrf")
        return self._native_rrf

    def _path(self) -> tuple[FusionPath, str]:
        if self.pipeline == "bm25":
            return "bm25-only", "BM25 leg only (evaluation pipeline)"
        if self.pipeline == "dense":
            return "dense-only", "kNN leg only (evaluation pipeline)"
        if self.fusion_method == "linear":
            return "client-linear", f"min-max linear fusion, dense weight {self.alpha}"
        if self.fusion == "client":
            return "client-rrf", "client-side fusion requested"
        native = self.native_rrf_available()
        if self.fusion == "native":
            if not native:
                raise CapabilityMissingError(
                    "native rrf was requested but the cluster has no usable rrf retriever",
                    hint="use fusion='auto' or 'client' (Basic licence or no rank-rrf module)",
                )
            return "native-rrf", "native rrf requested"
        if native:
            return "native-rrf", "auto: the cluster runs the rrf retriever"
        return "client-rrf", "auto: no native rrf retriever (licence or module), fused client-side"

    def check_model(self) -> None:
        """Refuse to search an index whose vectors came from another model or dimension."""
        if self._model_checked:
            return
        try:
            resp = self.client.indices.get_mapping(index=self.index)
        except ApiError as exc:
            if exc.meta.status == 403:  # a reader key may not see mappings; ES checks dims itself
                self._model_checked = True
                return
            raise translate_es_error(exc, url=self.url, what=f"reading {self.index}") from exc
        except Exception as exc:
            raise translate_es_error(exc, url=self.url, what=f"reading {self.index}") from exc
        for name, idx in resp.body.items():
            meta = idx.get("mappings", {}).get("_meta", {})
            model, dims = meta.get("embedding_model"), meta.get("embedding_dims")
            if dims is not None and int(dims) != self.embedder.dims:
                raise ModelError(
                    f"index {name} holds {dims}-dimensional vectors but the embedder "
                    f"{self.embedder.model_id} makes {self.embedder.dims}",
                    hint="use the embedder the index was built with, or re-ingest",
                )
            if model is not None and model != self.embedder.model_id:
                raise ModelError(
                    f"index {name} was built with {model} but the embedder is "
                    f"{self.embedder.model_id}",
                    hint="use the same embedder as the index, or re-ingest into a new index",
                )
        self._model_checked = True

    # -- search ------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        principal: Principal,
        scope: RequestScope | None = None,
        *,
        top_k: int = 10,
        rerank: bool = True,
        rerank_depth: int = 50,
        now: datetime | None = None,
    ) -> SearchResponse:
        """Run one hybrid search for ``principal``.

        Returns a :class:`SearchResponse` whose hits carry full provenance. Raises BadQueryError
        for bad input, EngineError subclasses for cluster failures (never a partial answer),
        PolicyViolationError if a candidate fails the policy re-check (fail closed).
        ``on_response`` / ``on_error`` see every outcome; a failing hook never fails the search.
        """
        timings: dict[str, float] = {}
        try:
            response, text = self._search(
                query, principal, scope, top_k, rerank, rerank_depth, now, timings
            )
        except HybridEsError as exc:
            if self.on_error is not None:
                _notify(self.on_error, principal, query, exc, dict(timings))
            raise
        if self.on_response is not None:
            _notify(self.on_response, principal, response, text)
        return response

    def _search(
        self,
        query: str,
        principal: Principal,
        scope: RequestScope | None,
        top_k: int,
        rerank: bool,
        rerank_depth: int,
        now: datetime | None,
        timings: dict[str, float],
    ) -> tuple[SearchResponse, str]:
        if not 1 <= top_k <= MAX_TOP_K:
            raise BadQueryError(f"top_k must be 1..{MAX_TOP_K}, got {top_k}")
        if not 1 <= rerank_depth <= self.params.window:
            raise BadQueryError(
                f"rerank_depth must be 1..{self.params.window} (the fusion window), "
                f"got {rerank_depth}"
            )
        text = clean_query(query)
        scope = scope or RequestScope()
        now = now or datetime.now(UTC)
        t_all = time.perf_counter()

        self.check_model()
        if principal.tenant not in self._known_tenants:
            self.corpus_state.watermark(principal.tenant)  # UnknownTenantError if it has none
            self._known_tenants.add(principal.tenant)
        policy = policy_filter(principal, scope, now)
        path, reason = self._path()
        leaves: dict[str, dict[str, Any]] = {}
        if path != "dense-only":
            leaves["sparse"] = standard_retriever(text, policy)
        if path != "bm25-only":
            t = time.perf_counter()
            vector = self.embedder.embed_queries([text])[0]
            timings["embed"] = _ms(t)
            leaves["dense"] = knn_retriever(vector, policy, self.params)
        trail: dict[str, Any] = {}
        try:
            candidates = self._retrieve(path, leaves, policy, timings, trail)
        except CapabilityMissingError:
            if self.fusion != "auto":
                raise
            self._native_rrf = False
            path, reason = "client-rrf", "auto: native rrf refused at query time, fused client-side"
            candidates = self._retrieve(path, leaves, policy, timings, trail)

        # Defence in depth: the same rules, evaluated on what came back, before any further use.
        decisions = {}
        for c in candidates:
            d = authorize(principal, scope, now, c.source)
            if not d.allowed:
                raise PolicyViolationError(
                    f"candidate {c.chunk_id} failed the policy re-check ({d.summary()}); "
                    "refusing to answer",
                    hint="the cluster-side filter and the policy rules disagree: report this",
                )
            decisions[c.chunk_id] = d

        reranked = False
        reranker_inputs: tuple[str, ...] = ()
        rerank_scores: dict[str, float] = {}
        if not rerank:
            note = "reranking disabled for this query"
        elif self.reranker is None:
            note = "no reranker configured (set HYBRID_ES_RERANKER_MODEL)"
        elif not (gate := self.reranker.covers(text))[0]:
            trained = ", ".join(sorted(self.reranker.scripts or ()))
            note = (
                f"not reranked: the query is in {gate[1]} script, outside what "
                f"{self.reranker.model_name} was trained on ({trained})"
            )
        else:
            pool, tail = candidates[:rerank_depth], candidates[rerank_depth:]
            t = time.perf_counter()
            scores = self.reranker.score(text, [rerank_passage(c.source) for c in pool])
            timings["rerank"] = _ms(t)
            rerank_scores = {c.chunk_id: s for c, s in zip(pool, scores, strict=True)}
            reranker_inputs = tuple(c.chunk_id for c in pool)
            # The first stage's standing as a score that falls with rank (fused scores of the
            # linear and RRF paths are on different scales; ranks are comparable).
            standing = {c.chunk_id: -float(i) for i, c in enumerate(pool)}
            by_id = {c.chunk_id: c for c in pool}
            w = self.reranker.weight
            candidates = [by_id[i] for i in fusion_mod.blend(standing, rerank_scores, w)] + tail
            reranked = True
            note = f"cross-encoder {self.reranker.model_name} over the fused top {len(pool)}" + (
                f", blended with the fused order (weight {w:g})" if w < 1.0 else ""
            )

        hits = tuple(
            Hit(
                chunk_id=c.chunk_id,
                doc_id=str(c.source.get("doc_id", "")),
                index=c.index,
                source_version=int(c.source.get("version", 0) or 0),
                title=str(c.source.get("title", "")),
                text=str(c.source.get("raw_chunk_text", "")),
                sparse_rank=c.sparse_rank,
                dense_rank=c.dense_rank,
                sparse_score=c.sparse_score,
                dense_score=c.dense_score,
                fused_score=c.fused,
                rerank_score=rerank_scores.get(c.chunk_id),
                final_rank=i,
                fusion_path=path,
                authorization=decisions[c.chunk_id],
                source=c.source,
            )
            for i, c in enumerate(candidates[:top_k], start=1)
        )
        timings["total"] = _ms(t_all)
        response = SearchResponse(
            query_hash=query_hash(text),
            fusion_path=path,
            fusion_reason=reason,
            reranked=reranked,
            rerank_note=note,
            hits=hits,
            candidates=len(decisions),
            timings_ms=timings,
            reranker_inputs=reranker_inputs,
            legs={"sparse": (), "dense": (), **trail["legs"]},
            request_digest=trail["digest"],
        )
        return response, text

    def _msearch(
        self, bodies: list[dict[str, Any]], policy: dict[str, Any], trail: dict[str, Any]
    ) -> list[dict[str, Any]]:
        searches: list[dict[str, Any]] = []
        for body in bodies:
            assert_policy(body, policy)
            searches += [{"index": self.index}, body]
        trail["digest"] = hashlib.sha256(
            json.dumps(searches, sort_keys=True, default=str).encode()
        ).hexdigest()
        try:
            resp = self.client.msearch(searches=searches)
        except Exception as exc:
            raise translate_es_error(exc, url=self.url, what="search") from exc
        items = list(resp.body["responses"])
        for item in items:
            if "error" in item:
                raise from_error_body(item.get("status"), item, url=self.url, what="search")
            if item.get("timed_out"):
                raise SearchTimeoutError(
                    f"the search timed out at {self.url}; no partial answer is returned",
                    hint="retry, or raise HYBRID_ES_REQUEST_TIMEOUT",
                )
            shards = item.get("_shards", {})
            if shards.get("failed"):
                raise HybridEsError(
                    f"search failed on {shards['failed']} shard(s): refusing a partial answer",
                    hint="check the cluster health (`scripts/es.sh status`)",
                )
        return items

    def _retrieve(
        self,
        path: FusionPath,
        leaves: dict[str, dict[str, Any]],
        policy: dict[str, Any],
        timings: dict[str, float],
        trail: dict[str, Any],
    ) -> list[_Candidate]:
        w = self.params.window
        names = list(leaves)
        bodies = [search_body(leaves[n], w) for n in names]
        t = time.perf_counter()
        if path == "native-rrf":
            native = search_body(rrf_retriever(list(leaves.values()), self.params), w)
            fused_resp, *leg_resps = self._msearch([native, *bodies], policy, trail)
        else:
            leg_resps = self._msearch(bodies, policy, trail)
        timings["retrieval"] = _ms(t)
        hits = {n: r["hits"]["hits"] for n, r in zip(names, leg_resps, strict=True)}
        sparse_hits, dense_hits = hits.get("sparse", []), hits.get("dense", [])
        trail["legs"] = {n: tuple(h["_id"] for h in hs) for n, hs in hits.items()}

        t = time.perf_counter()
        by_id: dict[str, dict[str, Any]] = {}
        for h in [*sparse_hits, *dense_hits]:
            by_id.setdefault(h["_id"], h)
        sparse_scores = {h["_id"]: float(h["_score"]) for h in sparse_hits}
        dense_scores = {h["_id"]: float(h["_score"]) for h in dense_hits}
        if path == "client-linear":
            fused = fusion_mod.hybrid_linear(sparse_scores, dense_scores, self.alpha)[:w]
        else:
            # One leg alone is its own ranking: RRF over a single list preserves its order.
            fused = fusion_mod.rrf(
                [[h["_id"] for h in sparse_hits], [h["_id"] for h in dense_hits]],
                k=self.params.rank_constant,
            )[:w]
        if path == "native-rrf":
            native_hits = fused_resp["hits"]["hits"]
            for h in native_hits:
                by_id.setdefault(h["_id"], h)
            # The cluster's order and scores are authoritative; ties are ordered by id, as the
            # client-side path orders them, so both paths give the same sequence.
            scored = sorted(
                ((float(h["_score"]), h["_id"]) for h in native_hits), key=lambda x: (-x[0], x[1])
            )
            ranks = {f.doc_id: f.ranks for f in fused}
            pairs = [(doc, score, ranks.get(doc, (None, None))) for score, doc in scored]
        else:
            pairs = [(f.doc_id, f.score, f.ranks) for f in fused]
        timings["fusion"] = _ms(t)
        return [
            _Candidate(
                chunk_id=doc,
                index=by_id[doc]["_index"],
                source=by_id[doc].get("_source", {}),
                fused=score,
                sparse_rank=r[0],
                dense_rank=r[1],
                sparse_score=sparse_scores.get(doc),
                dense_score=dense_scores.get(doc),
            )
            for doc, score, r in pairs
        ]


def _notify(hook: Callable[..., None], *args: Any) -> None:
    # Tracing and metrics hooks observe; they must never turn an answer into an error.
    try:
        hook(*args)
    except Exception:
        log.exception("a search hook failed; the search result is unaffected")


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)
