"""``hybrid-es traces tail|show|prune``: traces as tables, for people without Kibana, and
deleting old ones.

A caller reads their own traces (``--tenant``, ``--user``); ``--operator`` reads every tenant's
(or one tenant's with ``--tenant``). Reading is scoped in the library (``traces.reader``).
``prune`` is for operators only: it deletes every tenant's old traces (``traces.retention``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from hybrid_es.cli.common import (
    Json,
    User,
    add_row,
    bad,
    client,
    console,
    emit_json,
    hits_view,
    make_principal,
    safe,
    settings,
    title,
)
from hybrid_es.cli.help import App
from hybrid_es.traces.documents import NS, STAGES, value_at
from hybrid_es.traces.reader import ID_CHARS, TraceReader
from hybrid_es.traces.storage import TraceStorage

app = App(
    help="Read query and packet traces (what Kibana's traces dashboard shows); prune old ones.",
)

OPERATOR_HOME = "hybrid-es-ops"
"""The home tenant of an ``--operator`` that reads every tenant (it holds no data of its own)."""

IndexOption = Annotated[
    str | None,
    typer.Option(
        "--index",
        metavar="NAME",
        help="Traces index, data stream or pattern to read (default: HYBRID_ES_TRACES_INDEX-*: "
        "the data stream and every dated index).",
    ),
]
TenantOption = Annotated[
    str | None, typer.Option(metavar="ID", help="Caller's tenant (required unless --operator).")
]
OperatorOption = Annotated[
    bool,
    typer.Option(help="Read as an operator: every tenant's traces, or --tenant's."),
]


def _reader(index: str | None) -> TraceReader:
    s = settings()
    return TraceReader(client(s), index or TraceStorage(s.traces_index), url=s.redacted_url())


def _caller(tenant: str | None, user: str, operator: bool) -> Any:
    if tenant is None and not operator:
        raise bad("--tenant", "say whose traces to read (--tenant and --user), or --operator")
    return make_principal(tenant or OPERATOR_HOME, user, operator=operator)


@app.command()
def tail(
    n: Annotated[int, typer.Option("-n", "--lines", min=1, max=1000, help="How many traces.")] = 20,
    tenant: TenantOption = None,
    user: User = "cli",
    operator: OperatorOption = False,
    errors: Annotated[bool, typer.Option("--errors", help="Only traces with an error.")] = False,
    index: IndexOption = None,
    as_json: Json = False,
) -> None:
    """The caller's most recent traces, oldest first (like tail)."""
    principal = _caller(tenant, user, operator)
    reader = _reader(index)
    docs = reader.tail(
        principal, n=n, errors=errors, tenant=tenant if operator else None, candidates=as_json
    )
    if as_json:
        emit_json(docs)
        return
    who = (tenant or "every tenant") if operator else f"{tenant}/{user}"
    heading = f"last {len(docs)} trace(s) in {reader.index} for {who}"
    console.print(tail_view(heading, docs, operator=operator))
    if not docs:
        console.print("no traces yet: searches write them once tracing is enabled", style="dim")


TAIL_COLUMNS = (
    ("time (UTC)", "left"),
    ("trace", "left"),
    ("operation", "left"),
    ("who", "left"),
    ("query / packet", "left"),
    ("fusion", "left"),
    ("hits", "right"),
    ("total ms", "right"),
    ("outcome", "left"),
)
"""The columns of ``tail``'s table where the terminal is wide enough for each whole."""


def tail_view(heading: str, docs: list[dict[str, Any]], *, operator: bool) -> Table:
    """``tail``'s traces: a table with a column per field (:data:`TAIL_COLUMNS`) where the
    console is wide enough to show every cell whole; narrower (80 columns, or output piped), two
    columns, so that nothing is cut to an ellipsis: the time and the trace id to give ``show``,
    and two lines of what happened: the operation (by whom, for an operator, who reads many
    callers'), its outcome; the query (its text where traces keep it, else its hash's first
    characters) or packet, the fusion path, hits and total milliseconds. Every cell goes through
    ``safe``."""
    t = Table(title=title(heading))
    for name, justify in TAIL_COLUMNS:
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for d in docs:
        add_row(t, *_row(d))
    natural = console.measure(t, options=console.options.update_width(10_000)).maximum
    if natural <= console.width:
        return t
    t = Table(title=title(heading))
    t.add_column("time (UTC) / trace", no_wrap=True)
    t.add_column("operation · outcome / query or packet · fusion · hits · ms")
    for d in docs:
        when, trace, operation, who, _, fusion, hits, total, outcome = _row(d)
        head = safe(operation, style="bold")
        if operator:
            head.append_text(safe(f" by {who}"))
        head.append(" · ")
        head.append_text(safe(outcome, style="red" if outcome.startswith("error") else ""))
        facts = [_subject(d)]
        facts += [] if fusion == "-" else [fusion]
        facts += [] if hits == "-" else [f"{hits} hit(s)"]
        facts += [] if total == "-" else [f"{total} ms"]
        t.add_row(
            safe(when.partition(".")[0]).append("\n").append_text(safe(trace)),
            head.append("\n").append_text(safe(" · ".join(facts))),
        )
    return t


def _subject(d: dict[str, Any]) -> str:
    """What a trace was about, short: ``packet ID``, the query's text where the deployment
    keeps it (``HYBRID_ES_TRACE_QUERY_TEXT``), else ``query`` and its hash's first characters
    (enough to match two traces of one query)."""
    packet = _v(d, f"{NS}.packet.id")
    if packet:
        return f"packet {packet}"
    text = _v(d, f"{NS}.query_text")
    if text:
        return f"query {text!r}"
    digest = _v(d, f"{NS}.query_hash")
    return f"query {str(digest)[:ID_CHARS]}" if digest else "-"


