"""``hybrid-es ingest``: load, chunk, contextualise, embed and index documents, from files or
(``--from-index SRC``) from an existing index kept in sync (``hybrid_es.ingest.sync``).

Exit status: 0 when everything was read and written; 1 when some input was rejected or some
write failed (each listed with its reason; the rest was written, and a rerun retries only what
is missing or changed); 2 for an error that stopped the run (see ``hybrid_es.cli.main.main``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from hybrid_es.cli.common import (
    Embedder,
    Groups,
    Json,
    User,
    add_row,
    bad,
    console,
    deployment,
    emit_json,
    err_console,
    make_principal,
    safe,
    settings,
    title,
)

if TYPE_CHECKING:
    from hybrid_es.ingest.contextual import Contextualizer
    from hybrid_es.ingest.run import IngestRun
    from hybrid_es.ingest.sync import SyncRun


class RateColumn(ProgressColumn):
    """Throughput in documents (or records) per second (rich's moving estimate)."""

    def __init__(self, unit: str = "docs") -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None and task.elapsed:  # one sample so far: rich has no estimate yet
            speed = task.completed / task.elapsed
        shown = f"- {self.unit}/s" if speed is None else f"{speed:,.1f} {self.unit}/s"
        return Text(shown, style="cyan")


def progress_bar(label: str, unit: str, *, disable: bool) -> Progress:
    """The bar of a long ingest: done of total, rate, elapsed and time left (on stderr)."""
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(unit),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        disable=disable,
    )


def _contextualizer(name: str, llm_model: str) -> Contextualizer:
    from hybrid_es.ingest.contextual import ExtractiveContextualizer, NoContextualizer

    if name == "extractive":
        return ExtractiveContextualizer()
    if name == "none":
        return NoContextualizer()
    if name == "anthropic":
        from hybrid_es.ingest.anthropic_context import AnthropicContextualizer

        return AnthropicContextualizer(model=llm_model)
    raise typer.BadParameter(
        f"--contextualizer must be extractive, anthropic or none, not {name!r}"
    )


