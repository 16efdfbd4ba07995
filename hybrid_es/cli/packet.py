"""``hybrid-es packet build|show|validate|refresh|render|stats`` for a case.

Every command acts for one caller (``--tenant``, ``--user``, ``--group``): a packet is its
owner's working set, so another caller's packet answers exactly like one that does not exist.
Reuse decisions (``validate``, ``render``) take the follow-up's scope (``--stay``, ``--as-of``,
``--booking``, ...): a follow-up about another scope does not reuse the packet.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from hybrid_es.cli.common import (
    Json,
    Tenant,
    User,
    add_row,
    caller_options,
    client,
    console,
    deployment,
    emit_json,
    make_principal,
    safe,
    scope_options,
    settings,
    title,
)
from hybrid_es.cli.help import App
from hybrid_es.models import Principal, RequestScope

app = App(help="Evidence packets: build, revalidate, render.")

PacketId = Annotated[
    str, typer.Argument(help="One of the caller's packets, e.g. JPN-2026-0417-packet-v1.")
]


def _service(*, warm: bool = True) -> Any:
    """The deployment's packet service (``common.deployment``), its models loaded with
    ``warm``."""
    service = deployment(settings()).packets
    if warm:
        service.searcher.warm_up()
    return service


def _print_manifest(m: Any, withheld: int = 0) -> None:
    t = Table(title=title(f"{m.packet_id} ({m.status})"))
    t.add_column("field")
    t.add_column("value")
    for k in (
        "tenant",
        "principal_id",
        "principal_scope_version",
        "policy_version",
        "corpus_watermark",
        "assembled_at",
        "expires_at",
    ):
        add_row(t, k, getattr(m, k))
    add_row(t, "query_scope", f"{m.query_scope.label}: {m.query_scope.query!r}")
    add_row(t, "unresolved", ", ".join(m.unresolved) or "-")
    add_row(t, "superseded_by", m.superseded_by or "-")
    if withheld:
        add_row(t, "withheld", f"{withheld} member(s) the caller may no longer see")
    console.print(t)
    mt = Table(title="members")
    for c in ("section", "source_id", "version", "chunk"):
        mt.add_column(c)
    for mem in m.members:
        add_row(mt, mem.section, mem.source_id, mem.version, mem.chunk_id)
    console.print(mt)


def _print_verdict(pid: str, v: Any) -> None:
    style = {"reuse": "green", "refresh_required": "yellow"}.get(v.kind, "red")
    console.print(Text.assemble(safe(f"{pid}: "), safe(v.kind, style=style)))
    for r in v.reasons:
        console.print(safe(f"  - {r}"))
    if v.discard:
        console.print(safe(f"  discard: {', '.join(v.discard)}"))


@app.command()
@caller_options(scope_version=True)
@scope_options
def build(
    case_id: Annotated[str, typer.Argument(help="The case, e.g. JPN-2026-0417.")],
    query: Annotated[str, typer.Option(help="The retrieval question for the packet.")],
    caller: Principal,
    scope: RequestScope,
    label: Annotated[str | None, typer.Option(help="Query-scope label.")] = None,
    unresolved: Annotated[
        list[str] | None, typer.Option(help="Open questions (repeatable).")
    ] = None,
    as_json: Json = False,
) -> None:
    """Retrieve and store the caller's packet for a case (the next version if one exists)."""
    svc = _service()
    stored = svc.build(
        case_id, label or case_id, query, caller, scope, unresolved=tuple(unresolved or ())
    )
    p50, _ = svc.metrics.percentiles("packet_build")
    if as_json:
        emit_json({"manifest": stored.manifest.model_dump(mode="json"), "build_ms": p50})
        return
    _print_manifest(stored.manifest)
    console.print(f"built in {p50:.0f} ms")


@app.command()
@caller_options(scope_version=True)
def show(packet_id: PacketId, caller: Principal, as_json: Json = False) -> None:
    """Print one of the caller's manifests (members the caller may no longer see withheld)."""
    manifest, withheld = _service(warm=False).show(packet_id, caller)
    if as_json:
        emit_json({"manifest": manifest.model_dump(mode="json"), "withheld_members": withheld})
    else:
        _print_manifest(manifest, withheld)


@app.command()
@caller_options(scope_version=True)
@scope_options
def validate(
    packet_id: PacketId, caller: Principal, scope: RequestScope, as_json: Json = False
) -> None:
    """Revalidate a packet for a follow-up about the given scope: reuse, refresh_required,
    deny, unverified or withhold (exit 3 unless reuse)."""
    v = _service(warm=False).validate(packet_id, caller, scope=scope)
    if as_json:
        emit_json(v.model_dump(mode="json"))
    else:
        _print_verdict(packet_id, v)
    if not v.releasable:
        raise typer.Exit(3)


@app.command()
@caller_options(scope_version=True)
def refresh(packet_id: PacketId, caller: Principal, as_json: Json = False) -> None:
    """Re-run retrieval for the packet's query scope and write the next version."""
    stored = _service().refresh(packet_id, caller)
    if as_json:
        emit_json(stored.manifest.model_dump(mode="json"))
    else:
        _print_manifest(stored.manifest)


@app.command()
@caller_options(scope_version=True)
@scope_options
def render(
    packet_id: PacketId,
    caller: Principal,
    scope: RequestScope,
    budget: Annotated[int, typer.Option(help="Token budget.")] = 2000,
    as_json: Json = False,
) -> None:
    """Revalidate, render and release-check: print the packet as model context for a follow-up
    about the given scope (only when both checks say reuse; exit 3 otherwise)."""
    v, r = _service(warm=False).render(packet_id, caller, scope=scope, budget_tokens=budget)
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
        # Already made visible by the renderer; safe() again leaves it unchanged (idempotent)
        # and guarantees that nothing the CLI adds is printed raw.
        console.print(safe(r.text, lines=True))
        console.print(safe(f"{r.tokens} tokens; cut: {', '.join(r.cut) or 'nothing'}", style="dim"))
    if r is None:
        raise typer.Exit(3)


@app.command()
def stats(
    tenant: Tenant,
    user: User = "cli",
    operator: Annotated[
        bool, typer.Option(help="Read as an operator: every user's traces of --tenant.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Reuse rate, verdicts and packet build/validate p50/p95, from the caller's traces."""
    from hybrid_es.traces.reader import TraceReader
    from hybrid_es.traces.storage import TraceStorage

    s = settings()
    principal = make_principal(tenant, user, operator=operator)
    # Reads need no storage kind: the pattern covers the data stream and the dated indices.
    reader = TraceReader(client(s), TraceStorage(s.traces_index), url=s.redacted_url())
    out = reader.packet_stats(principal, tenant=tenant)
    if as_json:
        emit_json(out)
        return
    who = f"{tenant}" if operator else f"{tenant}/{user}"
    t = Table(title=title(f"packet operations of {who} (from traces)"))
    t.add_column("what")
    t.add_column("value", justify="right")
    rate = out["reuse_rate"]
    add_row(t, "reuse rate", "-" if rate is None else f"{rate:.1%}")
    for k, v in out["verdicts"].items():
        add_row(t, f"verdict {k}", v)
    for op, d in out["latency_ms"].items():
        add_row(
            t,
            f"{op} p50 / p95 ms (n={d['count']})",
            "-" if d["p50"] is None else f"{d['p50']:.0f} / {d['p95']:.0f}",
        )
    console.print(t)
