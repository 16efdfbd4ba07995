"""Ingestion: documents -> chunks with context headers -> embeddings -> bulk index.

Every ingest runs for one caller (a :class:`~hybrid_es.models.Principal`) and writes only that
caller's tenant: a document that names another tenant is refused, and every chunk is stored
under a key that holds the tenant (``hybrid_es.identity``), so no write of one tenant can land on
another's record, however the writes interleave. Chunk keys are otherwise deterministic
(tenant, document, version, chunk number), so a retried, re-run or killed and restarted ingest
can never duplicate a chunk. Each chunk stores three SHA-256 based markers: the
document's hash (``doc_hash``), the hash of its own raw text (``chunk_hash``) and the prompt
version of its header (``header_prompt_version``). A document is skipped, before any embedding or
model call, only when every chunk it would produce is already stored under the same id with the
same hashes, header version and embedding model, and nothing else of that version is stored: so a
partly written document (an ingest killed mid-way, an item that failed) is written again in full,
and a changed one regenerates all of its chunks and headers and removes the ones that vanished.

A new version supersedes the old one (validity closed, ``superseded_by`` set) instead of
overwriting it. The tenant's corpus watermark moves once per run that wrote something, after the
index refresh (``hybrid_es.cluster.corpus_state`` explains the bracket that makes this crash-safe).
A document without an ACL gets the ingest's default ACL (fail closed unless configured), and the
report counts those documents. Every failed bulk item, and every document the contextualizer
failed on, is reported with its reason. Calls to the cluster are retried as a whole when it
cannot be reached only (never on an answer, nor on a timeout); 429s inside a bulk are retried by
the bulk helper with back-off. Every call goes through an :class:`~hybrid_es.cluster.engine.Engine`,
so the same code writes to Elasticsearch and OpenSearch.
"""

from __future__ import annotations

