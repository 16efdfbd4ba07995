"""``hybrid-es search``: one hybrid search as the caller: each hit's title, an excerpt of its
text, and its provenance."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from hybrid_es.cli.common import (
    Embedder,
    Json,
    bad,
    caller_options,
    console,
    emit_json,
    excerpt,
    hits_view,
    make_searcher,
    safe,
    scope_options,
    settings,
)
from hybrid_es.models import Principal, RequestScope


@caller_options()
@scope_options
def search(
    query: Annotated[str, typer.Argument(help="The question.")],
    caller: Principal,
    scope: RequestScope,
    top_k: Annotated[int, typer.Option(help="Hits to return.")] = 5,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Skip the cross-encoder.")] = False,
    fusion: Annotated[str | None, typer.Option(help="auto | native | client")] = None,
    embedder: Embedder = None,
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
    """Hybrid search: each hit's title, an excerpt of its text and its provenance."""
    s = settings()
    filters = parse_filter(filter_json, s.filterable_fields)
    t_load = time.perf_counter()
    searcher = make_searcher(s, embedder, fusion, rerank=not no_rerank)
    load_ms = (time.perf_counter() - t_load) * 1000
    resp = searcher.search(
        query,
        caller,
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
    texts = [(h.title, excerpt(h.text)) for h in resp.hits]
    heading = f"{query!r} as {caller.tenant}/{caller.user_id}"
    console.print(hits_view(heading, rows, width=console.width, texts=texts))
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
