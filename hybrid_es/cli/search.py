"""``hybrid-es search``: one hybrid search as the caller, with a provenance table."""

from __future__ import annotations

import time
from typing import Annotated, Any

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
    bad,
    console,
    emit_json,
    hits_view,
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
    filter_json: Annotated[
        str | None,
        typer.Option(
            "--filter",
            help="Narrow to records whose declared metadata fields match, as JSON: "
            '\'{"team": "ops", "year": {"$gte": 2024}}\' ($eq $ne $gt $gte $lt $lte $in $nin, '
            "$and $or $not; fields from HYBRID_ES_FILTERABLE_FIELDS).",
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Hybrid search with a provenance table."""
    s = settings()
    filters = parse_filter(filter_json, s.filterable_fields)
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
        filters=filters,
    )
    if as_json:
        emit_json(resp.model_dump(mode="json", exclude={"hits": {"__all__": {"source"}}}))
        return
    rows: list[tuple[object, ...]] = [
        (
            h.final_rank,
            h.chunk_id,
            h.source_version,
            h.sparse_rank or "-",
            h.dense_rank or "-",
            f"{h.fused_score:.6f}",
            "-" if h.rerank_score is None else f"{h.rerank_score:.3f}",
            h.authorization.short(),
        )
        for h in resp.hits
    ]
    console.print(hits_view(f"{query!r} as {tenant}/{user}", rows, width=console.width))
    timing = ", ".join(f"{k} {v:.1f} ms" for k, v in resp.timings_ms.items())
    weight = "" if resp.dense_weight is None else f"; dense weight {resp.dense_weight:.2f}"
    model = "" if resp.embedder is None else f"; query embedded by {resp.embedder}"
    console.print(safe(f"fusion: {resp.fusion_path} ({resp.fusion_reason}{weight}{model})"))
    console.print(safe(f"rerank: {resp.rerank_note}"))
    if filters:
        from hybrid_es.retrieval.filters import filter_summary

        console.print(safe(f"filter: {', '.join(filter_summary(filters))}"))
    console.print(f"candidates: {resp.candidates}; {timing} (model load {load_ms:.0f} ms, once)")


def parse_filter(text: str | None, fields: Any) -> dict[str, Any] | None:
    """``--filter``'s JSON as a filter, checked against the declared ``fields`` before any
    model is loaded or request sent: a usage error (exit 64) naming ``--filter`` and what is
    wrong (not JSON, not an object, a field that is not filterable, a bad operator or value)."""
    if text is None:
        return None
    from hybrid_es.errors import FilterError
    from hybrid_es.ingest.jsonlines import describe_json_error, parse_json
    from hybrid_es.retrieval.filters import translate_filter

    try:
        value = parse_json(text)
    except ValueError as exc:
        raise bad("--filter", f"not JSON: {describe_json_error(exc)}") from None
    if not isinstance(value, dict):
        raise bad("--filter", 'a filter is a JSON object, e.g. \'{"team": "ops"}\'')
    try:
        translate_filter(value, fields)
    except FilterError as exc:
        raise bad("--filter", f"{exc.message}; {exc.hint}") from None
    return value
