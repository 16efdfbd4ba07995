"""``hybrid-es search``: one hybrid search as the caller, with a provenance table."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from hybrid_es.cli.common import (
    AsOf,
    Booking,
    Groups,
    Historical,
    Json,
    Jurisdiction,
    Property,
    SourceType,
    Stay,
    Tenant,
    User,
    add_row,
    console,
    emit_json,
    hits_table,
    make_principal,
    make_scope,
    make_searcher,
    safe,
    settings,
)


def search(
    query: Annotated[str, typer.Argument(help="The question.")],
    tenant: Tenant,
    user: User = "cli",
    group: Groups = None,
    as_of: AsOf = None,
    stay: Stay = None,
    booking: Booking = None,
    prop: Property = None,
    source_type: SourceType = None,
    jurisdiction: Jurisdiction = None,
    historical: Historical = False,
    top_k: Annotated[int, typer.Option(help="Hits to return.")] = 5,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Skip the cross-encoder.")] = False,
    fusion: Annotated[str | None, typer.Option(help="auto | native | client")] = None,
    embedder: Annotated[str | None, typer.Option(help="minilm | e5 | a model path")] = None,
    as_json: Json = False,
) -> None:
    """Hybrid search with a provenance table."""
    s = settings()
    scope = make_scope(
        as_of=as_of,
        stay=stay,
        booking=booking,
        prop=prop,
        source_type=source_type,
        jurisdiction=jurisdiction,
        historical=historical,
    )
    principal = make_principal(tenant, user, group)
    t_load = time.perf_counter()
    searcher = make_searcher(s, embedder, fusion, rerank=not no_rerank)
    load_ms = (time.perf_counter() - t_load) * 1000
    resp = searcher.search(
        query,
        principal,
        scope,
        top_k=top_k,
        rerank=not no_rerank,
        rerank_depth=min(s.rerank_depth, searcher.params.window),
    )
    if as_json:
        emit_json(resp.model_dump(mode="json", exclude={"hits": {"__all__": {"source"}}}))
        return
    t = hits_table(f"{query!r} as {tenant}/{user}")
    for h in resp.hits:
        add_row(
            t,
            h.final_rank,
            h.chunk_id,
            h.source_version,
            h.sparse_rank or "-",
            h.dense_rank or "-",
            f"{h.fused_score:.6f}",
            "-" if h.rerank_score is None else f"{h.rerank_score:.3f}",
            h.authorization.short(),
        )
    console.print(t)
    timing = ", ".join(f"{k} {v:.1f} ms" for k, v in resp.timings_ms.items())
    console.print(safe(f"fusion: {resp.fusion_path} ({resp.fusion_reason})"))
    console.print(safe(f"rerank: {resp.rerank_note}"))
    console.print(f"candidates: {resp.candidates}; {timing} (model load {load_ms:.0f} ms, once)")
