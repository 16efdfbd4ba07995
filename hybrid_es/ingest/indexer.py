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

Who may write what inside the tenant is one rule (``ingest.authority``): the tenant's writer role
writes any document; a member creates new ones and replaces or deletes only those it may read,
without widening their ACL. A refused document is reported and counted, never written; a
refused delete does what a delete of a missing id does. Nothing is overwritten in place: the
text a write replaces (a correction of the same version, or its vanished chunks) is first kept
as an audit copy (``plan.audit_copy``: marked deleted, never searched), and a document whose
copy could not be made is not written.

A new version supersedes the old one (validity closed, ``superseded_by`` set) instead of
overwriting it. The tenant's corpus watermark moves once per run that wrote something, after the
index refresh (``hybrid_es.cluster.corpus_state`` explains the bracket that makes this crash-safe).
A document without an ACL gets the ingest's default ACL (fail closed unless configured), and the
report counts those documents. Every failed bulk item, and every document the contextualizer
failed on, is reported with its reason. Calls to the cluster are retried as a whole when it
cannot be reached only (never on an answer, nor on a timeout); 429s inside a bulk are retried by
the bulk helper with back-off (``cluster.retries``). Every call goes through an
:class:`~hybrid_es.cluster.engine.Engine`, so the same code writes to Elasticsearch and OpenSearch.

A batch's bulk request is sent while the next batch is read, planned and embedded
(``ingest.write_behind``: one request in flight, settled in order), so an ingest runs at the pace
of the slower of the encoder and the cluster, not their sum; ``overlap_bulk=False`` sends each
batch before the next is prepared.