# Long only for its typer options: the body parses them, calls ingest.run.ingest_path once and
# hands the result to _print.
def ingest(
    path: Annotated[
        Path | None,
        typer.Argument(
            metavar="PATH",
            help="A JSONL file, a BEIR folder, or a folder of .txt/.md files (or --from-index).",
        ),
    ] = None,
    *,
    tenant: Annotated[
        str,
        typer.Option(
            metavar="ID",
            help="The caller's tenant: every document is written for it; a document that names "
            "another tenant is refused.",
        ),
    ],
    user: User = "cli",
    group: Groups = None,
    member: Annotated[
        bool,
        typer.Option(
            "--member",
            help="Write as a member of the tenant (--user, --group), not as its writer: only new "
            "documents and documents the member may read, without widening their ACL.",
        ),
    ] = False,
    format: Annotated[str, typer.Option("--format", help="auto | jsonl | beir | folder")] = "auto",
    contextualizer: Annotated[
        str, typer.Option(help="extractive (offline) | anthropic (LLM) | none")
    ] = "extractive",
    llm_model: Annotated[
        str, typer.Option(help="Claude model for --contextualizer anthropic.")
    ] = "claude-haiku-4-5",
    embedder: Embedder = None,
    chunk_size: Annotated[int, typer.Option(help="Tokens per chunk (model tokenizer).")] = 200,
    overlap: Annotated[int, typer.Option(help="Tokens repeated from the previous chunk.")] = 40,
    batch_size: Annotated[int, typer.Option(help="Documents embedded and written at once.")] = 64,
    ext: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SUFFIX",
            help="Also read files with this suffix (folder), e.g. .py (repeatable).",
        ),
    ] = None,
    field_map: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            metavar="SOURCE=TARGET",
            help="Rename a field before validation: SOURCE=TARGET (doc_id=id; repeatable). "
            "--from-index also takes a dotted SOURCE, _id, const:VALUE, and the targets acl, "
            "modified and metadata.KEY; several sources of body are joined (docs/sync.md).",
        ),
    ] = None,
    map_file: Annotated[
        Path | None, typer.Option(help='A JSON file of {"SOURCE": "TARGET"} renames.')
    ] = None,
    version_from_label: Annotated[
        bool,
        typer.Option(help="Order versions by the last number in version_label (contract-v4)."),
    ] = False,
    default_acl: Annotated[
        str | None,
        typer.Option(
            help="ACL of documents that name none: none (nobody; the default) | everyone "
            "(every user of the tenant). Default: HYBRID_ES_DEFAULT_ACL."
        ),
    ] = None,
    fail_fast: Annotated[bool, typer.Option(help="Stop at the first bad input.")] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            help="Validate and chunk only: no cluster, no model call (--from-index: read and "
            "map, show the first documents and what would be refused; nothing written)."
        ),
    ] = False,
    from_index: Annotated[
        str | None,
        typer.Option(
            "--from-index",
            metavar="SRC",
            help="Read an existing index (or alias) instead of files, and keep it in sync: "
            "the first run reads it whole, later runs what changed. Its cluster: "
            "HYBRID_ES_SOURCE_* (default: this deployment's).",
        ),
    ] = None,
    slices: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="--from-index: read in N slices, one per process (with --slice), on one "
            "machine or several; no record is written twice or missed.",
        ),
    ] = None,
    slice_: Annotated[
        int | None,
        typer.Option("--slice", metavar="K", help="--from-index: the slice (0..N-1) to read."),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            metavar="N",
            help="--from-index: read N slices at once, in N processes on this machine.",
        ),
    ] = 1,
    full: Annotated[
        bool,
        typer.Option(
            help="--from-index: read the source whole (not only its changes) and mark deleted "
            "what left it."
        ),
    ] = False,
    restart: Annotated[
        bool, typer.Option(help="--from-index: abandon an unfinished run and start anew.")
    ] = False,
    keep_alive: Annotated[
        str,
        typer.Option(
            metavar="TIME",
            help="--from-index: how long the source's point in time lives between requests "
            "(an interrupted run resumes exactly within it), e.g. 5m.",
        ),
    ] = "5m",
    as_json: Json = False,
) -> None:
    """Chunk, contextualise, embed and index documents, skipping unchanged ones: from files,
    or from an existing index kept in sync (--from-index)."""
    from hybrid_es.errors import ConfigurationError
    from hybrid_es.ingest.indexer import DEFAULT_ACLS
    from hybrid_es.ingest.loaders import read_field_map
    from hybrid_es.ingest.run import PathIngest, with_suffixes

    if (path is None) == (from_index is None):
        raise bad("--from-index", "give a PATH or --from-index SRC (one of them)")
    s = settings()
    # The command line writes with the deployment's own cluster credentials: it is the tenant's
    # writer (ingest.authority), unless --member asks for a member's rights.
    principal = make_principal(tenant, user, group, writer=not member)
    acl_name = default_acl or s.default_acl
    if acl_name not in DEFAULT_ACLS:
        raise bad("--default-acl", f"must be none or everyone, not {acl_name!r}")
    extra: tuple[str, ...] = ()
    if from_index is not None:
        from hybrid_es.ingest.source_mapping import EXTRA_TARGETS

        extra = EXTRA_TARGETS
    try:
        fmap = read_field_map(field_map or (), map_file, extra=extra)
    except ValueError as exc:
        raise bad("--map" if field_map else "--map-file", str(exc)) from None
    if from_index is not None:
        from hybrid_es.ingest.sync import IndexSource, SyncHow

        n = slices if slices is not None else workers
        if workers > 1 and slices is not None and slices != workers:
            raise bad("--workers", f"--workers {workers} reads {workers} slices, not {slices}")
        if n > 1 and workers == 1 and slice_ is None:
            raise bad("--slice", f"--slices {n} needs --slice K (0..{n - 1}), or --workers {n}")
        try:
            how_sync = SyncHow(
                contextualizer=_contextualizer(contextualizer, llm_model),
                chunk_size=chunk_size,
                overlap=overlap,
                batch_size=batch_size,
                default_acl=DEFAULT_ACLS[acl_name],
                slices=n,
                slice=slice_ or 0,
                full=full,
                restart=restart,
                dry_run=dry_run,
            )
        except ConfigurationError as exc:
            raise typer.BadParameter(exc.message) from None
        source = IndexSource(
            from_index,
            field_map=fmap,
            version_from_label=version_from_label,
            keep_alive=keep_alive,
        )
        with progress_bar("sync", "records", disable=as_json) as bar:
            task = bar.add_task("records", total=None)
            synced = deployment(s, embedder).sync_index(
                source,
                principal,
                how_sync,
                workers=workers,
                on_total=lambda k: bar.update(task, total=k),
                progress=lambda k: bar.advance(task, k),
            )
        _print_sync(synced, acl_name, as_json)
        if not synced.ok:
            raise SystemExit(1)
        return
    assert path is not None
    try:
        how = PathIngest(
            format=format,  # type: ignore[arg-type]
            contextualizer=_contextualizer(contextualizer, llm_model),
            chunk_size=chunk_size,
            overlap=overlap,
            batch_size=batch_size,
            suffixes=with_suffixes(ext or ()),
            field_map=fmap,
            version_from_label=version_from_label,
            default_acl=DEFAULT_ACLS[acl_name],
            fail_fast=fail_fast,
            dry_run=dry_run,
        )
    except ConfigurationError as exc:
        raise typer.BadParameter(exc.message) from None
    with progress_bar("ingest", "docs", disable=as_json or dry_run) as bar:
        task = bar.add_task("docs", total=None)
        run = deployment(s, embedder).ingest_path(
            path,
            principal,
            how,
            on_total=lambda n: bar.update(task, total=n),
            progress=lambda k: bar.advance(task, k),
        )
    _print(run, acl_name, as_json)
    if not run.ok:
        # SystemExit, not typer.Exit: cli.main runs the app with standalone_mode=False, where
        # click turns typer.Exit into a return value that main does not pass on.
        raise SystemExit(1)


