"""``hybrid-es ingest``: load, chunk, contextualise, embed and index documents.

Exit status: 0 when everything was read and written; 1 when some input was rejected or some
write failed (each listed with its reason; the rest was written, and a rerun retries only what
is missing or changed); 2 for an error that stopped the run (see ``hybrid_es.cli.main.main``).
"""

from __future__ import annotations

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


class RateColumn(ProgressColumn):
    """Throughput in documents per second (rich's moving estimate)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None and task.elapsed:  # one sample so far: rich has no estimate yet
            speed = task.completed / task.elapsed
        return Text("- docs/s" if speed is None else f"{speed:,.1f} docs/s", style="cyan")


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
        Path, typer.Argument(help="A JSONL file, a BEIR folder, or a folder of .txt/.md files.")
    ],
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
            help="Rename a field before validation: SOURCE=TARGET (doc_id=id; repeatable).",
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
        bool, typer.Option(help="Validate and chunk only: no cluster, no model call.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Chunk, contextualise, embed and index documents, skipping unchanged ones."""
    from hybrid_es.errors import ConfigurationError
    from hybrid_es.ingest.indexer import DEFAULT_ACLS
    from hybrid_es.ingest.loaders import read_field_map
    from hybrid_es.ingest.run import PathIngest, with_suffixes

    s = settings()
    # The command line writes with the deployment's own cluster credentials: it is the tenant's
    # writer (ingest.authority), unless --member asks for a member's rights.
    principal = make_principal(tenant, user, group, writer=not member)
    acl_name = default_acl or s.default_acl
    if acl_name not in DEFAULT_ACLS:
        raise bad("--default-acl", f"must be none or everyone, not {acl_name!r}")
    try:
        fmap = read_field_map(field_map or (), map_file)
    except ValueError as exc:
        raise bad("--map" if field_map else "--map-file", str(exc)) from None
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
    with Progress(
        TextColumn("ingest"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        disable=as_json or dry_run,
    ) as bar:
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
