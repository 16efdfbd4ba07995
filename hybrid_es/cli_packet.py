"""``hybrid-es packet build|show|validate|refresh|render`` for a case."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from hybrid_es.cli_common import console, emit_json, make_scope, make_searcher, settings, tracer

app = typer.Typer(no_args_is_help=True, help="Evidence packets: build, revalidate, render.")

Tenant = Annotated[str, typer.Option(help="Caller's tenant.")]
User = Annotated[str, typer.Option(help="Caller's user id.")]
Groups = Annotated[list[str] | None, typer.Option("--group", help="Caller's groups.")]
ScopeVersion = Annotated[str, typer.Option(help="Caller's current scope version.")]
Json = Annotated[bool, typer.Option("--json")]


def _service() -> Any:
    from datetime import timedelta

    from hybrid_es.packets.service import PacketService
    from hybrid_es.packets.store import PacketStore

    s = settings()
    searcher = make_searcher(s)
    return PacketService(
        searcher,
        PacketStore(searcher.client, s.packets_index),
        ttl=timedelta(minutes=s.packet_ttl_minutes),
        on_event=tracer(s).packet_event,
    )


def _principal(tenant: str, user: str, group: list[str] | None, scope_version: str) -> Any:
    from hybrid_es.models import Principal

    return Principal(
        tenant=tenant, user_id=user, groups=tuple(group or ()), scope_version=scope_version
    )


def _print_manifest(m: Any) -> None:
    t = Table(title=f"{m.packet_id} ({m.status})")
    t.add_column("field")
    t.add_column("value")
    for k in (
        "tenant",
        "principal_scope_version",
        "policy_version",
        "corpus_watermark",
        "assembled_at",
        "expires_at",
    ):
        t.add_row(k, str(getattr(m, k)))
    t.add_row("query_scope", f"{m.query_scope.label}: {m.query_scope.query!r}")
    t.add_row("unresolved", ", ".join(m.unresolved) or "-")
    t.add_row("superseded_by", m.superseded_by or "-")
    console.print(t)
    mt = Table(title="members")
    for c in ("section", "source_id", "version", "chunk"):
        mt.add_column(c)
    for mem in m.members:
        mt.add_row(mem.section, mem.source_id, str(mem.version), mem.chunk_id)
    console.print(mt)


def _print_verdict(pid: str, v: Any) -> None:
    style = {"reuse": "green", "refresh_required": "yellow"}.get(v.kind, "red")
    console.print(f"{pid}: [{style}]{v.kind}[/{style}]")
    for r in v.reasons:
        console.print(f"  - {r}", markup=False)
    if v.discard:
        console.print(f"  discard: {', '.join(v.discard)}", markup=False)


@app.command()
def build(
    case_id: Annotated[str, typer.Argument(help="The case, e.g. JPN-2026-0417.")],
    query: Annotated[str, typer.Option(help="The retrieval question for the packet.")],
    tenant: Tenant,
    user: User = "cli",
    group: Groups = None,
    scope_version: ScopeVersion = "1",
    label: Annotated[str | None, typer.Option(help="Query-scope label.")] = None,
    stay: Annotated[str | None, typer.Option(help="Stay dates FROM..TO.")] = None,
    as_of: Annotated[str | None, typer.Option(help="As-of date.")] = None,
    booking: Annotated[list[str] | None, typer.Option(help="Booking scope.")] = None,
    unresolved: Annotated[list[str] | None, typer.Option(help="Open questions.")] = None,
    as_json: Json = False,
) -> None:
    """Retrieve and store version 1 of a case packet."""
    svc = _service()
    stored = svc.build(
        case_id,
        label or case_id,
        query,
        _principal(tenant, user, group, scope_version),
        make_scope(as_of=as_of, stay=stay, booking=booking),
        unresolved=tuple(unresolved or ()),
    )
    p50, _ = svc.metrics.percentiles("packet_build")
    if as_json:
        emit_json({"manifest": stored.manifest.model_dump(mode="json"), "build_ms": p50})
        return
    _print_manifest(stored.manifest)
    console.print(f"built in {p50:.0f} ms")


@app.command()
def show(packet_id: str, as_json: Json = False) -> None:
    """Print a stored manifest."""
    from hybrid_es.client import make_client
    from hybrid_es.packets.store import PacketStore

    s = settings()
    m = PacketStore(make_client(s), s.packets_index).get(packet_id).manifest
    if as_json:
        emit_json(m.model_dump(mode="json"))
    else:
        _print_manifest(m)


@app.command()
def validate(
    packet_id: str,
    tenant: Tenant,
    user: User = "cli",
    group: Groups = None,
    scope_version: ScopeVersion = "1",
    as_json: Json = False,
) -> None:
    """Revalidate a packet for a caller: reuse, refresh_required, deny, unverified or withhold."""
    svc = _service()
    v = svc.validate(packet_id, _principal(tenant, user, group, scope_version))
    if as_json:
        emit_json(v.model_dump(mode="json"))
    else:
        _print_verdict(packet_id, v)
    if not v.releasable:
        raise typer.Exit(3)


@app.command()
def refresh(
    packet_id: str,
    tenant: Tenant,
    user: User = "cli",
    group: Groups = None,
    scope_version: ScopeVersion = "1",
    as_json: Json = False,
) -> None:
    """Re-run retrieval for the packet's query scope and write the next version."""
    svc = _service()
    stored = svc.refresh(packet_id, _principal(tenant, user, group, scope_version))
    if as_json:
        emit_json(stored.manifest.model_dump(mode="json"))
    else:
        _print_manifest(stored.manifest)


