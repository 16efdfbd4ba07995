"""Executing a hybrid search as a pipeline: prepare -> retrieve -> authorize -> rerank -> assemble.

The I/O edge of retrieval: prepare and retrieve live here; authorize, rerank and assemble are
pure functions in ``stages``. Bodies come from ``queries``, fusion from ``fusion``, the filter and
authorization decisions from ``policy``. Each stage has typed input and output, so an engine
dialect changes :meth:`HybridSearcher.retrieve` only, and a second reranker changes
``stages.rerank_stage`` only:

1. **prepare** validates the input (the caller's metadata filter is translated, or refused,
   before any request), resolves the caller's chunks index (by tenancy layout) and builds the
   policy filter once, the caller's filter inside it (``filters``, ``policy.policy_filter``);
2. **retrieve** sends both legs (and the native ``rrf`` body where the cluster runs it) in one
   ``_msearch`` after ``assert_policy`` checked every body, and fuses; the legs return ids and
   scores only, and the records of the fused head (the hits asked for, or the rerank pool) are
   read in a second request under the same policy filter;
3. **authorize** re-checks every record read against the same rules in Python; a disagreement
   fails the query closed before anything reaches the reranker;
4. **rerank** scores the fused head with the cross-encoder;
5. **assemble** builds the response with full provenance.
"""

from __future__ import annotations

