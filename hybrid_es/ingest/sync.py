"""An existing index as an ingest source, kept in sync: what ``hybrid-es ingest --from-index``
runs (:func:`sync_index`, one slice in this process; :func:`sync_workers`, every slice in
processes of its own).

**Passes.** The first sync of a source for a tenant is a *full* pass: every record is read,
mapped (``ingest.source_mapping``) and written (``Ingestor.ingest``: chunks, headers, embeddings;
unchanged documents skipped by their content hash). At its end the documents this source wrote
earlier for the tenant that the source no longer holds (or that now name another tenant) are
marked deleted (``Ingestor.delete_documents``, under the write authority). Later syncs are
*changes* passes: only the records at or after the checkpoint of the last-modified field
(``--map FIELD=modified``), or, where the map names none, those whose ``_seq_no`` is above each
shard's checkpoint. A changes pass cannot see deletions: ``full=True`` (``--full``) asks for a
full pass, and a source whose indices were recreated (another uuid) gets one.

**The checkpoint** lives in the corpus state, per tenant and source (``CorpusState.sync_state``,
shaped by ``ingest.sync_state``): where the next changes pass starts, measured when a pass
starts (so what changes while it runs is read by the next one), and committed only when the pass
ended with every record written; a pass with failed writes keeps the old checkpoint, and the
next one reads the same records again.

**Slices and runs.** A pass is one *run* of ``slices`` slices (a sliced point in time, a sliced
scroll where the engine has none, or the source's shards for ``_seq_no`` changes). Each slice is
read and written by one process, on this machine or another, that names the same source,
tenant and slice count: the first to arrive creates the run (and its point in time), the others
join it, and the one that writes the last slice finishes it (the deletions of a full pass, the
checkpoint, the point in time closed). Slices of one point in time partition its records, so no
record is written twice and none is missed.

**Interruption.** Each process records, after every written batch, how far its slice is read
(the corpus state: a page boundary of the point in time, or a shard's ``_seq_no``). Run again,
the sync joins the unfinished run and its slice goes on from there; where the point in time
expired meanwhile, the run's slices are read again on a new one, the documents already written
skipped as unchanged. A slice read by a live process is refused to another.

**The watermark** moves as for files: once for each process that wrote (its ingest), and once for
a full pass's deletions; a packet built on records that changed says ``refresh_required``.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hybrid_es.cluster import source_read
from hybrid_es.cluster.corpus_state import DEFAULT_LEASE, CorpusState
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.cluster.source_read import DATE_TYPES, PitExpired, SourceIndex
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.errors import ConfigurationError, IndexMissingError, UnknownTenantError
from hybrid_es.ingest import sync_state as states
from hybrid_es.ingest.contextual import Contextualizer, ExtractiveContextualizer
from hybrid_es.ingest.indexer import Ingestor, IngestReport
from hybrid_es.ingest.source_mapping import (
    SOURCE_KEY,
    SourceMapping,
    mapped_preview,
    unmapped,
)
from hybrid_es.ingest.sync_read import SliceRead, SliceStream, count, pages, slice_shards
from hybrid_es.models import Principal
from hybrid_es.tenancy import IndexLayout

Progress = Callable[[int], None]


@dataclass(frozen=True)
class IndexSource:
    """An existing index read as a source, beside the file loaders: its name (an index, an
    alias or a pattern on the source's cluster) and how its records become documents
    (``field_map``: source field -> target, as ``--map`` and ``--map-file`` give it;
    ``ingest.source_mapping``)."""

    index: str
    field_map: Mapping[str, str] = field(default_factory=dict)
    version_from_label: bool = False
    keep_alive: str = "5m"
    """How long a point in time (or a scroll) is kept between two requests of a slice; an
    interrupted run resumes exactly while it lives."""
    page_size: int = source_read.DEFAULT_PAGE

    def mapping(self, tenant: str) -> SourceMapping:
        """The field map for ``tenant`` (ConfigurationError naming a bad entry)."""
        try:
            return SourceMapping.of(
                self.index, tenant, self.field_map, version_from_label=self.version_from_label
            )
        except ValueError as exc:
            raise ConfigurationError(f"--map: {exc}") from None


@dataclass(frozen=True)
class SyncHow:
    """How a sync writes, and which part of it this process takes (the CLI's defaults)."""

    contextualizer: Contextualizer = field(default_factory=ExtractiveContextualizer)
    chunk_size: int = 200
    overlap: int = 40
    batch_size: int = 64
    default_acl: tuple[str, ...] = ()
    slices: int = 1
    slice: int = 0
    full: bool = False
    """A full pass even where a checkpoint allows a changes pass (the deletions are found)."""
    restart: bool = False
    """Abandon an unfinished run of this source and start a new one."""
    dry_run: bool = False
    """Read and map only: no write, no model call, no change to the corpus state."""
    preview: int = 5
    """Mapped documents a dry run shows."""

    def __post_init__(self) -> None:
        if not 1 <= self.slices <= 1024:
            raise ConfigurationError(f"--slices must be 1..1024, got {self.slices}")
        if not 0 <= self.slice < self.slices:
            raise ConfigurationError(
                f"--slice must be 0..{self.slices - 1} (of --slices {self.slices}), "
                f"got {self.slice}"
            )
        if not 1 <= self.batch_size <= 10_000:
            raise ConfigurationError(f"batch_size must be 1..10000, got {self.batch_size}")


@dataclass
class SyncRun:
    """What one process's part of a sync did (and the whole run's, when it finished it)."""

    source: str
    tenant: str
    kind: str
    """``full`` or ``changes`` (a dry run: what a sync would run now)."""
    mode: str
    """How changes are found: ``modified`` (a last-modified field) or ``seq_no``."""
    read: str
    """``pit``, ``scroll`` or ``shards``."""
    run_id: str = ""
    slices: int = 1
    slice: int | None = 0
    """The slice this process read (None: a parent of worker processes)."""
    dry_run: bool = False
    total: int = 0
    """Records this process was to read."""
    counts: dict[str, Any] = field(default_factory=states.empty_counts)
    """read, written, unchanged, refused (by reason), failed, chunks, embedded."""
    resumed: bool = False
    finished: bool = False
    """This process finished the run (its deletions and checkpoint)."""
    deleted: int | None = None
    """Documents marked deleted (a full pass's finisher; None otherwise)."""
    run_counts: dict[str, Any] | None = None
    """Every slice's counts, where this process finished the run."""
    checkpoint: dict[str, Any] | None = None
    """The checkpoint committed (None: not finished here, or kept for failed writes)."""
    examples: list[dict[str, Any]] = field(default_factory=list)
    """Refused records, with their reason (the first ones)."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    preview: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    watermarks: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every record read was written or unchanged: nothing refused, nothing failed."""
        c = self.run_counts if self.run_counts is not None else self.counts
        return not (c.get("refused") or {}) and not c.get("failed") and not self.failures

    def summary(self) -> dict[str, Any]:
        """The run as ``(what, value)`` pairs for a table or ``--json``."""
        c = self.counts
        out: dict[str, Any] = {
            "source": self.source,
            "tenant": self.tenant,
            "pass": self.kind,
            "changes by": self.mode,
            "read by": self.read,
        }
        if not self.dry_run:
            out["run"] = self.run_id
            out["slice"] = "all" if self.slice is None else f"{self.slice} of {self.slices}"
            out["resumed"] = self.resumed
        out.update(
            read=c["read"],
            written=c["written"],
            unchanged=c["unchanged"],
            refused=dict(c["refused"]),
            failed=c["failed"],
            chunks=c["chunks"],
            embedded=c["embedded"],
        )
        if self.dry_run:
            out["would write"] = c["read"] - sum(c["refused"].values())
        if self.deleted is not None:
            out["deleted"] = self.deleted
        if self.run_counts is not None and self.slices > 1:
            out["whole run"] = {
                **{k: v for k, v in self.run_counts.items() if k != "refused"},
                "refused": dict(self.run_counts["refused"]),
            }
        if not self.dry_run:
            out["checkpoint"] = _describe_checkpoint(self.checkpoint, self.finished)
            out["watermarks"] = self.watermarks
        out["records_per_second"] = (
            round(c["read"] / self.seconds, 1) if self.seconds and c["read"] else None
        )
        out["seconds"] = round(self.seconds, 2)
        return out


def _describe_checkpoint(checkpoint: Mapping[str, Any] | None, finished: bool) -> str:
    if not finished:
        return "not moved here (the run's last slice moves it)"
    if checkpoint is None:
        return "kept (some writes failed: the next sync reads these records again)"
    if checkpoint.get("mode") == "modified":
        value = checkpoint.get("modified")
        if checkpoint.get("field_type") in DATE_TYPES and isinstance(value, int | float):
            value = datetime.fromtimestamp(value / 1000, UTC).isoformat()
        return f"{checkpoint.get('field')} >= {value}"
    return f"_seq_no of {len(checkpoint.get('seq_no') or {})} shard(s)"


# -- the parts of a sync ----------------------------------------------------------------------


@dataclass
class _Sync:
    """One process's sync of one slice: everything its stages share."""

    source_engine: Engine
    ingestor: Ingestor
    source: IndexSource
    principal: Principal
    how: SyncHow
    mapping: SourceMapping
    info: SourceIndex
    mode: str
    field_type: str | None
    host: str = field(default_factory=socket.gethostname)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @property
    def state(self) -> CorpusState:
        return self.ingestor.corpus_state

    @property
    def tenant(self) -> str:
        return self.principal.tenant

    def owner(self, run_id: str) -> dict[str, Any]:
        now = self.clock()
        return {
            "run_id": run_id,
            "host": self.host,
            "pid": os.getpid(),
            "started_at": now.isoformat(),
            "lease_until": (now + DEFAULT_LEASE).isoformat(),
        }

    def update(self, change: Callable[[dict[str, Any]], dict[str, Any]], what: str) -> Any:
        return self.state.update_sync(self.tenant, self.source.index, change, what)

    # -- the checkpoint a pass starts from, and the one it will commit --------------------------

    def measure(self) -> dict[str, Any]:
        """The checkpoint of the source as it is now (taken before a pass reads anything)."""
        out: dict[str, Any] = {
            "mode": self.mode,
            "uuids": self.info.uuids,
            "field": self.mapping.modified_field,
            "field_type": self.field_type,
        }
        if self.mode == "modified":
            assert self.mapping.modified_field and self.field_type
            out["modified"] = source_read.max_value(
                self.source_engine, self.source.index, self.mapping.modified_field, self.field_type
            )
        else:
            out["seq_no"] = source_read.max_seq_nos(self.source_engine, self.info)
        return out

    def kind_from(self, checkpoint: Mapping[str, Any] | None) -> str:
        """``full`` where there is no usable checkpoint (none, another change mode or field, a
        source recreated since) or one is asked for; else ``changes``."""
        if self.how.full or not checkpoint:
            return "full"
        same = (
            checkpoint.get("mode") == self.mode
            and checkpoint.get("field") == self.mapping.modified_field
            and list(checkpoint.get("uuids") or []) == self.info.uuids
        )
        if not same:
            return "full"
        if self.mode == "modified" and checkpoint.get("modified") is None:
            return "full"
        return "changes"

    def query(self, kind: str, since: Mapping[str, Any] | None) -> dict[str, Any]:
        if kind == "full" or self.mode == "seq_no" or not since:
            return {"match_all": {}}
        assert self.mapping.modified_field and self.field_type
        return source_read.since_query(
            self.mapping.modified_field, self.field_type, since["modified"]
        )

    def slice_read(self, run: Mapping[str, Any], k: int) -> SliceRead:
        since = run.get("since")
        piece = run["slice"][str(k)]
        shards: tuple[tuple[str, str, int, int], ...] = ()
        if run["read"] == "shards":
            above = dict((since or {}).get("seq_no") or {})
            shards = slice_shards(self.info, k, run["slices"], above)
        return SliceRead(
            read=run["read"],
            index=self.source.index,
            query=self.query(run["kind"], since),
            slice_id=k,
            slices=run["slices"],
            pit_id=run.get("pit_id"),
            after=piece.get("after"),
            shards=shards,
            keep_alive=self.source.keep_alive,
            page_size=self.source.page_size,
        )


def _plan(
    source_engine: Engine,
    ingestor: Ingestor,
    source: IndexSource,
    principal: Principal,
    how: SyncHow,
) -> _Sync:
    """The mapping, what the source is, and how its changes are found. Raises
    ConfigurationError for a last-modified field that is not a date or a number."""
    mapping = source.mapping(principal.tenant)
    info = source_read.describe(source_engine, source.index, mapping.source_fields())
    field_name = mapping.modified_field
    field_type = info.field_types.get(field_name) if field_name else None
    if field_name and field_type is None:
        raise ConfigurationError(
            f"the last-modified field {field_name!r} (--map {field_name}=modified) is not "
            f"mapped in {source.index}",
            hint="name a date or numeric field of the source, or leave modified out (changes "
            "are then found by _seq_no)",
        )
    if field_type and field_type not in (*DATE_TYPES, "long", "integer", "double", "float"):
        raise ConfigurationError(
            f"the last-modified field {field_name!r} is a {field_type} field; it must be a date "
            "or a number",
            hint="map a date field to modified, or leave modified out (changes by _seq_no)",
        )
    mode = "modified" if field_name else "seq_no"
    return _Sync(source_engine, ingestor, source, principal, how, mapping, info, mode, field_type)


def _read_method(sync: _Sync, kind: str) -> tuple[str, str | None]:
    """How a new run reads, and its point in time: by shards for a ``_seq_no`` changes pass,
    else a point in time where the engine has one, else a scroll."""
    if kind == "changes" and sync.mode == "seq_no":
        return "shards", None
    engine, keep_alive = sync.source_engine, sync.source.keep_alive
    pit = source_read.open_pit(engine, sync.source.index, keep_alive)
    if pit is not None and not source_read.pit_sortable(engine, pit, keep_alive):
        source_read.close_pit(engine, pit)
        pit = None
    return ("pit", pit) if pit is not None else ("scroll", None)


def _join_or_start(sync: _Sync) -> tuple[dict[str, Any], bool]:
    """The run this process takes part in, and whether it was under way already: the unfinished
    run of this source (the same slice count), else a new one (created by compare-and-set, so
    that of processes arriving together exactly one creates it and the others join)."""
    how = sync.how
    current = (sync.state.sync_state(sync.tenant, sync.source.index) or {}).get("run")
    if current and not how.restart:
        if current["slices"] != how.slices:
            raise states.SyncConflict(
                f"run {current['run_id']} of {sync.source.index} for tenant {sync.tenant} is "
                f"in progress with {current['slices']} slice(s), not {how.slices}",
                hint=f"finish it with --slices {current['slices']}, or --restart to abandon it",
            )
        if how.full and current["kind"] != "full":
            raise states.SyncConflict(
                f"run {current['run_id']} in progress is a changes pass, not a full one",
                hint="let it finish (run the sync again), or --restart to start a full pass",
            )
        return _alive(sync, dict(current)), True
    checkpoint = (sync.state.sync_state(sync.tenant, sync.source.index) or {}).get("checkpoint")
    kind = sync.kind_from(checkpoint)
    measured = sync.measure()
    read, pit_id = _read_method(sync, kind)
    run = states.new_run(
        run_id=uuid.uuid4().hex,
        kind=kind,
        slices=how.slices,
        read=read,
        pit_id=pit_id,
        since=checkpoint if kind == "changes" else None,
        next_checkpoint=measured,
        started_at=sync.clock().isoformat(),
    )
    replace = current["run_id"] if (current and how.restart) else None
    try:
        sync.update(lambda s: states.start_run(s, run, replace=replace), "starting a sync run")
    except states.SyncConflict:
        # Another process created the run first: join it, and drop the view opened for ours.
        if pit_id:
            source_read.close_pit(sync.source_engine, pit_id)
        return _join_or_start(_replace(sync, restart=False))
    if current and how.restart and current.get("pit_id"):
        source_read.close_pit(sync.source_engine, current["pit_id"])
    return run, False


def _replace(sync: _Sync, **how: Any) -> _Sync:
    from dataclasses import replace

    return replace(sync, how=replace(sync.how, **how))


def _alive(sync: _Sync, run: dict[str, Any]) -> dict[str, Any]:
    """``run``, on a new point in time (its slices to be read again) where its own is gone."""
    if run["read"] != "pit" or source_read.pit_alive(
        sync.source_engine, run["pit_id"], sync.source.keep_alive
    ):
        return run
    pit = source_read.open_pit(sync.source_engine, sync.source.index, sync.source.keep_alive)
    state = sync.update(
        lambda s: states.reset_slices(s, run["run_id"], pit), "reading a sync run again"
    )
    return dict(state["run"])


def _ingestor(
    target: Engine, embedder: Embedder | Embedders, layout: IndexLayout, how: SyncHow
) -> Ingestor:
    return Ingestor(
        target,
        embedder,
        layout=layout,
        corpus_state=CorpusState(target, layout.corpus_state),
        default_acl=how.default_acl,
        contextualizer=how.contextualizer,
        chunk_size=how.chunk_size,
        overlap=how.overlap,
        batch_size=how.batch_size,
    )


# -- the entry points ---------------------------------------------------------------------------


# Stays whole: plan, then dry run or (join, claim, read and write, done, finish) as one story.
def sync_index(
    source_engine: Engine | Any,
    target: Engine | Any,
    embedder: Embedder | Embedders,
    source: IndexSource,
    principal: Principal,
    *,
    layout: IndexLayout,
    how: SyncHow | None = None,
    on_total: Callable[[int], None] | None = None,
    progress: Progress | None = None,
) -> SyncRun:
    """Sync slice ``how.slice`` of ``how.slices`` of the index ``source`` into ``principal``'s
    tenant (module docstring): read through ``source_engine`` (``cluster.source_connection``),
    written to ``target`` under the tenant's write authority. ``on_total`` hears how many records
    this process will read, ``progress`` how many more were read and written (or refused).

    Raises ConfigurationError for a field map, a last-modified field or a slice that cannot be
    used, :class:`~hybrid_es.ingest.sync_state.SyncConflict` when the run in progress has another
    shape or the slice is read by another live process, IndexMissingError for a source that does
    not exist, and what ``Ingestor.ingest`` raises; failed writes and refused records are in the
    result, never raised.
    """
    how = how or SyncHow()
    t0 = time.perf_counter()
    engine = as_engine(target)
    sync = _plan(
        as_engine(source_engine), _ingestor(engine, embedder, layout, how), source, principal, how
    )
    result = SyncRun(
        source.index,
        principal.tenant,
        "full",
        sync.mode,
        "pit",
        slices=how.slices,
        slice=how.slice,
        dry_run=how.dry_run,
    )
    missing = unmapped(sync.mapping, sync.info.field_types)
    if missing:
        result.warnings.append(
            f"the map names field(s) that {source.index} does not map: {', '.join(missing)}"
        )
    if how.dry_run:
        _dry_run(sync, result, on_total, progress)
    else:
        _take_part(sync, result, on_total, progress)
    result.seconds = time.perf_counter() - t0
    return result


def _checkpoint_or_none(sync: _Sync) -> Mapping[str, Any] | None:
    try:
        return (sync.state.sync_state(sync.tenant, sync.source.index) or {}).get("checkpoint")
    except (IndexMissingError, UnknownTenantError):
        return None


def _dry_run(
    sync: _Sync, result: SyncRun, on_total: Callable[[int], None] | None, progress: Progress | None
) -> None:
    """Read the source whole and map every record: the first documents, the refusals, and the
    pass a sync would run now. Writes nothing."""
    result.kind = sync.kind_from(_checkpoint_or_none(sync))
    read, pit_id = _read_method(sync, "full")
    result.read = read
    plan = SliceRead(
        read=read,
        index=sync.source.index,
        query={"match_all": {}},
        slice_id=sync.how.slice,
        slices=sync.how.slices,
        pit_id=pit_id,
        keep_alive=sync.source.keep_alive,
        page_size=sync.source.page_size,
    )
    try:
        result.total = count(sync.source_engine, plan)
        if on_total:
            on_total(result.total)
        stream = SliceStream(sync.mapping)
        for doc in stream.documents_of(
            pages(sync.source_engine, plan, sync.mapping.source_fields())
        ):
            if len(result.preview) < sync.how.preview:
                result.preview.append(mapped_preview(doc))
            if progress:
                progress(1)
        result.counts.update(read=stream.read, refused=dict(stream.refused))
        result.examples = stream.examples
    finally:
        if pit_id:
            source_read.close_pit(sync.source_engine, pit_id)


def _take_part(
    sync: _Sync, result: SyncRun, on_total: Callable[[int], None] | None, progress: Progress | None
) -> None:
    """Join (or start) the run, read and write this process's slice, mark it done, and finish
    the run where this was its last slice."""
    run, result.resumed = _join_or_start(sync)
    run_id, k = run["run_id"], sync.how.slice
    result.run_id, result.kind, result.read = run_id, run["kind"], run["read"]
    owner = sync.owner(run_id)
    if run["slice"][str(k)]["done"]:
        _maybe_finish(sync, result, run_id, owner)
        return
    state = sync.update(
        lambda s: states.claim(s, run_id, k, owner, sync.clock(), sync.host), "claiming a slice"
    )
    run = dict(state["run"])
    plan = sync.slice_read(run, k)
    result.resumed = result.resumed and run["slice"][str(k)].get("after") is not None
    stream = SliceStream(sync.mapping)
    result.total = max(0, count(sync.source_engine, plan) - int(_read_to(run, k)))
    if on_total:
        on_total(result.total)
    base = int(_read_to(run, k))

    def settled(n: int) -> None:
        moved = stream.settle(n)
        if moved is not None:
            after, records, delta = moved
            lease = (sync.clock() + DEFAULT_LEASE).isoformat()
            sync.update(
                lambda s: _progressed(s, run_id, k, after, base + records, lease),
                "recording a slice's progress",
            )
            if progress:
                progress(delta)

    try:
        docs = stream.documents_of(pages(sync.source_engine, plan, sync.mapping.source_fields()))
        report = sync.ingestor.ingest(docs, sync.principal, progress=settled, raise_on_error=False)
    except PitExpired as exc:
        raise ConfigurationError(
            f"{exc.message}; nothing is lost",
            hint="run the sync again: the run is read again on a new point in time, the "
            "documents already written skipped as unchanged (a longer --keep-alive keeps it)",
        ) from None
    if progress and stream.unsettled_records:
        progress(stream.unsettled_records)
    result.counts = _counts(stream, report)
    result.examples = stream.examples
    result.failures = report.failed + report.failed_documents
    result.watermarks = dict(report.watermarks)
    state, finisher = _mark_done(sync, run_id, k, result.counts, owner)
    if finisher:
        _finish(sync, result, dict(state["run"]))


def _read_to(run: Mapping[str, Any], k: int) -> int:
    return int(run["slice"][str(k)].get("read_to") or 0)


def _progressed(
    state: dict[str, Any], run_id: str, k: int, after: Any, read_to: int, lease: str
) -> dict[str, Any]:
    out = states.progress(state, run_id, k, after=after, counts={}, lease_until=lease)
    out["run"]["slice"][str(k)]["read_to"] = read_to
    return out


def _counts(stream: SliceStream, report: IngestReport) -> dict[str, Any]:
    """A slice's counts from its stream (read, refused by mapping) and its ingest report."""
    failed_docs = {str(f["id"]).split("::")[1] for f in report.failed if "::" in str(f["id"])}
    refused = dict(stream.refused)
    if report.refused:
        refused["not-writable"] = report.refused
    other_failed = len(report.failed_documents) - report.refused
    written = (
        report.documents
        - report.skipped_unchanged
        - len(report.failed_documents)
        - len(failed_docs)
    )
    return {
        "read": stream.read,
        "written": max(0, written),
        "unchanged": report.skipped_unchanged,
        "refused": refused,
        "failed": other_failed + len(failed_docs),
        "chunks": report.chunks,
        "embedded": report.embedded,
    }


def _mark_done(
    sync: _Sync, run_id: str, k: int, counts: Mapping[str, Any], owner: Mapping[str, Any]
) -> tuple[dict[str, Any], bool]:
    finisher: list[bool] = []

    def done(s: dict[str, Any]) -> dict[str, Any]:
        new, mine = states.slice_done(s, run_id, k, counts, owner, sync.clock(), sync.host)
        finisher[:] = [mine]
        return new

    state = sync.update(done, "marking a slice done")
    return state, finisher[0]


def _maybe_finish(sync: _Sync, result: SyncRun, run_id: str, owner: Mapping[str, Any]) -> None:
    """Finish a run whose slices are all done and whose finisher is gone (it was interrupted)."""
    taken: list[bool] = []

    def take(s: dict[str, Any]) -> dict[str, Any]:
        new, mine = states.take_finish(s, run_id, owner, sync.clock(), sync.host)
        taken[:] = [mine]
        return new

    state = sync.update(take, "taking over a sync run's finish")
    if taken[0]:
        _finish(sync, result, dict(state["run"]))


def _finish(sync: _Sync, result: SyncRun, run: dict[str, Any]) -> None:
    """The run's last step: a full pass's deletions, the checkpoint (where every write landed),
    the point in time closed, the run removed."""
    totals = states.run_counts(run)
    if run["kind"] == "full":
        result.deleted = _delete_gone(sync)
        if result.deleted:  # the deletions moved the watermark (their own bracketed run)
            result.watermarks[sync.tenant] = sync.state.watermark(sync.tenant)
    commit = not totals["failed"]
    if run.get("pit_id"):
        source_read.close_pit(sync.source_engine, run["pit_id"])
    now = sync.clock().isoformat()
    state = sync.update(
        lambda s: states.finish(s, run["run_id"], commit=commit, now=now), "finishing a sync run"
    )
    result.finished = True
    result.run_counts = totals
    result.checkpoint = state.get("checkpoint") if commit else None


def _delete_gone(sync: _Sync) -> int:
    """Mark deleted the documents this source wrote for the tenant that it no longer holds (or
    that now name another tenant); how many."""
    present: set[str] = set()
    read, pit_id = _read_method(sync, "full")
    plan = SliceRead(
        read=read,
        index=sync.source.index,
        query={"match_all": {}},
        slice_id=0,
        slices=1,
        pit_id=pit_id,
        keep_alive=sync.source.keep_alive,
        page_size=max(sync.source.page_size, 1000),
    )
    fields = sync.mapping.identity_fields()
    try:
        for page in pages(sync.source_engine, plan, fields or False):
            for hit in page.hits:
                doc_id, tenant = sync.mapping.identity(hit)
                if doc_id and tenant == sync.tenant:
                    present.add(doc_id)
    finally:
        if pit_id:
            source_read.close_pit(sync.source_engine, pit_id)
    stored = sync.ingestor.ids_with_metadata(sync.principal, SOURCE_KEY, sync.source.index)
    gone = sorted(stored - present)
    marked = sync.ingestor.delete_documents(sync.principal, gone) if gone else {}
    return sum(1 for n in marked.values() if n)