@app.command()
def render(
    packet_id: str,
    tenant: Tenant,
    user: User = "cli",
    group: Groups = None,
    scope_version: ScopeVersion = "1",
    budget: Annotated[int, typer.Option(help="Token budget.")] = 2000,
    as_json: Json = False,
) -> None:
    """Revalidate, then print the packet as model context (only on a reuse verdict)."""
    svc = _service()
    v, r = svc.render(
        packet_id, _principal(tenant, user, group, scope_version), budget_tokens=budget
    )
    if as_json:
        emit_json(
            {
                "verdict": v.model_dump(mode="json"),
                "rendered": None if r is None else r.model_dump(mode="json"),
            }
        )
    elif r is None:
        _print_verdict(packet_id, v)
    else:
        console.print(r.text, markup=False, highlight=False)
        console.print(f"[dim]{r.tokens} tokens; cut: {', '.join(r.cut) or 'nothing'}[/dim]")
    if r is None:
        raise typer.Exit(3)


def _percentiles(operation: str) -> dict[str, Any]:
    field = f"latency_ms.{operation}"
    return {
        "filter": {"term": {"operation": operation}},
        "aggs": {"ms": {"percentiles": {"field": field, "percents": [50, 95]}}},
    }


@app.command()
def stats(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant.")] = None,
    as_json: Json = False,
) -> None:
    """Reuse rate, verdicts and packet build/validate p50/p95, from the trace index."""
    from hybrid_es.client import make_client

    s = settings()
    flt: list[dict[str, Any]] = [{"terms": {"operation": ["packet_build", "packet_validate"]}}]
    if tenant:
        flt.append({"term": {"tenant": tenant}})
    resp = make_client(s).search(
        index=s.traces_index,
        size=0,
        query={"bool": {"filter": flt}},
        ignore_unavailable=True,
        aggs={
            "reuse_rate": {"avg": {"field": "packet_reuse"}},
            "verdicts": {"terms": {"field": "packet_verdict", "size": 10}},
            "packet_build": _percentiles("packet_build"),
            "packet_validate": _percentiles("packet_validate"),
        },
    )
    aggs = resp.body.get("aggregations", {})
    ops: dict[str, dict[str, Any]] = {}
    for op in ("packet_build", "packet_validate"):
        values = aggs.get(op, {}).get("ms", {}).get("values", {})
        ops[op] = {
            "count": aggs.get(op, {}).get("doc_count", 0),
            "p50": values.get("50.0"),
            "p95": values.get("95.0"),
        }
    rate = aggs.get("reuse_rate", {}).get("value")
    verdicts = {b["key"]: b["doc_count"] for b in aggs.get("verdicts", {}).get("buckets", [])}
    if as_json:
        emit_json({"reuse_rate": rate, "verdicts": verdicts, "latency_ms": ops})
        return
    t = Table(title=f"packet operations{f' of {tenant}' if tenant else ''} (from traces)")
    t.add_column("what")
    t.add_column("value", justify="right")
    t.add_row("reuse rate", "-" if rate is None else f"{rate:.1%}")
    for k, v in verdicts.items():
        t.add_row(f"verdict {k}", str(v))
    for op, d in ops.items():
        t.add_row(
            f"{op} p50 / p95 ms (n={d['count']})",
            "-" if d["p50"] is None else f"{d['p50']:.0f} / {d['p95']:.0f}",
        )
    console.print(t)
