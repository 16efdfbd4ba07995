"""Executing a hybrid search as a pipeline: prepare -> retrieve -> authorize -> rerank -> assemble.

:class:`HybridSearcher` holds a deployment's search settings, runs the stages in order
(``search_run``: generators of effects, ``effects``, run blocking or awaited) and sends their
``_msearch`` requests through the chunks door. Each stage has typed input and output and a module
of its own, so an engine dialect changes the retrieve stage only, and a second reranker changes
``stages.rerank_stage`` only:

1. **prepare** (here) validates the input (the caller's metadata filter is translated, or
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

Beside them: ``observers`` (hooks, telemetry), ``fusion_setup`` (the fusion settings, what the
engine was found to run), ``listing`` (records without a query), ``closers``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.encoders.reranker import Reranker
from hybrid_es.errors import BadQueryError
from hybrid_es.hashing import PROCESS_KEY
from hybrid_es.metadata_fields import FilterableField, parse_filterable_fields
from hybrid_es.models import FusionPath, Pipeline, Principal, Record, RequestScope, SearchResponse
from hybrid_es.retrieval import effects, head_read, listing, retrieve, search_run
from hybrid_es.retrieval import fusion as fusion_mod
from hybrid_es.retrieval.answers import check_answers, sent_digest
from hybrid_es.retrieval.closers import Closers
from hybrid_es.retrieval.dialects import Dialect, dialect_for
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.effects import Msearch, Steps
from hybrid_es.retrieval.filters import translate_filter
from hybrid_es.retrieval.fusion_setup import FusionFindings, FusionMethod, FusionMode, checked_alpha
from hybrid_es.retrieval.index_checks import IndexChecks
from hybrid_es.retrieval.legs import truncated_legs
from hybrid_es.retrieval.observers import OnError, OnResponse
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import RetrievalParams, clean_query
from hybrid_es.retrieval.query_batcher import DEFAULT_EMBED_BATCH, QueryBatcher
from hybrid_es.retrieval.query_vectors import QueryVectors
from hybrid_es.retrieval.stages import Candidate, Retrieved, SearchRequest, ms_since
from hybrid_es.retrieval.vector_cache import DEFAULT_QUERY_CACHE_SIZE
from hybrid_es.tenancy import IndexLayout

__all__ = ["MAX_TOP_K", "FusionMethod", "FusionMode", "HybridSearcher", "OnError", "OnResponse"]

MAX_TOP_K = 100


class HybridSearcher:
    """Hybrid search over a deployment's chunks indices.

    ``layout`` names the indices (by tenancy mode: each caller searches their tenant's chunks
    index); ``index`` instead searches one given index for every tenant (tests, evaluation).
    ``client`` may be a caller-scoped client (an API key or user bound by document-level
    security); the policy filter is applied on top of it in every case. ``hash_key`` keys the
    digests of queries and request bodies (``hybrid_es.hashing``). ``query_cache_size``: query
    vectors kept (``vector_cache``; 0: none); ``embed_batch``: most concurrent queries embedded in
    one model call (``query_batcher``; 1: each alone). :meth:`warm_up` loads the models up front.
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
        """What the engine runs natively, and the DLS workaround (``fusion_setup``)."""
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

    def _path(self) -> tuple[FusionPath, str]:
        return retrieve.fusion_path(self)

    @property
    def _dls_suggest(self) -> bool:
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

    @property
    def _model_checked(self) -> set[str]:
        return self.checks.model_checked

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
        query: str,
        principal: Principal,
        scope: RequestScope | None = None,
        *,
        top_k: int = 10,
        rerank: bool = True,
        rerank_depth: int = 50,
        now: datetime | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> SearchResponse:
        """Run one hybrid search for ``principal``.

        ``filters`` narrows the search to records whose declared metadata fields match, in the
        neutral grammar of :mod:`hybrid_es.retrieval.filters` (``{"team": "ops", "year":
        {"$gte": 2024}}``); it is ANDed with the policy inside every leaf and can never widen
        what the caller may see. A filter that is malformed or names a field that is not
        declared filterable (a policy field never is) raises FilterError (a BadQueryError)
        before any request is sent.

        Returns a :class:`SearchResponse` whose hits carry full provenance. Raises BadQueryError
        for bad input, UnknownTenantError for a tenant with no corpus, EngineError subclasses for
        cluster failures (never a partial answer), PolicyViolationError if a candidate fails the
        policy re-check (fail closed; the message names no record). ``on_response`` /
        ``on_error`` see every outcome; a failing hook never fails the search.

        The search's trace id is drawn first: its requests carry it as ``X-Opaque-Id`` (so the
        cluster's slow log and tasks API point back to the trace), the response holds it as
        ``trace_id``, and an error raised holds it as ``.trace_id``.
        """
        return effects.run(
            self.search_steps(
                query,
                principal,
                scope,
                top_k=top_k,
                rerank=rerank,
                rerank_depth=rerank_depth,
                now=now,
                filters=filters,
            ),
            self._run_msearch,
        )

    def search_steps(
        self,
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
        """:meth:`search` as a generator of effects (``retrieval.effects``, ``search_run``): the
        ``_msearch`` requests and the model computations are left to the runner (blocking:
        :meth:`search`; awaited: ``AsyncHybridSearcher.search``)."""
        return search_run.search_steps(
            self,
            query,
            principal,
            scope,
            top_k=top_k,
            rerank=rerank,
            rerank_depth=rerank_depth,
            now=now,
            filters=filters,
        )

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
    ) -> SearchRequest:
        """Validate the request, check the caller's tenant and index, build the filter once.
        ``trace_id`` (default: a new one) is the search's, sent as ``X-Opaque-Id``. The
        caller's ``filters`` are translated (FilterError) before the first request, and placed
        inside the policy filter."""
        if not 1 <= top_k <= MAX_TOP_K:
            raise BadQueryError(f"top_k must be 1..{MAX_TOP_K}, got {top_k}")
        if not 1 <= rerank_depth <= self.params.window:
            raise BadQueryError(
                f"rerank_depth must be 1..{self.params.window} (the fusion window), "
                f"got {rerank_depth}"
            )
        text = clean_query(query, self.params.max_query_chars)
        narrowing = translate_filter(filters, self.filterable_fields)
        scope = scope or RequestScope()
        now = now or datetime.now(UTC)
        if principal.tenant not in self._known_tenants:
            self.corpus_state.watermark(principal.tenant)  # UnknownTenantError if it has none
            self._known_tenants.add(principal.tenant)
        self.check_model(principal)
        if narrowing is not None:
            self.checks.check_filter_mapped(
                self.client, self.index_for(principal), filters, self.filterable_fields
            )
        return SearchRequest(
            text=text,
            principal=principal,
            scope=scope,
            now=now,
            top_k=top_k,
            rerank=rerank,
            rerank_depth=rerank_depth,
            index=self.index_for(principal),
            policy=policy_filter(principal, scope, now, narrowed_by=narrowing),
            trace_id=trace_id or uuid.uuid4().hex,
        )

    def prepared(self, principal: Principal) -> bool:
        """Whether :meth:`prepare` has checked this caller's tenant and index before (then it
        sends no request, unless a filter names a field the index's mapping lacks)."""
        known = principal.tenant in self._known_tenants
        return known and self.index_for(principal) in self.checks.model_checked

    def retrieve(self, req: SearchRequest, timings: dict[str, float]) -> Retrieved:
        """Both legs (and the native fusion where it runs) in one round trip, fused."""
        return effects.run(self.retrieve_steps(req, timings), self._run_msearch)

    def retrieve_steps(self, req: SearchRequest, timings: dict[str, float]) -> Steps[Retrieved]:
        """:meth:`retrieve` as a generator of effects (``retrieval.retrieve``)."""
        return retrieve.retrieve_steps(self, req, timings)

    def read_records(
        self, req: SearchRequest, candidates: list[Candidate], timings: dict[str, float]
    ) -> list[Candidate]:
        """The fused head with its records (see :meth:`read_records_steps`)."""
        return effects.run(self.read_records_steps(req, candidates, timings), self._run_msearch)

    def read_records_steps(
        self, req: SearchRequest, candidates: list[Candidate], timings: dict[str, float]
    ) -> Steps[list[Candidate]]:
        """The fused head (``head_read.head_size``) with its records, read by key under the same
        policy as the legs unless the legs carried them (``head_read``), in fused order."""
        reranks = self.reranker is not None
        size = head_read.head_size(req, reranks)
        carried = head_read.legs_carry_records(req, reranks, self.params.window)
        return head_read.read_head_steps(req, candidates, timings, size=size, carried=carried)

    def truncated(
        self, text: str, path: FusionPath, embedder: Embedder | None = None
    ) -> tuple[str, ...]:
        """The legs of ``path`` that read only the start of the cleaned query ``text``
        (``legs.truncated_legs``; ``embedder`` by default the default one)."""
        return truncated_legs(text, path, self.params.max_query_terms, embedder or self.embedder)

    def query_vector(self, tenant: str, text: str, embedder: Embedder | None = None) -> list[float]:
        """The embedding of the cleaned query ``text`` by ``embedder`` (default: the default
        embedder), from the query vector cache when this tenant asked it of that model before."""
        return self.vectors.vector(tenant, text, embedder or self.embedder)

    def _run_msearch(self, effect: Msearch) -> tuple[list[dict[str, Any]], str]:
        """A stage's bodies in one ``_msearch`` through the chunks door (every body checked
        first); the responses, and a keyed digest of what was sent."""
        pairs = [(effect.req.index, body) for body in effect.searches]
        items = self.door.msearch(pairs, effect.req.policy, opaque_id=effect.req.trace_id or None)
        return self.answered(items, pairs)

    def answered(
        self, items: list[dict[str, Any]], pairs: list[tuple[str, dict[str, Any]]]
    ) -> tuple[list[dict[str, Any]], str]:
        """The ``_msearch`` responses to ``pairs`` (index, body), checked (``answers``: never a
        partial answer), and the keyed digest of what was sent. Shared by the blocking and the
        async searcher."""
        check_answers(items, url=self.url, dls_suggest=self.found.dls_suggest)
        return items, sent_digest(self.hash_key, pairs)

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