The rooms around this module: ``write_checks`` (the index's model, checked once before writing),
``stored`` (what is already stored), ``batch`` (planning a batch's documents), ``bulk`` (the
actions and the bulk pass), ``report`` (what the run reports).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hybrid_es import telemetry
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.cluster.retries import on_connection_failure
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import SAMPLE, Embedders
from hybrid_es.errors import (
    BulkIndexError,
    ConfigurationError,
    IndexMissingError,
    translate_es_error,
)
from hybrid_es.identity import SEPARATOR, chunk_id
from hybrid_es.ingest.authority import delete_verdict, writable_clauses
from hybrid_es.ingest.batch import (
    MAX_CONSECUTIVE_DOCUMENT_FAILURES,
    BatchWork,
    Chunker,
    FailureStreak,
    Planning,
    PreparedBatch,
    batches,
    plan_into,
)
from hybrid_es.ingest.bulk import (
    Sent,
    audit_actions,
    deleted_marks,
    index_actions,
    retire_actions,
    send_bulk,
)
from hybrid_es.ingest.chunking import Chunking, counter_for
from hybrid_es.ingest.contextual import Contextualizer, ExtractiveContextualizer
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import audit_copy, build_chunk_records, plan_document
from hybrid_es.ingest.report import IngestReport, Laps, count_changes, report_counts
from hybrid_es.ingest.stored import stored_chunks
from hybrid_es.ingest.write_behind import Taken, WriteBehind
from hybrid_es.ingest.write_checks import WriteChecks
from hybrid_es.models import EVERYONE, Principal
from hybrid_es.retrieval.door import ChunksDoor, tenant_body, tenant_policy
from hybrid_es.tenancy import IndexLayout

__all__ = [
    "DEFAULT_ACLS",
    "MAX_CONSECUTIVE_DOCUMENT_FAILURES",
    "Chunker",
    "IngestReport",
    "Ingestor",
    "build_chunk_records",
    "chunk_id",
    "plan_document",
    "script_texts",
]

DEFAULT_ACLS: dict[str, tuple[str, ...]] = {"none": (), "everyone": (EVERYONE,)}
"""What ``HYBRID_ES_DEFAULT_ACL`` names: the ACL groups of a document that names no ACL."""


class Ingestor:
    """Writes documents into a deployment's chunks indices. See the module docstring for the
    guarantees.

    ``layout`` names the indices (by tenancy mode); ``index`` instead puts every tenant into one
    given chunks index (tests, evaluation collections). ``default_acl`` is the ACL of documents
    that name none (``()``: nobody; ``("*",)``: every user of the tenant). ``contextualizer``
    defaults to the extractive one; ``chunker`` to :func:`chunk_document` with the embedder's own
    token count (:func:`~hybrid_es.ingest.chunking.counter_for`). ``overlap_bulk`` (default on)
    sends a batch's bulk request while the next batch is embedded.
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
        overlap_bulk: bool = True,
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
        self.overlap_bulk = overlap_bulk
        self._chunker = chunker
        self._chunkers: dict[str, Chunker] = {}
        self._checks = WriteChecks()

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
            self._chunkers[embedder.model_id] = Chunking(self.chunk_size, self.overlap, count)
        return self._chunkers[embedder.model_id]

    def embedder_for(self, index: str) -> Embedder:
        """The embedder that writes ``index`` (as :meth:`check_model` found or chose it)."""
        return self._checks.embedder_for(index, self.embedders)

    def index_for(self, principal: Principal) -> str:
        """The chunks index this caller's documents are written to."""
        return self.layout.chunks_for(principal.tenant)

    def check_model(self, index: str, texts: Sequence[str] = ()) -> Embedder:
        """The embedder that writes ``index``, checked once before any write
        (:meth:`~hybrid_es.ingest.write_checks.WriteChecks.check_model`: ModelError for an index
        of another model or size, ConfigurationError for a vector field this engine cannot
        serve). ``texts``: the first documents, from which ``auto`` chooses for a new index."""
        return self._checks.check_model(self.client, self._door, self.embedders, index, texts)

    @on_connection_failure
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
        self._checks.check_names(self.layout, self.corpus_state.index)
        # The first documents decide the embedder of a new index (auto): read them ahead.
        stream = iter(docs)
        head = list(itertools.islice(stream, SAMPLE))
        docs = itertools.chain(head, stream)
        embedder = self.check_model(index, script_texts(d for d in head if d.tenant == tenant))
        report = IngestReport(embedder=embedder.model_id)
        try:
            # What an earlier run (perhaps killed) wrote must be visible to the skip check, and
            # a run that died before moving the watermark is resolved before this one begins.
            self._refresh(index)
            self.corpus_state.repair(tenant)
        except Exception as exc:
            raise translate_es_error(exc, what=f"preparing {index}") from exc
        run = _Run(self.corpus_state.begin(tenant), principal, index, now, FailureStreak())
        try:
            # A rebuild may have switched the index to a generation of another model while this
            # run waited to begin: checked again, with the new generation's model.
            if self._checks.moved(self.client, index):
                embedder = self.check_model(
                    index, script_texts(d for d in head if d.tenant == tenant)
                )
                report.embedder = embedder.model_id
        except BaseException:
            with contextlib.suppress(Exception):
                self._finish(run, report)
            raise
        settle = functools.partial(self._settle, report=report, run=run, progress=progress)
        with WriteBehind.of_bulks(self.client, overlap=self.overlap_bulk) as writer:
            try:
                for batch, after_refresh in batches(docs, tenant, self.batch_size, report):
                    self._write_batch(batch, report, run, writer, settle, refresh=after_refresh)
                settle(writer.take())
            except BaseException:
                # The bulk in flight is waited for and settled, so what it wrote counts (its
                # own error dropped). Then settle what was written if the cluster still
                # answers; if not, the marker stays and the next ingest's repair moves the
                # watermark. The original error is raised.
                with contextlib.suppress(Exception):
                    settle(writer.take())
                with contextlib.suppress(Exception):
                    self._finish(run, report)
                raise
        self._finish(run, report)
        report.seconds = time.perf_counter() - t0
        if raise_on_error and not report.ok:
            failed = report.failed + report.failed_documents
            raise BulkIndexError(
                f"{len(report.failed)} of {report.chunks} chunk writes and "
                f"{len(report.failed_documents)} documents failed",
                failed=failed,
            )
        return report

    def _write_batch(
        self,
        batch: list[Document],
        report: IngestReport,
        run: _Run,
        writer: WriteBehind[PreparedBatch, Sent],
        settle: Callable[[Taken[PreparedBatch, Sent] | None], None],
        *,
        refresh: bool,
    ) -> None:
        """Prepare ``batch`` while the batch before it is sent, then hand it to the writer. A
        batch that must see what the one in flight writes waits for it first."""
        ids = {d.id for d in batch}
        in_flight = writer.in_flight
        if refresh or (in_flight is not None and not ids.isdisjoint(in_flight.doc_ids)):
            settle(writer.take())
        if refresh:
            self._refresh(run.index)
        prepared = self._prepare(batch, report, run)
        settle(writer.take())  # the batch before, sent while this one was prepared
        writer.submit(prepared)
        if not writer.overlap:
            settle(writer.take())

    def _prepare(self, batch: list[Document], report: IngestReport, run: _Run) -> PreparedBatch:
        """Read what the batch's documents have stored, plan each, and embed what is new or
        changed: the batch's bulk actions. A failure here is the batch's span's error."""
        before = report_counts(report)
        laps = Laps()
        try:
            actions, changes = self._plan_and_embed(batch, report, run, laps)
        except BaseException:
            db = telemetry.db_attributes(self.client, "ingest", run.index)
            with telemetry.span("hybrid_es.ingest.batch", db, documents=len(batch)) as sp:
                sp.set(**count_changes(before, report_counts(report)), **laps.ms)
                raise
        return PreparedBatch(
            documents=len(batch),
            doc_ids=frozenset(d.id for d in batch),
            actions=actions,
            changes=changes,
            counts=count_changes(before, report_counts(report)),
            laps=laps.ms,
        )

    def _plan_and_embed(
        self, batch: list[Document], report: IngestReport, run: _Run, laps: Laps
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """The batch's bulk actions (new chunks with their vectors, then supersede updates and
        deletes) and its watermark changes."""
        tenant, index = run.principal.tenant, run.index
        embedder = self.check_model(index, script_texts(batch))  # decided before the first write
        try:
            doc_ids = list(dict.fromkeys(d.id for d in batch))
            existing = stored_chunks(self._door, index, tenant, doc_ids)
        except Exception as exc:
            raise translate_es_error(exc, what="reading existing chunks") from exc
        laps.lap("read")
        how = Planning(
            principal=run.principal,
            now=run.now,
            embedder=embedder,
            chunker=self.chunker_for(embedder),
            contextualizer=self.contextualizer,
            default_acl=self.default_acl,
            filterable=self._checks.filterable.get(index, ()),
            streak=run.streak,
        )
        work = BatchWork()
        for doc in batch:
            plan_into(doc, existing.get(doc.id, []), how, report, work)
        self._keep_replaced(index, tenant, work, report)
        laps.lap("plan")
        report.chunks += len(work.records)
        actions = []
        if work.records:
            vectors = embedder.embed_passages([r["search_payload"] for r in work.records])
            report.embedded += len(work.records)
            actions = index_actions(work.records, vectors, index, tenant)
        laps.lap("embed")
        stamp = run.now.isoformat()
        retire = retire_actions(work.supersede, work.deletes, index, tenant, stamp=stamp)
        return actions + retire, work.changes

    def _keep_replaced(
        self, index: str, tenant: str, work: BatchWork, report: IngestReport
    ) -> None:
        """Copy every stored chunk that ``work`` replaces to its audit key (``plan.audit_copy``)
        before anything of the batch is sent. A document any of whose copies failed is dropped
        from the batch and reported: its stored text stays as it was."""
        if not work.replaced:
            return
        body = tenant_body(
            tenant,
            {"terms": {"chunk_id": sorted(work.replaced)}},
            _source={"excludes": ["embedding"]},
        )
        try:
            sources = [h["_source"] for h in self._door.scan(index, body, tenant_policy(tenant))]
            copies = [audit_copy(src, work.replaced[src["chunk_id"]]) for src in sources]
            failed = send_bulk(self.client, audit_actions(copies, index, tenant))
        except Exception as exc:
            raise translate_es_error(exc, what="keeping replaced chunks for audit") from exc
        report.audit_copies += len(copies) - len(failed)
        why = {str(f["id"]).split(SEPARATOR, 1)[0]: f["reason"] for f in failed}
        if not why:
            return
        work.drop(set(why))
        for doc_id, reason in sorted(why.items()):
            report.failed_documents.append(
                {
                    "doc_id": doc_id,
                    "tenant": tenant,
                    "reason": f"not written: its stored text could not be kept as an audit copy "
                    f"({reason}); nothing of it was changed, ingest it again",
                }
            )

    def _settle(
        self,
        taken: Taken[PreparedBatch, Sent] | None,
        *,
        report: IngestReport,
        run: _Run,
        progress: Callable[[int], None] | None,
    ) -> None:
        """Record a sent batch, in order, inside the span ``hybrid_es.ingest.batch``: its failed
        items, the run's change when anything was written, the lease renewed. The span carries
        its documents, the chunks written, embedded, skipped, superseded and removed, the failed
        items and documents, and the milliseconds of each step (``wait_ms``: how long the bulk
        request outlasted the next batch's preparation), with the database conventions of the
        operation ``ingest`` on the index (``telemetry.db_attributes``); never a document's
        text. ``taken``: what the write-behind handed back (None: nothing was in flight)."""
        if taken is None:
            return
        batch, outcome = taken.batch, taken.outcome
        t = time.perf_counter()
        failed: list[dict[str, Any]] = []
        bulk_ms = 0.0
        db = telemetry.db_attributes(self.client, "ingest", run.index)
        with telemetry.span("hybrid_es.ingest.batch", db, documents=batch.documents) as sp:
            try:
                failed, bulk_ms = outcome()
                report.failed.extend(failed)
                if batch.changes and len(failed) < len(batch.actions):
                    run.change = batch.changes[-1]  # something was written: the watermark moves
                if batch.changes:
                    self.corpus_state.renew(run.principal.tenant, run.run_id)
            finally:
                wait_ms = round((time.perf_counter() - t) * 1000.0, 3)
                sp.set(**{**batch.counts, "failed": len(failed)}, **batch.laps)
                sp.set(bulk_ms=bulk_ms, wait_ms=wait_ms)
        if progress:
            progress(batch.documents)

    def _finish(self, run: _Run, report: IngestReport) -> None:
        """Make the run's writes searchable, then move the watermark (only if it wrote)."""
        try:
            if run.change is not None:
                self._refresh(run.index)
            report.watermarks[run.principal.tenant] = self.corpus_state.finish(
                run.principal.tenant, run.run_id, run.change
            )
        except Exception as exc:
            # The marker stays; the next ingest's repair moves the watermark for this run.
            raise translate_es_error(exc, what="moving the corpus watermark") from exc
        if run.change is None:
            report.watermarks.pop(run.principal.tenant, None)

    def delete_document(self, principal: Principal, doc_id: str) -> int:
        """Mark every chunk of the caller's document ``doc_id`` deleted (kept for audit, filtered
        from search); returns how many. Another tenant's document of the same id is another
        document: it is not touched, and one that does not exist gives 0. A document the caller
        may not delete (``ingest.authority``: a member deletes only what it may read, every
        version of it) gives 0 as well, exactly as a missing one; the refusal is counted in the
        metric ``hybrid_es.writes.refused``."""
        return self.delete_documents(principal, [doc_id])[doc_id]

    def delete_documents(self, principal: Principal, doc_ids: Sequence[str]) -> dict[str, int]:
        """:meth:`delete_document` for many documents in one bracketed run (one watermark move
        when anything was marked): how many chunks of each were marked, 0 for a missing one or
        one the caller may not delete (each refusal counted as there). Raises BulkIndexError
        listing the chunk updates that failed, after the rest was written."""
        tenant = principal.tenant
        index = self.index_for(principal)
        self._checks.check_names(self.layout, self.corpus_state.index)
        wanted = list(dict.fromkeys(doc_ids))
        out = dict.fromkeys(wanted, 0)
        if not wanted:
            return out
        fields = ["doc_id", "version", "acl_users", "acl_groups"]
        stored: dict[str, list[dict[str, Any]]] = {}
        try:
            self._refresh(index)
            self.corpus_state.repair(tenant)
            for at in range(0, len(wanted), 1000):
                body = tenant_body(
                    tenant, {"terms": {"doc_id": wanted[at : at + 1000]}}, _source=fields
                )
                for h in self._door.scan(index, body, tenant_policy(tenant)):
                    stored.setdefault(h["_source"]["doc_id"], []).append(h)
        except Exception as exc:
            raise translate_es_error(exc, what="deleting documents") from exc
        keys: list[str] = []
        for doc_id, hits in stored.items():
            verdict = delete_verdict(principal, [h["_source"] for h in hits])
            if not verdict.allowed:
                if verdict.reason != "missing":
                    telemetry.record_refused_write("delete", verdict.reason)
                continue
            keys.extend(h["_id"] for h in hits)
            out[doc_id] = len(hits)
        if not keys:
            return out
        run = _Run(self.corpus_state.begin(tenant), principal, index, datetime.now(UTC))
        report = IngestReport()
        try:
            actions = deleted_marks(keys, index, stamp=run.now.isoformat())
            report.failed.extend(send_bulk(self.client, actions))
            if len(report.failed) < len(actions):
                run.change = "delete"
        except BaseException:
            with contextlib.suppress(Exception):
                self._finish(run, report)
            raise
        self._finish(run, report)
        if report.failed:
            raise BulkIndexError(f"{len(report.failed)} chunk updates failed", failed=report.failed)
        return out

    def ids_with_metadata(self, principal: Principal, key: str, value: str) -> set[str]:
        """The live documents ``principal`` may replace or delete whose metadata holds ``key``
        = ``value`` (a sync's documents of one source: ``metadata.source_index``). Empty when
        the tenant has written nothing yet."""
        index = self.index_for(principal)
        body = tenant_body(
            principal.tenant,
            {"term": {"chunk_no": 0}},
            *writable_clauses(principal),
            _source=["doc_id", f"metadata.{key}"],
        )
        try:
            self._refresh(index)
            hits = self._door.scan(index, body, tenant_policy(principal.tenant))
            return {
                h["_source"]["doc_id"]
                for h in hits
                if (h["_source"].get("metadata") or {}).get(key) == value
            }
        except IndexMissingError:
            return set()
        except Exception as exc:
            raise translate_es_error(exc, what="listing a source's documents") from exc

    def writable_ids(self, principal: Principal, doc_ids: Sequence[str]) -> set[str]:
        """Among ``doc_ids``, the live documents ``principal`` may replace or delete
        (``authority.writable_clauses``): the writer's own view of what exists, which a store's
        duplicate policy checks against."""
        index = self.index_for(principal)
        found: set[str] = set()
        for at in range(0, len(doc_ids), 1000):
            part = list(doc_ids[at : at + 1000])
            body = tenant_body(
                principal.tenant,
                {"terms": {"doc_id": part}},
                *writable_clauses(principal),
                _source=["doc_id"],
            )
            try:
                hits = self._door.scan(index, body, tenant_policy(principal.tenant))
                found.update(h["_source"]["doc_id"] for h in hits)
            except IndexMissingError:
                return found  # a tenant that has written nothing yet holds nothing
            except Exception as exc:
                raise translate_es_error(exc, what="listing writable documents") from exc
        return found

    def count_writable(self, principal: Principal) -> int:
        """How many live documents ``principal`` may replace or delete (each counted once, by
        its first chunk): the writer's view of a tenant's size."""
        index = self.index_for(principal)
        query = tenant_body(
            principal.tenant, {"term": {"chunk_no": 0}}, *writable_clauses(principal)
        )
        try:
            return self._door.count(index, query["query"], tenant_policy(principal.tenant))
        except IndexMissingError:
            return 0
        except Exception as exc:
            raise translate_es_error(exc, what="counting writable documents") from exc


def script_texts(docs: Iterable[Document]) -> list[str]:
    """What the scripts of documents are read from (``embedder_choice``)."""
    return [f"{d.title}\n{d.body}" for d in docs]


@dataclass
class _Run:
    """One bracketed writer run (see ``corpus_state``): its marker id, writer (whose tenant it
    writes), index, the time its records are stamped with, the contextualizer's failure streak,
    and its last change."""

    run_id: str
    principal: Principal
    index: str
    now: datetime
    streak: FailureStreak = field(default_factory=FailureStreak)
    change: str | None = None
