"""``hybrid-es traces tail|show``: the traces index as tables, for people without Kibana."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from hybrid_es.cli_common import client, console, emit_json, err_console, hits_table, settings
from hybrid_es.errors import translate_es_error
from hybrid_es.traces import STAGES

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Read query and packet traces (what Kibana's traces dashboard shows).",
)

ID_CHARS = 12
"""Trace ids are shown (and may be given to ``show``) as their first 12 characters."""

IndexOption = Annotated[
    str | None,
    typer.Option("--index", help="Traces index or pattern (default: HYBRID_ES_TRACES_INDEX)."),
]


def _search(index: str | None, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    s = settings()
    idx = index or s.traces_index
    try:
        resp = client(s).search(index=idx, **body)
    except Exception as exc:
        raise translate_es_error(
            exc, url=s.redacted_url(), what=f"reading traces from {idx}"
        ) from exc
    return idx, [h["_source"] for h in resp.body["hits"]["hits"]]


@app.command()
def tail(
    n: Annotated[int, typer.Option("-n", "--lines", min=1, max=1000, help="How many.")] = 20,
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's traces.")] = None,
    errors: Annotated[bool, typer.Option("--errors", help="Only traces with an error.")] = False,
    index: IndexOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the documents as JSON.")] = False,
) -> None:
    """The most recent traces, oldest first (like tail)."""
    filters: list[dict[str, Any]] = []
    if tenant:
        filters.append({"term": {"tenant": tenant}})
    if errors:
        filters.append({"exists": {"field": "error"}})
    body: dict[str, Any] = {
        "query": {"bool": {"filter": filters}},
        "sort": [{"@timestamp": "desc"}, {"trace_id": "asc"}],
        "size": n,
    }
    if not as_json:
        body["source_excludes"] = ["candidates", "query_text"]
    idx, docs = _search(index, body)
    docs.reverse()
    if as_json:
        emit_json(docs)
        return
    t = Table(title=f"last {len(docs)} trace(s) in {idx}" + (f" for {tenant}" if tenant else ""))
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
    index: IndexOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the document as JSON.")] = False,
) -> None:
    """One trace in full: who, what, per-stage latency and every candidate with provenance."""
    wanted = trace_id.strip().lower()
    if not wanted:
        raise typer.BadParameter("give a trace id (see `hybrid-es traces tail`)")
    query = {"prefix": {"trace_id": wanted}} if len(wanted) < 32 else {"term": {"trace_id": wanted}}
    idx, docs = _search(index, {"query": query, "size": 2, "sort": [{"@timestamp": "desc"}]})
    if not docs:
        err_console.print(
            f"no trace {trace_id!r} in {idx}; `hybrid-es traces tail` lists recent ones",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)
    if len(docs) > 1:
        err_console.print(
            f"{trace_id!r} matches more than one trace in {idx}; give more characters",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(1)
    doc = docs[0]
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
