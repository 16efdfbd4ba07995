"""What every CLI module shares: consoles, settings, the client, JSON output."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from hybrid_es.settings import Settings

console = Console()
err_console = Console(stderr=True)


def settings() -> Settings:
    return Settings()


def client(s: Settings) -> Any:
    from hybrid_es.client import make_client

    return make_client(s)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")


def make_scope(
    *,
    as_of: str | None = None,
    stay: str | None = None,
    booking: list[str] | None = None,
    prop: list[str] | None = None,
    source_type: list[str] | None = None,
    jurisdiction: list[str] | None = None,
    historical: bool = False,
) -> Any:
    """A RequestScope from CLI options (``--stay FROM..TO``)."""
    from datetime import date

    import typer

    from hybrid_es.models import RequestScope

    stay_from = stay_to = None
    try:
        if stay:
            a, _, b = stay.partition("..")
            stay_from, stay_to = date.fromisoformat(a), date.fromisoformat(b)
        day = date.fromisoformat(as_of) if as_of else None
    except ValueError as exc:
        raise typer.BadParameter("dates are YYYY-MM-DD; a stay is FROM..TO") from exc
    return RequestScope(
        as_of=day,
        stay_from=stay_from,
        stay_to=stay_to,
        booking_ids=tuple(booking or ()),
        property_ids=tuple(prop or ()),
        source_types=tuple(source_type or ()),
        jurisdictions=tuple(jurisdiction or ()),
        historical=historical,
    )


def tracer(s: Settings) -> Any:
    """This process's trace hooks: one background writer to the traces index, flushed at exit.

    A cluster that refuses or cannot take traces costs nothing but the drops it counts.
    """
    if "tracer" not in _process:
        import atexit

        from hybrid_es.traces import TraceWriter, search_hook

        writer = TraceWriter(client(s), s.traces_index)
        atexit.register(writer.close, 5.0)
        _process["tracer"] = search_hook(writer, query_text=s.trace_query_text)
    return _process["tracer"]


_process: dict[str, Any] = {}


def make_searcher(s: Settings, embedder: str | None = None, fusion: str | None = None) -> Any:
    """A HybridSearcher for the configured indices, its model loaded once up front."""
    import typer

    from hybrid_es.embedder import make_embedder
    from hybrid_es.reranker import CrossEncoderReranker
    from hybrid_es.searcher import HybridSearcher

    mode = fusion or s.fusion
    if mode not in ("auto", "native", "client"):
        raise typer.BadParameter(f"--fusion must be auto, native or client, not {mode!r}")
    emb = make_embedder(embedder or s.embedder)
    emb.embed_queries(["warm-up"])  # load the model before anything is timed
    return HybridSearcher(
        client(s),
        emb,
        index=s.chunks_index,
        reranker=CrossEncoderReranker(
            s.reranker_model,
            precision=s.reranker_precision,  # type: ignore[arg-type]
            max_length=s.reranker_max_length,
        )
        if s.reranker_model
        else None,
        fusion=mode,  # type: ignore[arg-type]
        url=s.redacted_url(),
        corpus_state_index=s.corpus_state_index,
        on_response=tracer(s),
        on_error=tracer(s).on_error,
    )


def hits_table(title: str) -> Any:
    """The one hit table of ``search`` and ``traces show``: rank, chunk, version, per-leg ranks,
    fused and rerank scores, authorization."""
    from rich.table import Table

    t = Table(title=title)
    t.add_column("#", justify="right")
    t.add_column("chunk", no_wrap=True)
    for name in ("ver", "sparse", "dense", "fused", "rerank"):
        t.add_column(name, justify="right")
    t.add_column("authorization")
    return t
