"""Executing a hybrid search as a pipeline: prepare -> retrieve -> authorize -> rerank -> assemble.

The I/O edge of retrieval: prepare and retrieve live here; authorize, rerank and assemble are
pure functions in ``stages``. Bodies come from ``queries``, fusion from ``fusion``, the filter and
authorization decisions from ``policy``. Each stage has typed input and output, so an engine
dialect changes :meth:`HybridSearcher.retrieve` only, and a second reranker changes
``stages.rerank_stage`` only:

1. **prepare** validates the input, resolves the caller's chunks index (by tenancy layout) and
   builds the policy filter once;
2. **retrieve** sends both legs (and the native ``rrf`` body where the cluster runs it) in one
   ``_msearch`` after ``assert_policy`` checked every body, and fuses;
3. **authorize** re-checks every candidate against the same rules in Python; a disagreement fails
   the query closed before anything reaches the reranker;
4. **rerank** scores the fused head with the cross-encoder;
5. **assemble** builds the response with full provenance.
"""

from __future__ import annotations

# The searcher's I/O stages (prepare, retrieve, the msearch and the fusion of its legs) share
# the capability and model checks; the pure stages live in stages.py.
import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from elasticsearch import ApiError, Elasticsearch

from hybrid_es.cluster.capabilities import _retriever_works
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.errors import (
    AuthenticationError,
    BadQueryError,
    CapabilityMissingError,
    HybridEsError,
    ModelError,
    SearchTimeoutError,
    from_error_body,
    translate_es_error,
)
from hybrid_es.hashing import PROCESS_KEY, keyed_digest
from hybrid_es.identity import local_chunk_id
from hybrid_es.models import (
    FusionPath,
    Pipeline,
    Principal,
    RequestScope,
    SearchResponse,
)
from hybrid_es.retrieval import fusion as fusion_mod
from hybrid_es.retrieval.embedder import Embedder
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import (
    RetrievalParams,
    assert_policy,
    clean_query,
    knn_retriever,
    rrf_retriever,
    search_body,
    standard_retriever,
)
from hybrid_es.retrieval.reranker import Reranker
from hybrid_es.retrieval.stages import (
    Candidate,
    Retrieved,
    SearchRequest,
    assemble,
    authorize_stage,
    ms_since,
    rerank_stage,
)
from hybrid_es.tenancy import IndexLayout

FusionMode = Literal["auto", "native", "client"]
FusionMethod = Literal["rrf", "linear"]
MAX_TOP_K = 100

OnResponse = Callable[[Principal, SearchResponse, str], None]
"""Called with the caller, the response and the cleaned query text (e.g. ``traces.search_hook``)."""
OnError = Callable[[Principal, object, BaseException, dict[str, float]], None]
"""Called with the caller, the raw query, the error and the stage timings taken so far."""

log = logging.getLogger(__name__)


