"""The front door: one hybrid-es deployment on a cluster, assembled from its settings.

:class:`HybridEs` is what an application, the command line and the framework adapters start
from. Given :class:`~hybrid_es.settings.Settings` (default: the ``HYBRID_ES_*`` environment) it
builds, on first use, each part a deployment has and wires them to each other once: the engine
(:func:`~hybrid_es.cluster.engine.connect`), the embedders (one fixed model, or each index's own),
the cross-encoder, the trace writer (when ``HYBRID_ES_TRACES`` is on), the searcher, the
ingestor, the packet service and the async searcher. :meth:`HybridEs.close` closes what it made,
flushing the traces::

    from hybrid_es import HybridEs, Principal

    with HybridEs() as hes:
        hes.ingest(documents, Principal(tenant="acme", user_id="loader", roles=(WRITER_ROLE,)))
        answer = hes.search("KYO-H12 April rate", Principal(tenant="acme", user_id="ana"))

Every operation takes the caller's principal; the parts it hands out (``searcher``,
``ingestor``, ``packets``, ``engine``) are the library's own classes, for what the front door
does not say itself. Building nothing until asked for, a program that only searches loads no
ingest code, and ``HybridEs(settings).engine`` connects and loads no model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

from hybrid_es.cluster.bootstrap import BootstrapReport, bootstrap
from hybrid_es.cluster.capabilities import Capabilities, probe
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, as_engine, connect
from hybrid_es.cluster.generations import Generation, adopt
from hybrid_es.cluster.source_connection import SourceSettings, connect_source
from hybrid_es.encoders.embedder import Embedder, make_embedder
from hybrid_es.encoders.embedder_choice import Embedders, make_embedders, models_served
from hybrid_es.encoders.reranker import CrossEncoderReranker, Reranker
from hybrid_es.errors import ConfigurationError, PolicyViolationError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import DEFAULT_ACLS, Ingestor, IngestReport
from hybrid_es.ingest.rebuild import Rebuild, RebuildReport
from hybrid_es.ingest.run import IngestRun, PathIngest, ingest_path
from hybrid_es.ingest.sync import IndexSource, SyncHow, SyncRun, sync_index
from hybrid_es.ingest.sync_workers import SliceJob, sync_workers
from hybrid_es.models import Principal, RequestScope, SearchRequest, SearchResponse
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore, owner_secret
from hybrid_es.retrieval.async_searcher import AsyncHybridSearcher
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.traces.hooks import SearchTracer
from hybrid_es.traces.wiring import attach_traces, hash_key, tracer_of

__all__ = ["HybridEs"]

_FROM_SETTINGS: Any = object()
"""``reranker``'s default: the cross-encoder ``HYBRID_ES_RERANKER_MODEL`` names, if any."""