def _v(d: dict[str, Any], path: str) -> Any:
    return value_at(d, path)


def _row(d: dict[str, Any]) -> list[str]:
    total = _v(d, f"{NS}.latency_ms.total")
    hits = _v(d, f"{NS}.hit_count")
    return [
        _time(d.get("@timestamp")),
        str(_v(d, "trace.id") or "")[:ID_CHARS],
        str(_v(d, "event.action") or ""),
        f"{_v(d, 'organization.id') or ''}/{_v(d, 'user.id') or ''}",
        str(_v(d, f"{NS}.packet.id") or _v(d, f"{NS}.query_hash") or "-"),
        str(_v(d, f"{NS}.fusion_path") or "-"),
        "-" if hits is None else str(hits),
        "-" if total is None else f"{total:.1f}",
        _outcome(d),
    ]


def _outcome(d: dict[str, Any]) -> str:
    if _v(d, "error.message"):
        kind = _v(d, "error.type")
        return f"error: {kind}" if kind else "error"
    if _v(d, f"{NS}.packet.verdict"):
        return str(_v(d, f"{NS}.packet.verdict"))
    return "ok"


def _time(ts: Any) -> str:
    text = str(ts or "")
    return text.replace("T", " ").replace("+00:00", "").replace("Z", "")


@app.command()
def show(
    trace_id: Annotated[str, typer.Argument(help="A trace id, or its first characters.")],
    tenant: TenantOption = None,
    user: User = "cli",
    operator: OperatorOption = False,
    index: IndexOption = None,
    as_json: Json = False,
) -> None:
    """One of the caller's traces in full: who, what, per-stage latency and every candidate
    with provenance."""
    doc = _reader(index).show(_caller(tenant, user, operator), trace_id)
    if as_json:
        emit_json(doc)
        return
    _print_trace(doc)


SHOWN = (
    "@timestamp",
    "event.action",
    "event.outcome",
    "organization.id",
    "user.id",
    f"{NS}.scope_version",
    f"{NS}.policy_version",
    f"{NS}.query_hash",
    f"{NS}.query_text",
    f"{NS}.fusion_path",
    f"{NS}.fusion_reason",
    f"{NS}.reranked",
    f"{NS}.hit_count",
    f"{NS}.candidate_count",
    f"{NS}.packet.id",
    f"{NS}.packet.verdict",
    f"{NS}.packet.reasons",
    "error.type",
    "error.message",
    f"{NS}.request_digest",
)
"""The fields ``show`` lists, in order (ECS names; ``hybrid_es.*`` for our own)."""


def _print_trace(doc: dict[str, Any]) -> None:
    head = Table(title=title(f"trace {_v(doc, 'trace.id') or ''}"), show_header=False)
    head.add_column("field")
    head.add_column("value")
    for key in SHOWN:
        value = _v(doc, key)
        if value not in (None, "", []):
            text = "; ".join(map(str, value)) if isinstance(value, list) else str(value)
            add_row(head, key, text)
    console.print(head)

    latency = _v(doc, f"{NS}.latency_ms") or {}
    if latency:
        lt = Table(title="latency (ms)")
        stages = [s for s in STAGES if s in latency]
        for s in stages:
            lt.add_column(s, justify="right")
        add_row(lt, *(f"{latency[s]:.1f}" for s in stages))
        console.print(lt)

    candidates = _v(doc, f"{NS}.candidates") or []
    if candidates:
        rows: list[tuple[object, ...]] = [
            (
                c.get("final_rank", ""),
                c.get("chunk_id", ""),
                c.get("source_version", ""),
                _opt(c.get("sparse_rank")),
                _opt(c.get("dense_rank")),
                _opt(c.get("fused_score"), "{:.6f}"),
                _opt(c.get("rerank_score"), "{:.3f}"),
                c.get("authorization", ""),
            )
            for c in sorted(candidates, key=lambda c: c.get("final_rank", 0))
        ]
        console.print(hits_view(f"{len(candidates)} hit(s)", rows, width=console.width))


def _opt(value: Any, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)


@app.command()
def prune(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Delete traces older than this: whole days or hours (30d, 12h).",
        ),
    ],
    operator: Annotated[
        bool,
        typer.Option(help="Required: pruning deletes every tenant's traces (operators only)."),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be deleted; delete nothing.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Delete old traces, whole indices at a time: dated indices whose day is over the age, and
    (where the cluster does not age them out itself) old backing indices of the data stream."""
    from datetime import UTC, datetime

    from hybrid_es.errors import BadQueryError
    from hybrid_es.traces.retention import parse_age, prune_traces
    from hybrid_es.traces.storage import trace_storage

    try:
        age = parse_age(older_than)
    except BadQueryError as exc:
        raise bad("--older-than", exc.message) from None
    if not operator:
        raise bad("--operator", "pruning deletes every tenant's traces: operators only")
    s = settings()
    es = client(s)
    report = prune_traces(
        es,
        trace_storage(es, s),
        make_principal(OPERATOR_HOME, "cli", operator=True),
        older_than=age,
        now=datetime.now(UTC),
        dry_run=dry_run,
    )
    if as_json:
        emit_json(report.as_dict())
        return
    verb = "would delete" if dry_run else "deleted"
    console.print(
        safe(
            f"traces older than {report.cutoff} ({report.storage}): {verb} "
            f"{len(report.deleted)} index(es), kept {len(report.kept)}"
        )
    )
    for name in report.deleted:
        console.print(safe(f"  {verb}: {name}"))
    if report.rolled_over:
        roll = "would roll over" if dry_run else "rolled over"
        console.print(safe(f"  {roll} the data stream (its write index {report.rolled_over})"))
    for note in report.notes:
        console.print(safe(f"  note: {note}", style="dim"))