def _print(run: IngestRun, acl_name: str, as_json: bool) -> None:
    summary = run.summary()
    if "default_acl_applied" in summary:
        summary["default_acl_applied"] = (
            f"{summary['default_acl_applied']} (HYBRID_ES_DEFAULT_ACL={acl_name})"
        )
    if as_json:
        emit_json(
            {
                **summary,
                "rejected": [str(e) for e in run.load.errors],
                "failures": run.failures,
                **({"ignored_files": run.load.ignored_files} if run.load.ignored_files else {}),
            }
        )
        return
    # Rejections and reasons quote the input (ids, field values): shown through safe().
    for e in run.load.errors:
        err_console.print(Text.assemble(("rejected", "red"), safe(f" {e}")), highlight=False)
    for f in run.failures:
        what = f"{f['op']} {f['id']} (HTTP {f['status']})" if "op" in f else f["doc_id"]
        err_console.print(Text.assemble(("failed", "red"), safe(f" {what}: {f['reason']}")))
    heading = f"ingest {run.path} for {run.tenant}" + (" (dry run)" if run.dry_run else "")
    t = Table(title=title(heading))
    t.add_column("what")
    t.add_column("value", justify="right")
    for k, v in summary.items():
        add_row(t, k, v)
    console.print(t)


def _print_sync(run: SyncRun, acl_name: str, as_json: bool) -> None:
    summary = run.summary()
    if as_json:
        emit_json(
            {
                **summary,
                "default_acl": acl_name,
                "refused_examples": run.examples,
                "failures": run.failures,
                "warnings": run.warnings,
                **({"preview": run.preview} if run.dry_run else {}),
            }
        )
        return
    # Source records are untrusted: ids, reasons and previews through safe().
    for w in run.warnings:
        err_console.print(Text.assemble(("warning", "yellow"), safe(f" {w}")), highlight=False)
    for e in run.examples:
        what = f" {e['doc_id'] or '(no id)'} ({e['reason']}): {e['message']}"
        err_console.print(Text.assemble(("refused", "red"), safe(what)), highlight=False)
    for f in run.failures:
        what = f"{f['op']} {f['id']} (HTTP {f['status']})" if "op" in f else f["doc_id"]
        err_console.print(Text.assemble(("failed", "red"), safe(f" {what}: {f['reason']}")))
    for doc in run.preview:
        console.print(safe(json.dumps(doc, ensure_ascii=False, default=str)), highlight=False)
    heading = f"sync {run.source} for {run.tenant}" + (" (dry run)" if run.dry_run else "")
    t = Table(title=title(heading))
    t.add_column("what")
    t.add_column("value", justify="right")
    for k, v in summary.items():
        if isinstance(v, dict):
            v = ", ".join(f"{a}: {b}" for a, b in v.items()) or "none"
        add_row(t, k, v)
    console.print(t)