class HybridEs:
    """One deployment: its settings, and the parts built from them on first use (module
    docstring).

    ``settings``: the deployment's (default ``Settings()``, the environment's). ``client``: an
    :class:`~hybrid_es.cluster.engine.Engine`, or an elasticsearch-py / opensearch-py client
    (default: :func:`~hybrid_es.cluster.engine.connect`). ``embedder``: an embedder, a set, or a
    name (default ``HYBRID_ES_EMBEDDER``). ``reranker``: a reranker, or None for none (default:
    ``HYBRID_ES_RERANKER_MODEL``'s). ``traces``: write traces (default ``HYBRID_ES_TRACES``);
    ``tracer``: a tracer to share instead of a writer of this deployment's own (the command
    line shares one per process). ``searcher_options``: any other
    :class:`~hybrid_es.retrieval.searcher.HybridSearcher` keyword, over what the settings say
    (``fusion``, ``index``, ``pipeline``, ...).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        client: Engine | Any = None,
        embedder: Embedder | Embedders | str | None = None,
        reranker: Reranker | None = _FROM_SETTINGS,
        traces: bool | None = None,
        tracer: SearchTracer | None = None,
        **searcher_options: Any,
    ) -> None:
        self.settings = settings if settings is not None else Settings()
        self._client = client
        self._embedder = embedder
        self._reranker = reranker
        self._traces = self.settings.traces if traces is None else traces
        self._tracer = tracer
        self._searcher_options = searcher_options
        self._async: AsyncHybridSearcher | None = None
        self._closed: dict[str, Any] | None = None

    # -- the parts, each built once, on first use ---------------------------------------------

    @cached_property
    def engine(self) -> Engine:
        """The cluster, probed for its flavour (Elasticsearch or OpenSearch)."""
        if self._client is None:
            return connect(self.settings)
        return as_engine(self._client, url=self.settings.redacted_url())

    @cached_property
    def embedders(self) -> Embedders:
        """The embedder of each chunks index (the searcher's and the ingestor's: one set)."""
        given = self._embedder
        if given is None or isinstance(given, str):
            s = self.settings
            return make_embedders(
                given or s.embedder, query_threads=s.embed_threads, runtime=s.embed_runtime
            )
        return Embedders.of(given)

    @cached_property
    def reranker(self) -> Reranker | None:
        """The cross-encoder that reorders a search's fused head, if the deployment has one."""
        if self._reranker is not _FROM_SETTINGS:
            return self._reranker
        s = self.settings
        if not s.reranker_model:
            return None
        return CrossEncoderReranker(
            s.reranker_model,
            precision=s.reranker_precision,  # type: ignore[arg-type]
            max_length=s.reranker_max_length,
            threads=s.reranker_threads,
        )

    @cached_property
    def searcher(self) -> HybridSearcher:
        """The blocking searcher, tracing its searches when traces are on."""
        s = self.settings
        options: dict[str, Any] = {
            "layout": s.layout(),
            "hash_key": hash_key(s),
            "fusion": s.fusion,
            "fusion_method": s.fusion_method,
            "alpha": s.fusion_alpha,
            "embed_batch": s.embed_batch,
            "filterable_fields": s.filterable_fields,
            "reranker": self.reranker,
            "url": s.redacted_url(),
            "query_cache_size": s.query_cache_size,
            "params": RetrievalParams(
                max_query_chars=s.max_query_chars, max_query_terms=s.max_query_terms
            ),
            **self._searcher_options,
        }
        searcher = HybridSearcher(self.engine, self.embedders, **options)
        if self._traces or self._tracer is not None:
            attach_traces(searcher, s, tracer=self._tracer)
        return searcher

    @cached_property
    def ingestor(self) -> Ingestor:
        """The writer of this deployment's chunks indices (the searcher's embedders)."""
        s = self.settings
        layout = s.layout()
        return Ingestor(
            self.engine,
            self.embedders,
            layout=layout,
            corpus_state=CorpusState(self.engine, layout.corpus_state),
            default_acl=DEFAULT_ACLS[s.default_acl],
            url=s.redacted_url(),
        )

    @cached_property
    def packets(self) -> PacketService:
        """Evidence packets over the searcher, traced as its searches are."""
        s = self.settings
        tracer = tracer_of(self.searcher)
        store = PacketStore(self.engine, s.packets_index, owner_secret=owner_secret(s))
        return PacketService(
            self.searcher,
            store,
            ttl=timedelta(minutes=s.packet_ttl_minutes),
            on_event=tracer.packet_event if tracer is not None else None,
        )

    @property
    def async_searcher(self) -> AsyncHybridSearcher:
        """The searcher on the event loop (an async client to the same cluster, made on first
        use; closed by :meth:`aclose`)."""
        if self._async is None:
            self._async = AsyncHybridSearcher.from_searcher(self.searcher, self.settings)
        return self._async

    # -- what an application does -------------------------------------------------------------

    def search(
        self,
        request: SearchRequest | str,
        principal: Principal | None = None,
        scope: RequestScope | None = None,
        **options: Any,
    ) -> SearchResponse:
        """One hybrid search (:meth:`HybridSearcher.search`): a
        :class:`~hybrid_es.models.SearchRequest`, or ``search(question, principal, scope,
        top_k=..., filters=...)``."""
        return self.searcher.search(request, principal, scope, **options)

    async def asearch(
        self,
        request: SearchRequest | str,
        principal: Principal | None = None,
        scope: RequestScope | None = None,
        **options: Any,
    ) -> SearchResponse:
        """:meth:`search`, awaited on the async searcher."""
        return await self.async_searcher.search(request, principal, scope, **options)

    def ingest(
        self, documents: Iterable[Document], principal: Principal, **options: Any
    ) -> IngestReport:
        """Write ``documents`` for ``principal``'s tenant (:meth:`Ingestor.ingest`: ``now``,
        ``progress``, ``raise_on_error``), under the tenant's write authority."""
        return self.ingestor.ingest(documents, principal, **options)

    def ingest_path(
        self,
        path: str | Path,
        principal: Principal,
        how: PathIngest | None = None,
        *,
        on_total: Callable[[int], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> IngestRun:
        """Load a JSONL file, a BEIR folder or a folder of text files and ingest it for
        ``principal`` (:func:`~hybrid_es.ingest.run.ingest_path`; ``how``: the format, chunking,
        contextualizer and field mapping; ``on_total`` hears how many documents loaded,
        ``progress`` how many more were written)."""
        how = how or PathIngest(default_acl=DEFAULT_ACLS[self.settings.default_acl])
        return ingest_path(
            self.engine,
            self.embedders,
            Path(path),
            principal,
            layout=self.settings.layout(),
            how=how,
            on_total=on_total,
            progress=progress,
        )

    def source_engine(self, index: str, source: SourceSettings | None = None) -> Engine:
        """The engine that reads the source index ``index``: from ``source`` (default: the
        ``HYBRID_ES_SOURCE_*`` environment), its own client where they name a source URL, else
        this deployment's (``cluster.source_connection``: a source credential never reaches
        this cluster, nor this deployment's the source's). ConfigurationError for an ``index``
        that could reach this deployment's own indices."""
        settings = source if source is not None else SourceSettings()
        return connect_source(settings, self.engine, self.settings.layout(), index)

    def sync_index(
        self,
        source: IndexSource | str,
        principal: Principal,
        how: SyncHow | None = None,
        *,
        source_settings: SourceSettings | None = None,
        workers: int = 1,
        on_total: Callable[[int], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> SyncRun:
        """Sync an existing index into ``principal``'s tenant
        (:func:`~hybrid_es.ingest.sync.sync_index`: a full pass first, then only the changes;
        ``how``: the slice this process takes, chunking, ``full``, ``dry_run``). ``workers`` > 1
        reads every slice in processes of their own (``ingest.sync_workers``; ``how.slices`` is
        then ``workers``), each connecting from this deployment's settings and
        ``source_settings``. A name for ``source`` reads every field by its own name."""
        src = IndexSource(source) if isinstance(source, str) else source
        how = how or SyncHow(default_acl=DEFAULT_ACLS[self.settings.default_acl])
        if workers > 1:
            embedder = self._embedder if self._embedder is not None else self.settings.embedder
            if not isinstance(embedder, str | Embedder):
                embedder = self.settings.embedder
            job = SliceJob(
                self.settings,
                source_settings if source_settings is not None else SourceSettings(),
                embedder,
                src,
                principal,
                how,
            )
            return sync_workers(job, workers, on_total=on_total, progress=progress)
        return sync_index(
            self.source_engine(src.index, source_settings),
            self.engine,
            self.embedders,
            src,
            principal,
            layout=self.settings.layout(),
            how=how,
            on_total=on_total,
            progress=progress,
        )

    def delete(self, principal: Principal, doc_id: str) -> int:
        """Mark ``principal``'s document ``doc_id`` deleted (:meth:`Ingestor.delete_document`);
        how many chunks, 0 for one that does not exist or that it may not delete."""
        return self.ingestor.delete_document(principal, doc_id)

    def rebuild(
        self,
        principal: Principal,
        *,
        embedder: Embedder | str | None = None,
        action: str = "build",
        **options: Any,
    ) -> RebuildReport | list[str] | Generation:
        """Rebuild ``principal``'s tenant's chunks index online as its next generation
        (``ingest.rebuild``): ``action`` ``build`` (the default: build, check and switch;
        ``options``: ``switch_now``, ``switch_wait``, ``progress``, ``on_total``, ``samples``),
        ``switch-back``, ``drop`` (the generations not served) or ``adopt`` (put an earlier
        release's index behind an alias first). ``embedder``: the new generation's model (an
        embedder or a name; default: the one the index records). ``principal`` must hold the
        tenant's writer role."""
        s = self.settings
        if isinstance(embedder, str):
            embedder = make_embedder(
                embedder, query_threads=s.embed_threads, runtime=s.embed_runtime
            )
        layout = s.layout()
        work = Rebuild(
            self.engine,
            layout,
            self.ingestor.corpus_state,
            embedder=embedder,
            recorded=lambda model: self.embedders.recorded(layout.chunks, model),
        )
        if action == "build":
            return work.run(principal, **options)
        if action == "switch-back":
            return work.switch_back(principal, **options)
        if action == "drop":
            return work.drop(principal)
        if action == "adopt":
            if not principal.is_writer:
                raise PolicyViolationError(
                    f"{principal.user_id!r} may not adopt tenant {principal.tenant!r}'s index",
                    hint="run it as the tenant's writer (hybrid-es reindex does)",
                )
            return adopt(self.engine, layout.chunks_for(principal.tenant))
        raise ConfigurationError(
            f"unknown rebuild action {action!r}", hint="build, switch-back, drop or adopt"
        )

    def bootstrap(self, **options: Any) -> BootstrapReport:
        """Install this deployment's templates and indices (``cluster.bootstrap.bootstrap``:
        ``force``, ``check``, ``tenants``, ``roles``), and report what each existing index
        needs, its recorded model checked against the configured embedder."""
        options.setdefault("models", models_served(self.settings.embedder))
        return bootstrap(self.engine, self.capabilities(), self.settings, **options)

    def capabilities(self, *, writes: bool = False) -> Capabilities:
        """What the cluster can do for this deployment (read-only probes, unless ``writes``)."""
        s = self.settings
        return probe(
            self.engine,
            writes=writes,
            layout=s.layout(),
            fusion=s.fusion,
            fusion_method=s.fusion_method,
            fusion_alpha=s.fusion_alpha,
        )

    def warm_up(self, *, rerank: bool = True) -> dict[str, float]:
        """Load the searcher's models now (:meth:`HybridSearcher.warm_up`), so that the first
        search does not pay for them."""
        return self.searcher.warm_up(rerank=rerank)

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> dict[str, Any]:
        """Close what this deployment made, once: the searcher (flushing its trace writer: the
        writer's final counters under ``traces`` when it had one of its own). The engine's
        connections are the client's; an async searcher needs :meth:`aclose`."""
        if self._closed is None:
            self._closed = self.searcher.close() if "searcher" in self.__dict__ else {}
        return self._closed

    async def aclose(self) -> dict[str, Any]:
        """Close the async searcher's client too, then everything :meth:`close` closes."""
        if self._async is not None:
            await self._async.client.close()
            self._async.executor.shutdown(wait=False)
            self._async = None
        return self.close()

    def __enter__(self) -> HybridEs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> HybridEs:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