# The searcher's I/O stages (prepare, retrieve, the msearch and the fusion of its legs) share
# the capability and model checks; the pure stages live in stages.py.
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from hybrid_es import telemetry
from hybrid_es.cluster.capabilities import fuses_per_shard, native_fusion_works
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.encoders.embedder import Embedder, covers, ensure_loaded, needs_loading
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.encoders.reranker import Reranker
from hybrid_es.errors import (
    BadQueryError,
    CapabilityMissingError,
    ConfigurationError,
    HybridEsError,
    UnknownTenantError,
)
from hybrid_es.hashing import PROCESS_KEY
from hybrid_es.metadata_fields import (
    FilterableField,
    parse_filterable_fields,
)
from hybrid_es.models import (
    FusionPath,
    Pipeline,
    Principal,
    Record,
    RequestScope,
    SearchResponse,
)
from hybrid_es.retrieval import effects
from hybrid_es.retrieval import fusion as fusion_mod
from hybrid_es.retrieval import records as records_mod
from hybrid_es.retrieval.answers import HybridUnderDls, check_answers, sent_digest
from hybrid_es.retrieval.candidates import fuse_legs, local_id
from hybrid_es.retrieval.dialects import (
    Dialect,
    dialect_for,
    dls_suggest,
)
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.effects import Compute, Msearch, Steps
from hybrid_es.retrieval.filters import translate_filter
from hybrid_es.retrieval.fusion_choice import choose_path, client_side, fallback_kind, per_shard
from hybrid_es.retrieval.index_checks import IndexChecks
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import (
    SOURCE_EXCLUDES,
    RetrievalParams,
    clean_query,
    records_body,
)
from hybrid_es.retrieval.query_batcher import DEFAULT_EMBED_BATCH, QueryBatcher
from hybrid_es.retrieval.query_vectors import QueryVectors
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
from hybrid_es.retrieval.vector_cache import DEFAULT_QUERY_CACHE_SIZE
from hybrid_es.tenancy import IndexLayout
from hybrid_es.text.analysis import cap_terms

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
        self._native: dict[str, tuple[bool, str]] = (
            {}
            if native_rrf is None
            else {m: (native_rrf, "set by the caller") for m in ("rrf", "linear")}
        )
        self._dls_suggest = False
        """Set once OpenSearch refused a hybrid query for a DLS user (neural-search#1303)."""
        self.url = url
        self.hash_key = hash_key
        self.on_response = on_response
        self.on_error = on_error
        self.vectors = QueryVectors(self.embedders, cache_size=query_cache_size, batch=embed_batch)
        self.query_cache = self.vectors.cache
        self.checks = IndexChecks()
        """What is checked of each chunks index once (its model, its filterable fields)."""
        self._known_tenants: set[str] = set()
        try:
            self.alpha = fusion_mod.check_alpha(alpha)
        except ValueError as exc:
            raise BadQueryError(f"the dense weight of linear fusion: {exc}") from None
        if fusion == "native" and fusion_method == "linear" and self.alpha == fusion_mod.SPREAD:
            raise ConfigurationError(
                "native linear fusion takes a fixed dense weight, and the spread weight is "
                "chosen per query from the legs' scores (client-side)",
                hint="set a number as the weight (HYBRID_ES_FUSION_ALPHA=0.4, the best fixed "
                "one) to fuse natively, or use fusion 'auto'",
            )
        self.pipeline = pipeline
        self.fusion_method = fusion_method
        self.corpus_state = CorpusState(
            self.client, corpus_state_index or self.layout.corpus_state, url=url
        )
        self._closers: list[tuple[str, Callable[[], Any]]] = []
        self._closed: dict[str, Any] | None = None
        self._door: ChunksDoor | None = None

    # -- lifetime ----------------------------------------------------------------------------

    def add_closer(self, name: str, closer: Callable[[], Any]) -> None:
        """Run ``closer`` when the searcher is closed (what attached hooks own: the trace
        writer, ``hybrid_es.traces.wiring``); its result is reported under ``name``."""
        self._closers.append((name, closer))

    def close(self) -> dict[str, Any]:
        """Close what was attached with :meth:`add_closer` (flushing the trace writer), once, in
        reverse order; returns each closer's result by name (``traces``: the writer's final
        counters, drops included). A failing closer is logged and reported as its exception,
        never raised. The searcher itself holds no thread or connection of its own to close:
        the client stays the caller's."""
        if self._closed is None:
            out: dict[str, Any] = {}
            for name, closer in reversed(self._closers):
                try:
                    out[name] = closer()
                except Exception as exc:
                    log.warning("closing %s failed: %s: %s", name, type(exc).__name__, exc)
                    out[name] = exc
            self._closed = out
        return self._closed

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
        if method not in self._native:
            self._native[method] = native_fusion_works(self.client, method)
        return self._native[method][0]

    def native_rrf_available(self) -> bool:
        return self.native_available("rrf")

    def _native_probe(self, method: str) -> tuple[bool, str]:
        return self.native_available(method), self._native[method][1]

    def _path(self) -> tuple[FusionPath, str]:
        return choose_path(
            self.pipeline, self.fusion, self.fusion_method, self.alpha, self._native_probe
        )

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
        """:meth:`search` as a generator of effects (``retrieval.effects``): what it does, in
        order, with the ``_msearch`` requests and the model computations left to the runner
        (blocking: :meth:`search`; awaited: ``AsyncHybridSearcher.search``)."""
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
                        return self.prepare(
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
                    req = prepare() if self._prepared(principal) else (yield Compute(prepare))
                staged["prepare"] = ms_since(t)
                seen: list[str] = []
                try:
                    response = yield from self._stages(req, timings, staged, t_all, seen)
                finally:
                    path = seen[0] if seen else None
            except Exception as exc:
                if isinstance(exc, HybridEsError):
                    exc.trace_id = exc.trace_id or trace_id
                    if self.on_error is not None:
                        _notify(self.on_error, principal, query, exc, dict(timings))
                telemetry.record_search({**timings, **staged}, fusion_path=path, error=exc)
                raise
            fallback = fallback_kind(response.fusion_path, response.fusion_reason)
            root.set(
                fusion_path=response.fusion_path,
                fallback=fallback,
                hits=len(response.hits),
                candidates=response.candidates,
                reranked=response.reranked,
            )
            telemetry.record_search(
                {**timings, **staged}, fusion_path=response.fusion_path, fallback=fallback
            )
        if self.on_response is not None:
            _notify(self.on_response, principal, response, req.text)
        return response

    def _stages(
        self,
        req: SearchRequest,
        timings: dict[str, float],
        staged: dict[str, float],
        t_all: float,
        seen: list[str],
    ) -> Steps[SearchResponse]:
        """retrieve -> read the records -> authorize -> rerank -> assemble, each in its span;
        ``seen`` gets the fusion path once the legs have run (for the error metrics)."""
        with telemetry.span("hybrid_es.retrieve") as sp:
            retrieved = yield from self.retrieve_steps(req, timings)
            seen.append(retrieved.path)
            sp.set(
                fusion_path=retrieved.path, fallback=fallback_kind(retrieved.path, retrieved.reason)
            )
        with telemetry.span("hybrid_es.read_records") as sp:
            retrieved.candidates = yield from self.read_records_steps(
                req, retrieved.candidates, timings
            )
            sp.set(candidates=len(retrieved.candidates))
        t = time.perf_counter()
        with telemetry.span("hybrid_es.authorize"):
            authorized = authorize_stage(req, retrieved.candidates)
        staged["authorize"] = ms_since(t)
        with telemetry.span("hybrid_es.rerank", reranker=self.reranker is not None):
            reranker = self.reranker

            def rerank() -> Reranked:
                return rerank_stage(req, authorized, reranker, timings)

            # Only a cross-encoder that will run is a computation to hand off.
            reranked = (yield Compute(rerank)) if req.rerank and reranker else rerank()
        t = time.perf_counter()
        timings["total"] = ms_since(t_all)
        with telemetry.span("hybrid_es.assemble"):
            response = assemble(req, retrieved, authorized, reranked, timings, self.hash_key)
        staged["assemble"] = ms_since(t)
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
        by document id and chunk number (``retrieval.records``). The same policy as a search
        decides what is listed. Raises FilterError for a bad filter (before any request) and
        BadQueryError when more than ``limit`` (at most 10,000) records match."""
        listing = self._listing(principal, filters, scope, now)
        if listing is None:
            return []
        index, policy = listing
        body = records_mod.listing_body(policy, doc_ids=doc_ids, chunk_ids=chunk_ids)
        return records_mod.read(self.door, index, policy, body, limit)

    def count_records(
        self,
        principal: Principal,
        *,
        filters: Mapping[str, Any] | None = None,
        scope: RequestScope | None = None,
        now: datetime | None = None,
    ) -> int:
        """How many records :meth:`records` would list (without a limit)."""
        listing = self._listing(principal, filters, scope, now)
        if listing is None:
            return 0
        index, policy = listing
        return records_mod.count(self.door, index, policy, records_mod.listing_body(policy))

    def _listing(
        self,
        principal: Principal,
        filters: Mapping[str, Any] | None,
        scope: RequestScope | None,
        now: datetime | None,
    ) -> tuple[str, dict[str, Any]] | None:
        """The caller's index and policy (the filter inside it), or None for a tenant with no
        corpus yet: it has nothing to list."""
        narrowing = translate_filter(filters, self.filterable_fields)
        try:
            self.corpus_state.watermark(principal.tenant)
        except UnknownTenantError:
            return None
        index = self.index_for(principal)
        if narrowing is not None:
            self.checks.check_filter_mapped(self.client, index, filters, self.filterable_fields)
        now = now or datetime.now(UTC)
        return index, policy_filter(principal, scope or RequestScope(), now, narrowed_by=narrowing)

    def _prepared(self, principal: Principal) -> bool:
        """Whether :meth:`prepare` has checked this caller's tenant and index before (then it
        sends no request, unless a filter names a field the index's mapping lacks)."""
        return (
            principal.tenant in self._known_tenants
            and self.index_for(principal) in self._model_checked
        )

    def retrieve(self, req: SearchRequest, timings: dict[str, float]) -> Retrieved:
        """Both legs (and the native fusion where it runs) in one round trip, fused."""
        return effects.run(self.retrieve_steps(req, timings), self._run_msearch)

    def retrieve_steps(self, req: SearchRequest, timings: dict[str, float]) -> Steps[Retrieved]:
        """:meth:`retrieve` as a generator of effects."""
        path, reason = self._path()
        embedder = self.embedder_for(req.index)
        if path not in ("bm25-only", "dense-only"):
            covered, script = covers(embedder, req.text)
            if not covered:
                path, reason = (
                    "bm25-only",
                    (
                        f"the embedder {embedder.model_id} was not trained on {script} text: "
                        "the BM25 leg alone answers"
                    ),
                )
        vector = None
        if path != "bm25-only":
            if needs_loading(embedder):  # a first load is timed apart from embed
                loaded = yield Compute(lambda: ensure_loaded(embedder))
                timings["model_load"] = round(timings.get("model_load", 0.0) + loaded, 3)
            t = time.perf_counter()
            with telemetry.span("hybrid_es.embed"):
                vector = yield Compute(
                    lambda: self.query_vector(req.principal.tenant, req.text, embedder)
                )
            timings["embed"] = ms_since(t)
        try:
            retrieved = yield from self._retrieve(path, reason, vector, req, timings)
        except CapabilityMissingError:
            if self.fusion != "auto" or not path.startswith("native"):
                raise
            self._native[self.fusion_method] = (False, "refused at query time")
            reason = "auto: native fusion refused at query time, fused client-side"
            retrieved = yield from self._retrieve(client_side(path), reason, vector, req, timings)
        retrieved.truncated = self.truncated(req.text, path, embedder)
        retrieved.embedder = embedder.model_id if vector is not None else None
        return retrieved

    def head_size(self, req: SearchRequest) -> int:
        """How many fused candidates the later stages read: the hits asked for, or the rerank
        pool when a reranker will score it."""
        if req.rerank and self.reranker is not None:
            return max(req.top_k, req.rerank_depth)
        return req.top_k

    def legs_carry_records(self, req: SearchRequest) -> bool:
        """Whether the legs return the records themselves: when the head is the whole fusion
        window (an evaluation's top 100), a second read would fetch every candidate anyway, one
        round trip later. Otherwise the legs return ids and scores (``queries.search_body``)."""
        return self.head_size(req) >= self.params.window

    def read_records(
        self, req: SearchRequest, candidates: list[Candidate], timings: dict[str, float]
    ) -> list[Candidate]:
        """The fused head with its records (see :meth:`read_records_steps`)."""
        return effects.run(self.read_records_steps(req, candidates, timings), self._run_msearch)

    def read_records_steps(
        self, req: SearchRequest, candidates: list[Candidate], timings: dict[str, float]
    ) -> Steps[list[Candidate]]:
        """The fused head with its records (``queries.records_body``: by key, under the same
        policy as the legs), in fused order. A candidate whose record is no longer in the
        caller's scope when it is read (a new version, a deletion between the two requests) is
        left out; nothing past the head is read. The time counts as retrieval."""
        head = candidates[: self.head_size(req)]
        if not head or self.legs_carry_records(req):
            return head
        t = time.perf_counter()
        body = records_body([c.key for c in head], req.policy)
        (resp,), _ = yield Msearch([body], req)
        timings["retrieval"] = round(timings.get("retrieval", 0.0) + ms_since(t), 3)
        # By index and key: an alias over two indices (a reindex in progress) may hold a key
        # twice, and the candidate is the record its leg scored.
        found = {(h["_index"], h["_id"]): h for h in resp["hits"]["hits"]}
        kept = []
        for c in head:
            hit = found.get((c.index, c.key))
            if hit is None:
                log.debug("record %s left the caller's scope before it was read", c.key)
                continue
            c.source = hit.get("_source", {})
            c.chunk_id = local_id(hit)
            kept.append(c)
        return kept

    def truncated(
        self, text: str, path: FusionPath, embedder: Embedder | None = None
    ) -> tuple[str, ...]:
        """The legs of ``path`` that read only the start of the cleaned query ``text``:
        ``sparse`` past ``params.max_query_terms`` terms (``queries.sparse_query``), ``dense``
        past the embedder's token window (where the embedder says so: its ``truncates``)."""
        legs: list[str] = []
        if path != "dense-only" and cap_terms(text, self.params.max_query_terms)[1]:
            legs.append("sparse")
        truncates = getattr(embedder or self.embedder, "truncates", None)
        if path != "bm25-only" and callable(truncates) and truncates(text):
            legs.append("dense")
        return tuple(legs)

    def _bodies(
        self, path: FusionPath, vector: list[float] | None, req: SearchRequest
    ) -> tuple[dict[str, dict[str, Any]], dict[str, Any] | None]:
        """The legs' bodies by name, and the native fusion's body."""
        d = self.dialect
        legs: dict[str, dict[str, Any]] = {}
        if path != "dense-only":
            legs["sparse"] = d.sparse_body(req.text, req.policy, self.params)
        if vector is not None:
            legs["dense"] = d.dense_body(vector, req.policy, self.params)
        native = None
        if path in ("native-rrf", "native-linear") and vector is not None:
            method = "rrf" if path == "native-rrf" else "linear"
            native = d.native(
                req.text,
                vector,
                req.policy,
                self.params,
                method,  # type: ignore[arg-type]
                fusion_mod.fixed_alpha(self.alpha),
                self.client.rrf_rank_constant_at or "parameters",
            )
            if self._dls_suggest:
                native["suggest"] = dls_suggest()
        if self.legs_carry_records(req):
            for body in [*legs.values(), *([native] if native else [])]:
                body["_source"] = {"excludes": list(SOURCE_EXCLUDES)}
        return legs, native

    def query_vector(self, tenant: str, text: str, embedder: Embedder | None = None) -> list[float]:
        """The embedding of the cleaned query ``text`` by ``embedder`` (default: the default
        embedder), from the query vector cache when this tenant asked it of that model before."""
        return self.vectors.vector(tenant, text, embedder or self.embedder)

    def _run_msearch(self, effect: Msearch) -> tuple[list[dict[str, Any]], str]:
        return self._msearch(effect.searches, effect.req)

    def _msearch(
        self, searches: list[dict[str, Any]], req: SearchRequest
    ) -> tuple[list[dict[str, Any]], str]:
        """Bodies in one ``_msearch`` through the chunks door (every body checked first); the
        responses, and a keyed digest of what was sent."""
        pairs = [(req.index, body) for body in searches]
        items = self.door.msearch(pairs, req.policy, opaque_id=req.trace_id or None)
        return self.answered(items, pairs)

    def answered(
        self, items: list[dict[str, Any]], pairs: list[tuple[str, dict[str, Any]]]
    ) -> tuple[list[dict[str, Any]], str]:
        """The ``_msearch`` responses to ``pairs`` (index, body), checked (``answers``: never a
        partial answer), and the keyed digest of what was sent. Shared by the blocking and the
        async searcher."""
        check_answers(items, url=self.url, dls_suggest=self._dls_suggest)
        return items, sent_digest(self.hash_key, pairs)

    def _retrieve(
        self,
        path: FusionPath,
        reason: str,
        vector: list[float] | None,
        req: SearchRequest,
        timings: dict[str, float],
    ) -> Steps[Retrieved]:
        legs, native = self._bodies(path, vector, req)
        names = list(legs)
        t = time.perf_counter()
        with telemetry.span("hybrid_es.legs", fusion_path=path, legs=len(names)):
            try:
                responses, digest = yield Msearch(_searches(legs, native), req)
            except HybridUnderDls:
                # OpenSearch 2.19 refuses a hybrid query for a document-level-security user
                # (neural-search#1303); a suggest section is the known workaround, and DLS still
                # holds (tests/security/test_opensearch_dls.py proves both). Used from now on.
                self._dls_suggest = True
                legs, native = self._bodies(path, vector, req)
                responses, digest = yield Msearch(_searches(legs, native), req)
        timings["retrieval"] = ms_since(t)
        fused_resp = responses.pop(0) if native is not None else None
        if fused_resp is not None and fuses_per_shard(self.client):
            shards = int(fused_resp.get("_shards", {}).get("total", 1))
            if shards > 1:
                path, reason = per_shard(path, reason, shards, self.fusion)
                if not path.startswith("native"):
                    fused_resp = None
        hits = {n: r["hits"]["hits"] for n, r in zip(names, responses, strict=True)}
        sparse_hits, dense_hits = hits.get("sparse", []), hits.get("dense", [])
        leg_ids = {n: tuple(local_id(h) for h in hs) for n, hs in hits.items()}

        t = time.perf_counter()
        with telemetry.span("hybrid_es.fusion", fusion_path=path) as sp:
            candidates, weight = self._fuse(path, sparse_hits, dense_hits, fused_resp)
            sp.set(candidates=len(candidates))
        timings["fusion"] = ms_since(t)
        return Retrieved(
            path,
            reason,
            candidates,
            {"sparse": (), "dense": (), **leg_ids},
            digest,
            dense_weight=weight,
        )

    def _fuse(
        self,
        path: FusionPath,
        sparse_hits: list[dict[str, Any]],
        dense_hits: list[dict[str, Any]],
        native: dict[str, Any] | None,
    ) -> tuple[list[Candidate], float | None]:
        return fuse_legs(
            path,
            sparse_hits,
            dense_hits,
            native,
            alpha=self.alpha,
            rank_constant=self.params.rank_constant,
            window=self.params.window,
        )


def _searches(
    legs: dict[str, dict[str, Any]], native: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The native fusion's body (when there is one) first, then the legs in order."""
    return ([native] if native is not None else []) + list(legs.values())


def _notify(hook: Callable[..., None], *args: Any) -> None:
    # Tracing and metrics hooks observe; they must never turn an answer into an error.
    try:
        hook(*args)
    except Exception:
        log.exception("a search hook failed; the search result is unaffected")