# One module for the write path: the Ingestor's flow and its crash-safety bracket (corpus state),
# the per-batch plan and the bulk writes share state and invariants that read best together.
import contextlib
import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from tenacity import (
    retry,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from hybrid_es import telemetry
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.cluster.retries import while_shards_start
from hybrid_es.cluster.templates import vector_dims, vector_field_problem
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import SAMPLE, Embedders
from hybrid_es.errors import (
    BulkIndexError,
    ConfigurationError,
    EngineUnavailableError,
    ModelError,
    SearchTimeoutError,
    translate_es_error,
)
from hybrid_es.identity import chunk_id, chunk_key, local_chunk_id
from hybrid_es.ingest.chunking import Chunk, chunk_document, counter_for
from hybrid_es.ingest.contextual import (
    Contextualizer,
    ContextUsage,
    ExtractiveContextualizer,
    Header,
)
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import build_chunk_records, plan_document
from hybrid_es.metadata_fields import FilterableFields, fields_from_mapping, filter_values
from hybrid_es.models import EVERYONE, Principal
from hybrid_es.retrieval.door import ChunksDoor, tenant_body, tenant_policy
from hybrid_es.tenancy import IndexLayout

__all__ = ["IngestReport", "Ingestor", "build_chunk_records", "chunk_id", "plan_document"]

DEFAULT_ACLS: dict[str, tuple[str, ...]] = {"none": (), "everyone": (EVERYONE,)}
"""What ``HYBRID_ES_DEFAULT_ACL`` names: the ACL groups of a document that names no ACL."""

Chunker = Callable[[Document], list[Chunk]]
MAX_CONSECUTIVE_DOCUMENT_FAILURES = 5
"""After this many documents in a row fail in the contextualizer, the service is taken to be down
and the ingest stops (rather than failing every remaining document slowly)."""

_F = TypeVar("_F", bound=Callable[..., Any])


def _unanswered(exc: BaseException) -> bool:
    """The request got no answer at all (refused, unreachable, timed out): an Engine's
    EngineUnavailableError, or the transport error of either client where the bulk helper is
    called raw (``translate_es_error`` is the one place that knows the clients' types, and
    opensearch-py, an optional extra, only when it is installed). An answer, even a 5xx, is not
    this: it carries its status."""
    err = translate_es_error(exc)
    return isinstance(err, EngineUnavailableError) and err.status is None


def _unreachable(exc: BaseException) -> bool:
    """The cluster could not be reached: worth trying the whole call again. A timeout is not
    (the cluster may still be working on the request)."""
    return _unanswered(exc) and not isinstance(translate_es_error(exc), SearchTimeoutError)


def _on_connection_failure(fn: _F) -> _F:
    """Retry a whole call when the cluster cannot be reached; never on an answer (4xx/5xx)."""
    wrapped = retry(
        retry=retry_if_exception(_unreachable),
        stop=stop_after_attempt(4),
        wait=wait_exponential(multiplier=0.5, max=8),
        reraise=True,
    )(fn)
    return cast(_F, wrapped)


@dataclass
class IngestReport:
    documents: int = 0
    chunks: int = 0
    """Chunks written (embedded and indexed) by this run."""
    skipped_unchanged: int = 0
    superseded: int = 0
    removed_chunks: int = 0
    embedded: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    """Bulk items that failed: op, id, status, reason."""
    failed_documents: list[dict[str, Any]] = field(default_factory=list)
    """Documents not written at all: doc_id, tenant, reason."""
    default_acl: int = 0
    """Documents that named no ACL and got the ingest's default ACL."""
    watermarks: dict[str, int] = field(default_factory=dict)
    context: ContextUsage = field(default_factory=ContextUsage)
    seconds: float = 0.0
    embedder: str = ""
    """The model that embeds this index's chunks (``HYBRID_ES_EMBEDDER=auto``: the one the index
    records, or chose from this run's first documents)."""

    @property
    def ok(self) -> bool:
        return not self.failed and not self.failed_documents


class Ingestor:
    """Writes documents into a deployment's chunks indices. See the module docstring for the
    guarantees.

    ``layout`` names the indices (by tenancy mode); ``index`` instead puts every tenant into one
    given chunks index (tests, evaluation collections). ``default_acl`` is the ACL of documents
    that name none (``()``: nobody; ``("*",)``: every user of the tenant). ``contextualizer``
    defaults to the extractive one; ``chunker`` to :func:`chunk_document` with the embedder's own
    token count (:func:`~hybrid_es.ingest.chunking.counter_for`).
    """

    def __init__(
        self,
        client: Engine | Any,
        embedder: Embedder | Embedders,
        *,
        index: str | None = None,
        layout: IndexLayout | None = None,
        corpus_state: CorpusState | None = None,
        contextualizer: Contextualizer | None = None,
        chunker: Chunker | None = None,
        chunk_size: int = 200,
        overlap: int = 40,
        batch_size: int = 64,
        default_acl: tuple[str, ...] = (),
        url: str = "",
    ) -> None:
        if chunk_size < 16 or not 0 <= overlap < chunk_size // 2:
            raise ConfigurationError(
                f"need chunk_size >= 16 and 0 <= overlap < chunk_size/2, got {chunk_size}/{overlap}"
            )
        self._url = url
        self.client = client
        self.embedders = Embedders.of(embedder)
        """One fixed embedder, or ``auto``: chosen per index from its first documents' scripts
        (``encoders.embedder_choice``)."""
        self.layout = IndexLayout.fixed(index) if index else (layout or IndexLayout())
        self.client.guard(self.layout.chunks)
        self.corpus_state = corpus_state or CorpusState(self.client, self.layout.corpus_state)
        self.contextualizer: Contextualizer = contextualizer or ExtractiveContextualizer()
        self.chunk_size = chunk_size
        self.overlap = overlap
        self.batch_size = batch_size
        self.default_acl = tuple(default_acl)
        self._chunker = chunker
        self._chunkers: dict[str, Chunker] = {}
        self._embedder_of: dict[str, Embedder] = {}
        self._consecutive_failures = 0
        self._checked: set[str] = set()
        self._filterable: dict[str, FilterableFields] = {}
        """Per index, the filterable metadata fields its mapping holds (``meta_filter``)."""

    @property
    def client(self) -> Engine:
        """The engine written to (a raw elasticsearch-py or opensearch-py client is wrapped)."""
        return self._client

    @client.setter
    def client(self, client: Engine | Any) -> None:
        self._client = as_engine(client, url=self._url)
        self._door = ChunksDoor(self._client)
        if hasattr(self, "layout"):
            self._client.guard(self.layout.chunks)

    @property
    def embedder(self) -> Embedder:
        """The fixed embedder, or (``auto``) the one an index gets before it records a model."""
        return self.embedders.default

    @property
    def chunker(self) -> Chunker:
        """The default embedder's chunker (:meth:`chunker_for`)."""
        return self.chunker_for(self.embedder)

    def chunker_for(self, embedder: Embedder) -> Chunker:
        """The chunker given, or :func:`chunk_document` counting ``embedder``'s tokens."""
        if self._chunker is not None:
            return self._chunker
        if embedder.model_id not in self._chunkers:
            count = counter_for(embedder)
            size, overlap = self.chunk_size, self.overlap
            self._chunkers[embedder.model_id] = lambda doc: chunk_document(
                doc, size=size, overlap=overlap, count=count
            )
        return self._chunkers[embedder.model_id]

    def embedder_for(self, index: str) -> Embedder:
        """The embedder that writes ``index`` (as :meth:`check_model` found or chose it)."""
        return self._embedder_of.get(index) or self.embedder

    def index_for(self, principal: Principal) -> str:
        """The chunks index this caller's documents are written to."""
        return self.layout.chunks_for(principal.tenant)

    def check_model(self, index: str, texts: Sequence[str] = ()) -> Embedder:
        """The embedder that writes ``index``; refuses, before any write, an index whose vectors
        come from another model or size, or whose vector field this engine cannot serve
        (OpenSearch: a k-NN engine other than lucene).

        An empty index takes the embedder's model id and dimension into its mapping ``_meta``:
        the fixed one, or (``auto``) the one chosen from ``texts``, the first documents to be
        written (no texts: nothing is chosen or recorded yet). The filterable metadata fields the
        index maps (``meta_filter``, as bootstrap put them) are the ones whose values every
        document writes: the mapping is the declaration.
        """
        if index in self._checked:
            return self.embedder_for(index)
        try:
            props, meta, count = self._mapping(index)
        except Exception as exc:
            raise translate_es_error(exc, url=self.client.url, what=f"checking {index}") from exc
        vector_field = props.get("embedding", {})
        problem = vector_field_problem(self.client.flavor, vector_field)
        if problem is not None and not vector_field:
            problem = "it maps no `embedding` field (no hybrid-es index template applied to it)"
        if problem is not None:
            raise ConfigurationError(
                f"index {index} cannot hold hybrid-es vectors on {self.client.name}: {problem}; "
                "nothing was written",
                hint=f"delete {index} and run `hybrid-es bootstrap`, so that new chunks indices "
                "map `embedding` as a knn_vector with the lucene engine; or ingest into a new "
                "index",
            )
        recorded = meta.get("embedding_model") if count else None
        if recorded is not None:
            embedder, reason = self.embedders.recorded(index, recorded), None
        elif self.embedders.auto and not texts:
            return self.embedder  # nothing to choose from yet: decided by the first write
        else:
            choice = self.embedders.for_documents(texts)
            embedder, reason = choice.embedder, choice.reason
        self._check_dims(index, vector_field, embedder)
        if recorded not in (None, embedder.model_id):
            raise ModelError(
                f"index {index} holds vectors from {recorded}, not {embedder.model_id}; "
                "nothing was written",
                hint="ingest into a new index, or use the index's embedder "
                "(HYBRID_ES_EMBEDDER=auto takes it from the index)",
            )
        filterable = fields_from_mapping(props.get("meta_filter"), index=index)
        if meta.get("embedding_model") != embedder.model_id or reason is not None:
            try:
                self._put_meta(index, embedder, reason)
            except Exception as exc:
                raise translate_es_error(
                    exc, url=self.client.url, what=f"recording the model on {index}"
                ) from exc
        self._filterable[index] = filterable
        self._embedder_of[index] = embedder
        self._checked.add(index)
        return embedder

    def _check_dims(self, index: str, vector_field: dict[str, Any], embedder: Embedder) -> None:
        field_dims = vector_dims(vector_field)
        if field_dims is not None and field_dims != embedder.dims:
            raise ModelError(
                f"index {index} stores {field_dims}-dimensional vectors but the embedder "
                f"{embedder.model_id} makes {embedder.dims}; nothing was written",
                hint="use a matching embedder, or an index template with the right dims",
            )

    @_on_connection_failure
    def _mapping(self, index: str) -> tuple[dict[str, Any], dict[str, Any], int]:
        # False when another writer created it first: that is fine.
        self.client.create_index(index)
        # A concurrent writer may have created the index a moment ago: wait until its primary
        # shard has started, or the count below meets a 503 (returns at once when it has). The
        # wait is both servers' default, 30s: a `timeout` parameter is not sent, because
        # opensearch-py's transport takes one for its own socket timeout.
        self.client.health(index, wait_for_status="yellow")
        # Count before reading the model: every writer records its model before its first
        # write, so a count above zero is always read with that model already in the mapping
        # (read the other way round, a concurrent first writer's records could be counted
        # against the template's default model).
        count = self._count(index)
        (mappings,) = self.client.get_mapping(index).values()
        props = mappings.get("properties", {})
        meta = mappings.get("_meta", {})
        return props, meta, count

    @while_shards_start
    def _count(self, index: str) -> int:
        # A shard that is still starting (a busy or recovering node) answers 503 for a while.
        return self._door.size(index)

    @_on_connection_failure
    def _put_meta(self, index: str, embedder: Embedder, reason: str | None) -> None:
        meta: dict[str, Any] = {
            "embedding_model": embedder.model_id,
            "embedding_dims": embedder.dims,
        }
        if reason is not None:
            meta["embedding_choice"] = reason
        self.client.put_mapping(index, {"_meta": meta})

    @_on_connection_failure
    @while_shards_start
    def _existing(
        self, index: str, tenant: str, doc_ids: list[str]
    ) -> dict[str, list[dict[str, Any]]]:
        """The tenant's chunks already indexed for these documents (any version)."""
        out: dict[str, list[dict[str, Any]]] = {}
        if not doc_ids:
            return out
        body = tenant_body(tenant, {"terms": {"doc_id": doc_ids}}, _source=list(_EXISTING_FIELDS))
        for hit in self._door.scan(index, body, tenant_policy(tenant)):
            out.setdefault(hit["_source"]["doc_id"], []).append(hit["_source"])
        return out

    @_on_connection_failure
    def _refresh(self, index: str) -> None:
        self.client.refresh(index)

    # Stays whole: the crash-safety bracket (repair, begin, batches, finish) must read as one.
    def ingest(
        self,
        docs: Iterable[Document],
        principal: Principal,
        *,
        now: datetime | None = None,
        progress: Callable[[int], None] | None = None,
        raise_on_error: bool = True,
    ) -> IngestReport:
        """Index ``docs`` for ``principal``'s tenant, in batches.

        A document of another tenant is refused (listed in ``failed_documents``), never written.
        Returns the report; with ``raise_on_error`` (the default) raises BulkIndexError listing
        every failed item and document instead, after the rest was written. Raises ModelError for
        an embedding model that does not match the index (before any write), ConfigurationError
        when the contextualizer cannot run at all.
        """
        t0 = time.perf_counter()
        now = now or datetime.now(UTC)
        tenant = principal.tenant
        index = self.index_for(principal)
        # The first documents decide the embedder of a new index (auto): read them ahead.
        stream = iter(docs)
        head = list(itertools.islice(stream, SAMPLE))
        docs = itertools.chain(head, stream)
        embedder = self.check_model(index, script_texts(d for d in head if d.tenant == tenant))
        report = IngestReport(embedder=embedder.model_id)
        self._consecutive_failures = 0
        try:
            # What an earlier run (perhaps killed) wrote must be visible to the skip check, and
            # a run that died before moving the watermark is resolved before this one begins.
            self._refresh(index)
            self.corpus_state.repair(tenant)
        except Exception as exc:
            raise translate_es_error(exc, what=f"preparing {index}") from exc
        run = _Run(self.corpus_state.begin(tenant), index)
        try:
            batch: list[Document] = []
            for doc in docs:
                if doc.tenant != tenant:
                    report.documents += 1
                    report.failed_documents.append(
                        {
                            "doc_id": doc.id,
                            "tenant": doc.tenant,
                            "reason": f"the document names tenant {doc.tenant!r}, but this "
                            f"ingest writes for tenant {tenant!r}; nothing was written",
                        }
                    )
                    continue
                if any(d.id == doc.id for d in batch):
                    # Another version of a document in this batch: the earlier one must be
                    # stored (and visible) before this one is planned against it.
                    self._ingest_batch(batch, now, report, progress, run)
                    batch = []
                    self._refresh(index)
                batch.append(doc)
                if len(batch) >= self.batch_size:
                    self._ingest_batch(batch, now, report, progress, run)
                    batch = []
            if batch:
                self._ingest_batch(batch, now, report, progress, run)
        except BaseException:
            # Settle what was written if the cluster still answers; if not, the marker stays
            # and the next ingest's repair moves the watermark. The original error is raised.
            with contextlib.suppress(Exception):
                self._finish(tenant, run, report)
            raise
        self._finish(tenant, run, report)
        report.seconds = time.perf_counter() - t0
        if raise_on_error and not report.ok:
            failed = report.failed + report.failed_documents
            raise BulkIndexError(
                f"{len(report.failed)} of {report.chunks} chunk writes and "
                f"{len(report.failed_documents)} documents failed",
                failed=failed,
            )
        return report

    def _finish(self, tenant: str, run: _Run, report: IngestReport) -> None:
        """Make the run's writes searchable, then move the watermark (only if it wrote)."""
        try:
            if run.change is not None:
                self._refresh(run.index)
            report.watermarks[tenant] = self.corpus_state.finish(tenant, run.run_id, run.change)
        except Exception as exc:
            # The marker stays; the next ingest's repair moves the watermark for this run.
            raise translate_es_error(exc, what="moving the corpus watermark") from exc
        if run.change is None:
            report.watermarks.pop(tenant, None)

    def _ingest_batch(
        self,
        batch: list[Document],
        now: datetime,
        report: IngestReport,
        progress: Callable[[int], None] | None,
        run: _Run,
    ) -> None:
        """Write one batch (:meth:`_write_batch`) inside the span ``hybrid_es.ingest.batch``:
        its documents, the chunks written, embedded, skipped, superseded and removed, the failed
        items and documents, and the milliseconds of each step; never a document's text."""
        before = _counts(report)
        laps = _Laps()
        with telemetry.span("hybrid_es.ingest.batch", documents=len(batch)) as sp:
            try:
                self._write_batch(batch, now, report, run, laps)
            finally:
                after = _counts(report)
                sp.set(**{k: after[k] - before[k] for k in after}, **laps.ms)
        if progress:
            progress(len(batch))

    def _write_batch(
        self, batch: list[Document], now: datetime, report: IngestReport, run: _Run, laps: _Laps
    ) -> None:
        """Plan every document of the batch, embed what is new or changed, write it all in one
        bulk request, and note the run's change when anything was written."""
        tenant, index = batch[0].tenant, run.index
        self.check_model(index, script_texts(batch))  # decided before the first write
        try:
            existing = self._existing(index, tenant, list(dict.fromkeys(d.id for d in batch)))
        except Exception as exc:
            raise translate_es_error(exc, what="reading existing chunks") from exc
        laps.lap("read")
        work = _BatchWork()
        for doc in batch:
            self._plan_one(
                doc,
                existing.get(doc.id, []),
                now,
                report,
                work,
                self._filterable.get(index, ()),
                embedder=self.embedder_for(index),
            )
        laps.lap("plan")
        actions = self._embedded(work.records, index, tenant, report)
        laps.lap("embed")
        later: list[dict[str, Any]] = [
            *(
                {"_op_type": "update", "_index": index, "_id": chunk_key(tenant, cid), "doc": upd}
                for cid, upd in work.supersede
            ),
            *(
                {"_op_type": "delete", "_index": index, "_id": chunk_key(tenant, cid)}
                for cid in work.deletes
            ),
        ]
        failed_before = len(report.failed)
        self._bulk(actions + later, report)
        laps.lap("bulk")
        if work.changes and len(report.failed) - failed_before < len(actions) + len(later):
            run.change = work.changes[-1]  # something was written: the watermark must move
        if work.changes:
            self.corpus_state.renew(tenant, run.run_id)

    def _plan_one(
        self,
        doc: Document,
        stored: list[dict[str, Any]],
        now: datetime,
        report: IngestReport,
        work: _BatchWork,
        filterable: FilterableFields = (),
        *,
        embedder: Embedder,
    ) -> None:
        """Skip ``doc``, or add its chunk records, supersede updates and deletes to ``work``.
        A value of the wrong type in a ``filterable`` field refuses the document, reported."""
        report.documents += 1
        if doc.acl_unset:
            report.default_acl += 1
            doc = doc.with_acl(self.default_acl)
        try:
            meta_filter = filter_values(doc.metadata, filterable)
        except ValueError as exc:
            report.failed_documents.append(
                {"doc_id": doc.id, "tenant": doc.tenant, "reason": f"{exc}; nothing was written"}
            )
            return
        chunks = self.chunker_for(embedder)(doc)
        plan = plan_document(
            doc,
            chunks,
            stored,
            prompt_version=self.contextualizer.prompt_version,
            embedding_model=embedder.model_id,
            meta_filter=meta_filter,
        )
        if plan.action == "skip":
            report.skipped_unchanged += 1
            return
        headers = self._headers(doc, chunks, report)
        if headers is None:
            return
        work.records.extend(
            build_chunk_records(
                doc,
                now=now,
                embedding_model=embedder.model_id,
                chunks=chunks,
                headers=headers,
                superseded_by=plan.superseded_by,
                meta_filter=meta_filter,
            )
        )
        work.supersede.extend(plan.supersede)
        work.deletes.extend(plan.deletes)
        work.changes.append(plan.change)
        report.superseded += len(plan.supersede)
        report.removed_chunks += len(plan.deletes)

    def _headers(
        self, doc: Document, chunks: list[Chunk], report: IngestReport
    ) -> list[Header] | None:
        """The document's context headers, or None when the contextualizer failed on it (the
        document is reported; after too many failures in a row, the ingest stops)."""
        try:
            headers = self.contextualizer.headers(doc, chunks, report.context)
        except ConfigurationError:
            raise
        except ModelError as exc:
            report.failed_documents.append(
                {"doc_id": doc.id, "tenant": doc.tenant, "reason": str(exc)}
            )
            self._consecutive_failures += 1
            if self._consecutive_failures >= MAX_CONSECUTIVE_DOCUMENT_FAILURES:
                raise ModelError(
                    f"the contextualizer failed on {self._consecutive_failures} documents in a "
                    f"row; stopping. Last: {exc.message}",
                    hint="check the model service; rerun the ingest, which resumes where it "
                    "stopped",
                ) from exc
            return None
        self._consecutive_failures = 0
        return headers

    def _embedded(
        self, records: list[dict[str, Any]], index: str, tenant: str, report: IngestReport
    ) -> list[dict[str, Any]]:
        """Bulk index actions for ``records``, each with its vector, under the tenant's keys."""
        report.chunks += len(records)
        if not records:
            return []
        vecs = self.embedder_for(index).embed_passages([r["search_payload"] for r in records])
        report.embedded += len(records)
        actions = []
        for r, v in zip(records, vecs, strict=True):
            r["embedding"] = [float(x) for x in v]
            key = chunk_key(tenant, r["chunk_id"])
            actions.append({"_op_type": "index", "_index": index, "_id": key, "_source": r})
        return actions

    def _bulk(self, actions: list[dict[str, Any]], report: IngestReport) -> None:
        if not actions:
            return
        try:
            report.failed.extend(self._bulk_once(actions))
        except Exception as exc:
            raise translate_es_error(exc, url=self.client.url, what="bulk indexing") from exc

    @_on_connection_failure
    def _bulk_once(self, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One pass over ``actions``; the failed items. Safe to repeat as a whole: index ops
        carry deterministic ids, updates set fixed values, and a delete whose target is already
        gone has done its job.

        A request that got no answer is raised (and retried whole when the cluster could not be
        reached): elasticsearch-py's helper raises it, opensearch-py's reports it as a failure
        of every item of the chunk, with the exception, which is raised here instead."""
        failed: list[dict[str, Any]] = []
        for ok, item in self.client.streaming_bulk(
            actions,
            chunk_size=500,
            max_retries=5,
            initial_backoff=1,
            max_backoff=30,
            raise_on_error=False,
            raise_on_exception=False,
        ):
            if ok:
                continue
            ((op, info),) = item.items()
            exc = info.get("exception")
            if isinstance(exc, Exception) and _unanswered(exc):
                raise exc
            if op == "delete" and info.get("status") == 404:
                continue
            failed.append(
                {
                    "op": op,
                    "id": local_chunk_id(str(info.get("_id"))),
                    "status": info.get("status"),
                    "reason": str(info.get("error"))[:500],
                }
            )
        return failed

    def delete_document(self, principal: Principal, doc_id: str) -> int:
        """Mark every chunk of the caller's document ``doc_id`` deleted (kept for audit, filtered
        from search); returns how many. Another tenant's document of the same id is another
        document: it is not touched, and one that does not exist gives 0."""
        tenant = principal.tenant
        index = self.index_for(principal)
        body = tenant_body(tenant, {"term": {"doc_id": doc_id}}, _source=False)
        try:
            self._refresh(index)
            self.corpus_state.repair(tenant)
            keys = [h["_id"] for h in self._door.scan(index, body, tenant_policy(tenant))]
        except Exception as exc:
            raise translate_es_error(exc, what="deleting a document") from exc
        if not keys:
            return 0
        run = _Run(self.corpus_state.begin(tenant), index)
        report = IngestReport()
        try:
            actions = [
                {"_op_type": "update", "_index": index, "_id": k, "doc": {"deleted": True}}
                for k in keys
            ]
            self._bulk(actions, report)
            if len(report.failed) < len(actions):
                run.change = "delete"
        except BaseException:
            with contextlib.suppress(Exception):
                self._finish(tenant, run, report)
            raise
        self._finish(tenant, run, report)
        if report.failed:
            raise BulkIndexError(f"{len(report.failed)} chunk updates failed", failed=report.failed)
        return len(keys)


def script_texts(docs: Iterable[Document]) -> list[str]:
    """What the scripts of documents are read from (``embedder_choice``)."""
    return [f"{d.title}\n{d.body}" for d in docs]


def _counts(report: IngestReport) -> dict[str, int]:
    """The report's running counts that a batch's span carries (as the batch's differences)."""
    return {
        "chunks": report.chunks,
        "embedded": report.embedded,
        "skipped_unchanged": report.skipped_unchanged,
        "superseded": report.superseded,
        "removed_chunks": report.removed_chunks,
        "failed": len(report.failed),
        "failed_documents": len(report.failed_documents),
    }


class _Laps:
    """Milliseconds per step of a batch (``read_ms``, ``plan_ms``, ...), for its span."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.ms[f"{step}_ms"] = round((now - self._t) * 1000.0, 3)
        self._t = now


@dataclass
class _BatchWork:
    """What one batch writes: new chunk records, then supersede updates and deletes."""

    records: list[dict[str, Any]] = field(default_factory=list)
    supersede: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)


@dataclass
class _Run:
    """One bracketed writer run (see ``corpus_state``): its marker id, index and last change."""

    run_id: str
    index: str
    change: str | None = None


_EXISTING_FIELDS = (
    "doc_id",
    "version",
    "doc_hash",
    "chunk_hash",
    "chunk_id",
    "header_prompt_version",
    "analysis_version",
    "embedding_model",
    "superseded_by",
    "valid_to",
    "tenant",
    "meta_filter",
    "deleted",
)