class HybridSearcher:
    """Hybrid search over a deployment's chunks indices.

    ``layout`` names the indices (by tenancy mode: each caller searches their tenant's chunks
    index); ``index`` instead searches one given index for every tenant (tests, evaluation).
    ``client`` may be a caller-scoped client (an API key or user bound by document-level
    security); the policy filter is applied on top of it in every case. ``hash_key`` keys the
    digests of queries and request bodies (``hybrid_es.hashing``).
    """

    def __init__(
        self,
        client: Elasticsearch,
        embedder: Embedder,
        *,
        index: str | None = None,
        layout: IndexLayout | None = None,
        reranker: Reranker | None = None,
        fusion: FusionMode = "auto",
        params: RetrievalParams | None = None,
        native_rrf: bool | None = None,
        url: str = "",
        corpus_state_index: str | None = None,
        pipeline: Pipeline = "hybrid",
        fusion_method: FusionMethod = "rrf",
        alpha: float = 0.6,
        hash_key: bytes = PROCESS_KEY,
        on_response: OnResponse | None = None,
        on_error: OnError | None = None,
    ) -> None:
        self.client = client
        self.embedder = embedder
        self.layout = IndexLayout.fixed(index) if index else (layout or IndexLayout())
        self.reranker = reranker
        self.fusion = fusion
        self.params = params or RetrievalParams()
        self._native_rrf = native_rrf
        self.url = url
        self.hash_key = hash_key
        self.on_response = on_response
        self.on_error = on_error
        self._model_checked: set[str] = set()
        self._known_tenants: set[str] = set()
        if not 0.0 <= alpha <= 1.0:
            raise BadQueryError(
                f"alpha (the dense weight of linear fusion) must be in [0, 1]: {alpha}"
            )
        self.pipeline = pipeline
        self.fusion_method = fusion_method
        self.alpha = alpha
        self.corpus_state = CorpusState(
            client, corpus_state_index or self.layout.corpus_state, url=url
        )

    def index_for(self, principal: Principal) -> str:
        """The chunks index this caller searches."""
        return self.layout.chunks_for(principal.tenant)

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

    def check_model(self, principal: Principal) -> None:
        """Refuse to search an index whose vectors came from another model or dimension.

        The model is read from the index mapping's ``_meta``; a caller whose credentials may not
        read mappings (a document-level-security reader) is checked against the
        ``embedding_model`` stored on a chunk it may read instead. A caller who may read no chunk
        at all cannot be wrongly answered (every search is empty), and is checked again on the
        next search. Raises ModelError on a mismatch, AuthenticationError when the cluster
        refuses both reads.
        """
        index = self.index_for(principal)
        if index in self._model_checked:
            return
        try:
            resp = self.client.indices.get_mapping(index=index)
        except ApiError as exc:
            if exc.meta.status == 403:
                if self._check_model_on_a_chunk(index, principal):
                    self._model_checked.add(index)
                return
            raise translate_es_error(exc, url=self.url, what=f"reading {index}") from exc
        except Exception as exc:
            raise translate_es_error(exc, url=self.url, what=f"reading {index}") from exc
        for name, idx in resp.body.items():
            meta = idx.get("mappings", {}).get("_meta", {})
            model, dims = meta.get("embedding_model"), meta.get("embedding_dims")
            if dims is not None and int(dims) != self.embedder.dims:
                raise ModelError(
                    f"index {name} holds {dims}-dimensional vectors but the embedder "
                    f"{self.embedder.model_id} makes {self.embedder.dims}",
                    hint="use the embedder the index was built with, or re-ingest",
                )
            self._check_model_id(name, model)
        self._model_checked.add(index)

    def _check_model_id(self, index: str, model: Any) -> None:
        if model is not None and model != self.embedder.model_id:
            raise ModelError(
                f"index {index} was built with {model} but the embedder is "
                f"{self.embedder.model_id}",
                hint="use the same embedder as the index, or re-ingest into a new index",
            )

    def _check_model_on_a_chunk(self, index: str, principal: Principal) -> bool:
        """Check the model stored on one chunk the caller may read; False when there is none."""
        try:
            resp = self.client.search(
                index=index,
                size=1,
                query={"bool": {"filter": [{"term": {"tenant": principal.tenant}}]}},
                source_includes=["embedding_model"],
            )
        except ApiError as exc:
            raise AuthenticationError(
                f"cannot check which model built {index}: the credentials may read neither its "
                "mapping nor its chunks",
                hint="grant view_index_metadata or read on the chunks index",
                status=exc.meta.status,
            ) from exc
        except Exception as exc:
            raise translate_es_error(exc, url=self.url, what=f"reading {index}") from exc
        hits = resp["hits"]["hits"]
        for h in hits:
            self._check_model_id(index, h.get("_source", {}).get("embedding_model"))
        return bool(hits)

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
        for bad input, UnknownTenantError for a tenant with no corpus, EngineError subclasses for
        cluster failures (never a partial answer), PolicyViolationError if a candidate fails the
        policy re-check (fail closed; the message names no record). ``on_response`` /
        ``on_error`` see every outcome; a failing hook never fails the search.
        """
        timings: dict[str, float] = {}
        t_all = time.perf_counter()
        try:
            req = self.prepare(query, principal, scope, top_k, rerank, rerank_depth, now)
            retrieved = self.retrieve(req, timings)
            authorized = authorize_stage(req, retrieved.candidates)
            reranked = rerank_stage(req, authorized, self.reranker, timings)
            timings["total"] = ms_since(t_all)
            response = assemble(req, retrieved, authorized, reranked, timings, self.hash_key)
        except HybridEsError as exc:
            if self.on_error is not None:
                _notify(self.on_error, principal, query, exc, dict(timings))
            raise
        if self.on_response is not None:
            _notify(self.on_response, principal, response, req.text)
        return response

    def prepare(
        self,
        query: str,
        principal: Principal,
        scope: RequestScope | None,
        top_k: int,
        rerank: bool,
        rerank_depth: int,
        now: datetime | None,
    ) -> SearchRequest:
        """Validate the request, check the caller's tenant and index, build the filter once."""
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
        if principal.tenant not in self._known_tenants:
            self.corpus_state.watermark(principal.tenant)  # UnknownTenantError if it has none
            self._known_tenants.add(principal.tenant)
        self.check_model(principal)
        return SearchRequest(
            text=text,
            principal=principal,
            scope=scope,
            now=now,
            top_k=top_k,
            rerank=rerank,
            rerank_depth=rerank_depth,
            index=self.index_for(principal),
            policy=policy_filter(principal, scope, now),
        )

    def retrieve(self, req: SearchRequest, timings: dict[str, float]) -> Retrieved:
        """Both legs (and the native fusion where it runs) in one round trip, fused."""
        path, reason = self._path()
        leaves: dict[str, dict[str, Any]] = {}
        if path != "dense-only":
            leaves["sparse"] = standard_retriever(req.text, req.policy)
        if path != "bm25-only":
            t = time.perf_counter()
            vector = self.embedder.embed_queries([req.text])[0]
            timings["embed"] = ms_since(t)
            leaves["dense"] = knn_retriever(vector, req.policy, self.params)
        try:
            return self._retrieve(path, reason, leaves, req, timings)
        except CapabilityMissingError:
            if self.fusion != "auto" or path != "native-rrf":
                raise
            self._native_rrf = False
            reason = "auto: native rrf refused at query time, fused client-side"
            return self._retrieve("client-rrf", reason, leaves, req, timings)

    def _msearch(
        self, bodies: list[dict[str, Any]], req: SearchRequest
    ) -> tuple[list[dict[str, Any]], str]:
        searches: list[dict[str, Any]] = []
        for body in bodies:
            assert_policy(body, req.policy)
            searches += [{"index": req.index}, body]
        digest = keyed_digest(
            self.hash_key, json.dumps(searches, sort_keys=True, default=str), length=64
        )
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
        return items, digest

    def _retrieve(
        self,
        path: FusionPath,
        reason: str,
        leaves: dict[str, dict[str, Any]],
        req: SearchRequest,
        timings: dict[str, float],
    ) -> Retrieved:
        w = self.params.window
        names = list(leaves)
        bodies = [search_body(leaves[n], w) for n in names]
        t = time.perf_counter()
        fused_resp: dict[str, Any] | None = None
        if path == "native-rrf":
            native = search_body(rrf_retriever(list(leaves.values()), self.params), w)
            (fused_resp, *leg_resps), digest = self._msearch([native, *bodies], req)
        else:
            leg_resps, digest = self._msearch(bodies, req)
        timings["retrieval"] = ms_since(t)
        hits = {n: r["hits"]["hits"] for n, r in zip(names, leg_resps, strict=True)}
        sparse_hits, dense_hits = hits.get("sparse", []), hits.get("dense", [])
        legs = {n: tuple(_local(h) for h in hs) for n, hs in hits.items()}

        t = time.perf_counter()
        candidates = self._fuse(path, sparse_hits, dense_hits, fused_resp)
        timings["fusion"] = ms_since(t)
        return Retrieved(path, reason, candidates, {"sparse": (), "dense": (), **legs}, digest)

    def _fuse(
        self,
        path: FusionPath,
        sparse_hits: list[dict[str, Any]],
        dense_hits: list[dict[str, Any]],
        native: dict[str, Any] | None,
    ) -> list[Candidate]:
        """The fused candidates: client-side RRF or linear fusion over the legs, or the cluster's
        own fused order (``native``) with each candidate's per-leg ranks taken from the legs."""
        w = self.params.window
        by_id: dict[str, dict[str, Any]] = {}
        for h in [*sparse_hits, *dense_hits, *((native or {}).get("hits", {}).get("hits", []))]:
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
        if native is not None:
            # The cluster's order and scores are authoritative; ties are ordered by id, as the
            # client-side path orders them, so both paths give the same sequence.
            scored = sorted(
                ((float(h["_score"]), h["_id"]) for h in native["hits"]["hits"]),
                key=lambda x: (-x[0], x[1]),
            )
            ranks = {f.doc_id: f.ranks for f in fused}
            pairs = [(doc, score, ranks.get(doc, (None, None))) for score, doc in scored]
        else:
            pairs = [(f.doc_id, f.score, f.ranks) for f in fused]
        return [
            Candidate(
                key=doc,
                chunk_id=_local(by_id[doc]),
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


def _local(hit: dict[str, Any]) -> str:
    """A returned chunk's tenant-local id (the stored ``chunk_id``, else from its key)."""
    return str(hit.get("_source", {}).get("chunk_id") or local_chunk_id(hit["_id"]))


def _notify(hook: Callable[..., None], *args: Any) -> None:
    # Tracing and metrics hooks observe; they must never turn an answer into an error.
    try:
        hook(*args)
    except Exception:
        log.exception("a search hook failed; the search result is unaffected")
