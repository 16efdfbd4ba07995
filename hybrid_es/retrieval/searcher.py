"""Executing a hybrid search as a pipeline: prepare -> retrieve -> authorize -> rerank -> assemble.

:class:`HybridSearcher` holds a deployment's search settings. For each search it takes them as
one immutable :class:`~hybrid_es.retrieval.context.SearchContext` and runs the stages over it in
order (``search_run``: one generator of effects, ``effects``, run blocking here or awaited by the
async searcher), their ``_msearch`` requests sent through the chunks door (``answers``). Each
stage has typed input and output and a module of its own, so an engine dialect changes the
retrieve stage only, and a second reranker changes ``stages.rerank_stage`` only:

1. **prepare** (``prepare``) validates the input (the caller's metadata filter is translated, or
   refused, before any request), resolves the caller's chunks index (by tenancy layout) and
   builds the policy filter once, the caller's filter inside it (``filters``,
   ``policy.policy_filter``);
2. **retrieve** (``retrieve``) sends both legs (``legs``; and the native fusion where the cluster
   runs it) in one ``_msearch`` after ``assert_policy`` checked every body, and fuses; the legs
   return ids and scores only, and the records of the fused head (the hits asked for, or the
   rerank pool) are read in a second request under the same policy filter (``head_read``);
3. **authorize** re-checks every record read against the same rules in Python; a disagreement
   fails the query closed before anything reaches the reranker (``stages``);
4. **rerank** scores the fused head with the cross-encoder (``stages``);
5. **assemble** builds the response with full provenance (``stages``).

Beside them: ``observers`` (hooks, telemetry), ``fusion`` (the fusion settings, what the
engine was found to run), ``listing`` (records without a query), ``closers``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.encoders.reranker import Reranker
from hybrid_es.hashing import PROCESS_KEY
from hybrid_es.metadata_fields import FilterableField, parse_filterable_fields
from hybrid_es.models import (
    FusionPath,
    Pipeline,
    Principal,
    Record,
    RequestScope,
    SearchRequest,
    SearchResponse,
)
from hybrid_es.retrieval import effects, listing, search_run
from hybrid_es.retrieval import fusion as fusion_mod
from hybrid_es.retrieval.answers import Answers
from hybrid_es.retrieval.closers import Closers
from hybrid_es.retrieval.context import SearchContext
from hybrid_es.retrieval.dialects import Dialect, dialect_for
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.fusion import FusionFindings, FusionMethod, FusionMode, checked_alpha
from hybrid_es.retrieval.index_checks import IndexChecks
from hybrid_es.retrieval.legs import truncated_legs
from hybrid_es.retrieval.observers import OnError, OnResponse
from hybrid_es.retrieval.prepare import MAX_TOP_K
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.query_vectors import (
    DEFAULT_EMBED_BATCH,
    DEFAULT_QUERY_CACHE_SIZE,
    QueryBatcher,
    QueryVectors,
)
from hybrid_es.retrieval.retrieve import fusion_path
from hybrid_es.retrieval.stages import ms_since
from hybrid_es.tenancy import IndexLayout

__all__ = ["MAX_TOP_K", "FusionMethod", "FusionMode", "HybridSearcher", "OnError", "OnResponse"]


class HybridSearcher:
    """Hybrid search over a deployment's chunks indices.

    ``layout`` names the indices (by tenancy mode: each caller searches their tenant's chunks
    index); ``index`` instead searches one given index for every tenant (tests, evaluation).
    ``client`` may be a caller-scoped client (an API key or user bound by document-level
    security); the policy filter is applied on top of it in every case. ``hash_key`` keys the
    digests of queries and request bodies (``hybrid_es.hashing``). ``query_cache_size``: query
    vectors kept (``query_vectors``; 0: none); ``embed_batch``: most concurrent queries embedded
    in one model call (``query_vectors.QueryBatcher``; 1: each alone). :meth:`warm_up` loads the
    models up front.
    ``filterable_fields``: the metadata fields a search's ``filters`` may name, with their types
    (``HYBRID_ES_FILTERABLE_FIELDS``'s text, a name-to-type mapping, or
    ``metadata_fields.FilterableField``s; none by default: every filter is refused).
    """

    def __init__(
        self,
        client: Engine | Any,
        embedder: Embedder | Embedders,
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
        fusion_method: FusionMethod = fusion_mod.DEFAULT_METHOD,
        alpha: fusion_mod.Alpha = fusion_mod.DEFAULT_ALPHA,
        hash_key: bytes = PROCESS_KEY,
        on_response: OnResponse | None = None,
        on_error: OnError | None = None,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        embed_batch: int = DEFAULT_EMBED_BATCH,
        filterable_fields: Iterable[FilterableField] | Mapping[str, str] | str = (),
    ) -> None:
        self.client = as_engine(client, url=url)
        self.filterable_fields = parse_filterable_fields(filterable_fields)
        self.dialect: Dialect = dialect_for(self.client.flavor)
        self.embedders = Embedders.of(embedder)
        """The embedder of each chunks index (one fixed model, or ``auto``: the model each index
        records; ``encoders.embedder_choice``)."""
        self.layout = IndexLayout.fixed(index) if index else (layout or IndexLayout())
        self.client.guard(self.layout.chunks)
        self.reranker = reranker
        self.fusion = fusion
        self.params = params or RetrievalParams()
        self.found = FusionFindings.told(native_rrf)
        """What the engine runs natively, and the DLS workaround (``fusion``)."""
        self.url = url
        self.hash_key = hash_key
        self.on_response = on_response
        self.on_error = on_error
        self.vectors = QueryVectors(self.embedders, cache_size=query_cache_size, batch=embed_batch)
        self.query_cache = self.vectors.cache
        self.checks = IndexChecks()
        """What is checked of each chunks index once (its model, its filterable fields)."""
        self._known_tenants: set[str] = set()
        self.alpha = checked_alpha(alpha, fusion, fusion_method)
        self.pipeline = pipeline
        self.fusion_method = fusion_method
        self.corpus_state = CorpusState(
            self.client, corpus_state_index or self.layout.corpus_state, url=url
        )
        self._closers = Closers()
        self._door: ChunksDoor | None = None

    def context(self) -> SearchContext:
        """This searcher's configuration now, for one search (``context``): what every stage
        of the search reads, instead of the searcher."""
        door = self.door
        return SearchContext(
            client=self.client,
            door=door,
            answers=Answers(door, self.hash_key, self.url, self.found),
            dialect=self.dialect,
            layout=self.layout,
            params=self.params,
            filterable_fields=self.filterable_fields,
            pipeline=self.pipeline,
            fusion=self.fusion,
            fusion_method=self.fusion_method,
            alpha=self.alpha,
            found=self.found,
            embedders=self.embedders,
            vectors=self.vectors,
            reranker=self.reranker,
            checks=self.checks,
            corpus_state=self.corpus_state,
            known_tenants=self._known_tenants,
            hash_key=self.hash_key,
            on_response=self.on_response,
            on_error=self.on_error,
        )

    # -- lifetime ----------------------------------------------------------------------------

    def add_closer(self, name: str, closer: Callable[[], Any]) -> None:
        """Run ``closer`` when the searcher is closed (what attached hooks own: the trace
        writer, ``hybrid_es.traces.wiring``); its result is reported under ``name``."""
        self._closers.add(name, closer)

    def close(self) -> dict[str, Any]:
        """Close what was attached with :meth:`add_closer` (flushing the trace writer), once, in
        reverse order; returns each closer's result by name (``traces``: the writer's final
        counters, drops included). A failing closer is logged and reported as its exception,
        never raised. The searcher itself holds no thread or connection of its own to close:
        the client stays the caller's (``closers``)."""
        return self._closers.close()

    def __enter__(self) -> HybridSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def index_for(self, principal: Principal) -> str:
        """The chunks index this caller searches."""
        return self.layout.chunks_for(principal.tenant)

    @property
    def door(self) -> ChunksDoor:
        """The only way this searcher's bodies reach a chunks index (``retrieval.door``): made
        once per client (a client swapped in after construction is guarded and gets its own)."""
        door = self._door
        if door is None or door.engine is not self.client:
            self.client.guard(self.layout.chunks)
            door = self._door = ChunksDoor(self.client, self.dialect)
        return door

    # -- capability and model checks ---------------------------------------------------------

    def native_available(self, method: str = "rrf") -> bool:
        """Whether the engine runs this fusion natively (probed once, read-only)."""
        return self.found.native_probe(self.client, method)[0]

    def native_rrf_available(self) -> bool:
        return self.native_available("rrf")

    def fusion_path(self) -> tuple[FusionPath, str]:
        """The path a search would take before it has seen its query, and why."""
        return fusion_path(self.context())

    @property
    def dls_suggest(self) -> bool:
        """Whether OpenSearch's hybrid query is sent with the DLS workaround (``found``)."""
        return self.found.dls_suggest

    @property
    def embedder(self) -> Embedder:
        """The fixed embedder, or (``auto``) the one an index that records no model gets."""
        return self.embedders.default

    def embedder_for(self, index: str) -> Embedder:
        """The embedder of ``index`` as its last check found it (:meth:`check_model`)."""
        return self.embedders.recorded(index, self.checks.model_of.get(index))

    @property
    def query_batcher(self) -> QueryBatcher:
        """The default embedder's query batcher."""
        return self.vectors.batcher(self.embedder)

    def check_model(self, principal: Principal) -> Embedder:
        """The embedder of the caller's index; refuses to search an index whose vectors came
        from another model or dimension (``retrieval.index_checks``): ModelError on a mismatch,
        AuthenticationError when the cluster refuses both the mapping and a chunk."""
        return self.checks.check_model(
            self.client, self.door, self.index_for(principal), principal, self.embedders
        )

    def warm_up(self, *, rerank: bool = True) -> dict[str, float]:
        """Load the models a search uses and run one tiny inference on each, so that the first
        query does not pay for loading them: the embedder (unless the pipeline is BM25 alone)
        and, with ``rerank``, the reranker where there is one. Returns the milliseconds each
        took; caches nothing. Call it where a long-lived process starts."""
        took: dict[str, float] = {}
        if self.pipeline != "bm25":
            t = time.perf_counter()
            self.vectors.warm_up()
            took["embed"] = ms_since(t)
        if rerank and self.reranker is not None:
            t = time.perf_counter()
            self.reranker.score("warm-up", ["warm-up passage"])
            took["rerank"] = ms_since(t)
        return took

    # -- search ------------------------------------------------------------------------------

    def search(
        self,
        request: SearchRequest | str,
        principal: Principal | None = None,
        scope: RequestScope | None = None,
        **options: Any,
    ) -> SearchResponse:
        """Run one hybrid search: ``request`` (a :class:`~hybrid_es.models.SearchRequest`), or
        the shorthand ``search(question, principal, scope, top_k=..., rerank=...,
        rerank_depth=..., now=..., filters=...)`` with :class:`SearchRequest`'s fields.

        ``filters`` narrows the search to records whose declared metadata fields match, in the
        neutral grammar of :mod:`hybrid_es.retrieval.filters` (``{"team": "ops", "year":
        {"$gte": 2024}}``); it is ANDed with the policy inside every leaf and can never widen
        what the caller may see. A filter that is malformed or names a field that is not
        declared filterable (a policy field never is) raises FilterError (a BadQueryError)
        before any request is sent.

        Returns a :class:`SearchResponse` whose hits carry full provenance. Raises BadQueryError
        for bad input, PolicyViolationError without a Principal, UnknownTenantError for a tenant
        with no corpus, EngineError subclasses for cluster failures (never a partial answer),
        PolicyViolationError if a candidate fails the policy re-check (fail closed; the message
        names no record). ``on_response`` / ``on_error`` see every outcome; a failing hook never
        fails the search.

        The search's trace id is drawn first: its requests carry it as ``X-Opaque-Id`` (so the
        cluster's slow log and tasks API point back to the trace), the response holds it as
        ``trace_id``, and an error raised holds it as ``.trace_id``.
        """
        ctx = self.context()
        asked = SearchRequest.of(request, principal, scope, options)
        return effects.run(search_run.search_steps(ctx, asked), ctx.answers.send)

    def truncated(
        self, text: str, path: FusionPath, embedder: Embedder | None = None
    ) -> tuple[str, ...]:
        """The legs of ``path`` that read only the start of the cleaned query ``text``
        (``legs.truncated_legs``; ``embedder`` by default the default one)."""
        return truncated_legs(text, path, self.params.max_query_terms, embedder or self.embedder)

    # -- listing ----------------------------------------------------------------------------

    def records(
        self,
        principal: Principal,
        *,
        filters: Mapping[str, Any] | None = None,
        scope: RequestScope | None = None,
        doc_ids: Sequence[str] | None = None,
        chunk_ids: Sequence[str] | None = None,
        limit: int = 1000,
        now: datetime | None = None,
    ) -> list[Record]:
        """Every record (chunk) ``principal`` may read now that matches ``filters`` (the neutral
        grammar of :meth:`search`) and, when given, the document or chunk ids: unscored, ordered
        by document id and chunk number (``retrieval.listing``, ``retrieval.records``). The same
        policy as a search decides what is listed. Raises FilterError for a bad filter (before
        any request) and BadQueryError when more than ``limit`` (at most 10,000) records match."""
        return listing.list_records(
            self,
            principal,
            filters=filters,
            scope=scope,
            doc_ids=doc_ids,
            chunk_ids=chunk_ids,
            limit=limit,
            now=now,
        )

    def count_records(
        self,
        principal: Principal,
        *,
        filters: Mapping[str, Any] | None = None,
        scope: RequestScope | None = None,
        now: datetime | None = None,
    ) -> int:
        """How many records :meth:`records` would list (without a limit)."""
        return listing.count_records(self, principal, filters=filters, scope=scope, now=now)
