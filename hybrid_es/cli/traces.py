"""``hybrid-es traces tail|show``: the traces index as tables, for people without Kibana.

A caller reads their own traces (``--tenant``, ``--user``); ``--operator`` reads every tenant's
(or one tenant's with ``--tenant``). Reading is scoped in the library (``trace_reader``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from hybrid_es.cli.common import (
    User,
    bad,
    client,
    console,
    emit_json,
    hits_table,
    make_principal,
    settings,
)
from hybrid_es.traces.documents import STAGES
from hybrid_es.traces.reader import ID_CHARS, TraceReader

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Read query and packet traces (what Kibana's traces dashboard shows).",
)

OPERATOR_HOME = "hybrid-es-ops"
"""The home tenant of an ``--operator`` that reads every tenant (it holds no data of its own)."""

IndexOption = Annotated[
    str | None,
    typer.Option("--index", help="Traces index or pattern (default: HYBRID_ES_TRACES_INDEX)."),
]
TenantOption = Annotated[
    str | None, typer.Option(help="Caller's tenant (required unless --operator).")
]
OperatorOption = Annotated[
    bool,
    typer.Option(help="Read as an operator: every tenant's traces, or --tenant's."),
]


def _reader(index: str | None) -> TraceReader:
    s = settings()
    return TraceReader(client(s), index or s.traces_index, url=s.redacted_url())


def _caller(tenant: str | None, user: str, operator: bool) -> Any:
    if tenant is None and not operator:
        raise bad("--tenant", "say whose traces to read (--tenant and --user), or --operator")
    return make_principal(tenant or OPERATOR_HOME, user, operator=operator)


@app.command()
def tail(
    n: Annotated[int, typer.Option("-n", "--lines", min=1, max=1000, help="How many.")] = 20,
    tenant: TenantOption = None,
    user: User = "cli",
    operator: OperatorOption = False,
    errors: Annotated[bool, typer.Option("--errors", help="Only traces with an error.")] = False,
    index: IndexOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the documents as JSON.")] = False,
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
    t = Table(title=f"last {len(docs)} trace(s) in {reader.index} for {who}")
    for name, justify in [
        ("time (UTC)", "left"),
        ("trace", "left"),
        ("operation", "left"),
        ("who", "left"),
        ("query / packet", "left"),
        ("fusion", "left"),
        ("hits", "right"),
        ("total ms", "right"),
        ("outcome", "left"),
    ]:
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for d in docs:
        t.add_row(*(Text(v) for v in _row(d)))
    console.print(t)
    if not docs:
        console.print("no traces yet: searches write them once tracing is enabled", style="dim")


def _row(d: dict[str, Any]) -> list[str]:
    total = (d.get("latency_ms") or {}).get("total")
    return [
        _time(d.get("@timestamp")),
        str(d.get("trace_id", ""))[:ID_CHARS],
        str(d.get("operation", "")),
        f"{d.get('tenant', '')}/{d.get('principal_id', '')}",
        str(d.get("packet_id") or d.get("query_hash") or "-"),
        str(d.get("fusion_path") or "-"),
        "-" if d.get("hit_count") is None else str(d["hit_count"]),
        "-" if total is None else f"{total:.1f}",
        _outcome(d),
    ]


def _outcome(d: dict[str, Any]) -> str:
    if d.get("error"):
        kind = d.get("error_type")
        return f"error: {kind}" if kind else "error"
    if d.get("packet_verdict"):
        return str(d["packet_verdict"])
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
    as_json: Annotated[bool, typer.Option("--json", help="Print the document as JSON.")] = False,
) -> None:
    """One of the caller's traces in full: who, what, per-stage latency and every candidate
    with provenance."""
    doc = _reader(index).show(_caller(tenant, user, operator), trace_id)
    if as_json:
        emit_json(doc)
        return
    _print_trace(doc)


def _print_trace(doc: dict[str, Any]) -> None:
    head = Table(title=f"trace {doc.get('trace_id', '')}", show_header=False)
    head.add_column("field")
    head.add_column("value")
    for key in (
        "@timestamp",
        "operation",
        "tenant",
        "principal_id",
        "scope_version",
        "policy_version",
        "query_hash",
        "query_text",
        "fusion_path",
        "fusion_reason",
        "reranked",
        "hit_count",
        "candidate_count",
        "packet_id",
        "packet_verdict",
        "packet_reasons",
        "error_type",
        "error",
        "request_digest",
    ):
        if doc.get(key) not in (None, "", []):
            value = doc[key]
            text = "; ".join(map(str, value)) if isinstance(value, list) else str(value)
            head.add_row(Text(key), Text(text))
    console.print(head)

    latency = doc.get("latency_ms") or {}
    if latency:
        lt = Table(title="latency (ms)")
        stages = [s for s in STAGES if s in latency]
        for s in stages:
            lt.add_column(s, justify="right")
        lt.add_row(*(f"{latency[s]:.1f}" for s in stages))
        console.print(lt)

    candidates = doc.get("candidates") or []
    if candidates:
        ct = hits_table(f"{len(candidates)} hit(s)")
        for c in sorted(candidates, key=lambda c: c.get("final_rank", 0)):
            ct.add_row(
                *(
                    Text(v)
                    for v in (
                        str(c.get("final_rank", "")),
                        str(c.get("chunk_id", "")),
                        str(c.get("source_version", "")),
                        _opt(c.get("sparse_rank")),
                        _opt(c.get("dense_rank")),
                        _opt(c.get("fused_score"), "{:.6f}"),
                        _opt(c.get("rerank_score"), "{:.3f}"),
                        str(c.get("authorization", "")),
                    )
                )
            )
        console.print(ct)


def _opt(value: Any, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)
