"""The search benchmark's tables: what ran where, the ingest, latency per stage and quality.

The rows of each table are built by pure functions from the benchmark's record (the same record
``--json`` prints); :func:`print_report` puts them in rich tables on a console.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from benchmarks.bench import engine_line

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

COLUMNS = ("p50", "p95", "mean", "max")
StageRow = tuple[str, list[str], str]
"""A latency table row: label, cells (p50, p95, mean, max, n) and style."""


def fmt(st: Mapping[str, float | int], key: str) -> str:
    """One statistic with one decimal, ``-`` when absent."""
    v = st.get(key)
    return "-" if v is None else f"{v:.1f}"


def header_text(out: Mapping[str, Any]) -> str:
    """The command, the machine and the data, as rich markup."""
    m, s = out["machine"], out["search"]
    return (
        f"[bold]command:[/bold] {out['command']}\n"
        f"[bold]machine:[/bold] nproc={m['nproc']}, {m['platform']}, python {m['python']}, "
        f"torch threads {m['torch_threads']}, "
        f"{engine_line(m)}; "
        f"load average {m['load_average_at_start'][0]:.2f} at start, "
        f"{m['load_average_at_end'][0]:.2f} at end\n"
        f"[bold]dataset:[/bold] {out['dataset']} split={out['split']}, "
        f"{s['queries']} queries; index {out['index']}; embedder {out['embedder']}"
    )


def ingest_rows(ing: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ingest table: what and value."""
    rows: list[tuple[str, Any]] = [
        ("wall time", f"{ing['seconds']:.1f} s" + ("  (reused index)" if ing["reused"] else "")),
        ("documents", ing["documents"]),
        ("skipped unchanged", ing["skipped_unchanged"]),
        ("chunks written", ing["chunks_written"]),
        ("chunks in index", ing["chunks_in_index"]),
        ("  of which embedding", f"{ing['embed_seconds']:.1f} s"),
        ("  passages / s", ing["passages_per_second"] or "-"),
        ("  watermark bumps", f"{ing['watermark_bumps']} ({ing['watermark_seconds']:.1f} s)"),
    ]
    if ing["empty_corpus_entries"]:
        rows.append(("empty corpus entries (skipped)", ing["empty_corpus_entries"]))
    return [(k, str(v)) for k, v in rows]


def _stage(label: str, st: Mapping[str, float | int], style: str = "") -> StageRow:
    return (label, [*(fmt(st, c) for c in COLUMNS), str(st.get("n", 0))], style)


def stage_rows(s: Mapping[str, Any]) -> list[StageRow]:
    """The latency table: each stage, the engine's took under the round trip, and the rest."""
    stages, took, der = s["stages_ms"], s["es_took_ms"], s["derived_ms"]
    rows = [_stage("embed (query)", stages["embed"])]
    rows.append(_stage("retrieval (msearch round trip)", stages["retrieval"]))
    for name in ("msearch", "rrf body", "bm25 leg", "knn leg"):
        if name in took:
            rows.append(_stage(f"  ES took: {name}", took[name], "dim"))
    if der["client_side_msearch"].get("n"):
        rows.append(_stage("  round trip - ES took", der["client_side_msearch"], "dim"))
    rows.append(_stage("fusion", stages["fusion"]))
    if stages["rerank"].get("n"):
        rows.append(_stage("rerank", stages["rerank"]))
    else:
        rows.append(("rerank", ["-", "-", "-", "-", "0"], "dim"))
    rows.append(_stage("other (policy re-check, hits)", der["other"], "dim"))
    rows.append(_stage("total", stages["total"], "bold"))
    return rows


def search_lines(s: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """The prose around the latency table: the search setup, fusion path, rerank, wall time."""
    paths = ", ".join(f"{p} x{n}" for p, n in s["fusion_paths"].items())
    reasons = "; ".join(s["fusion_reasons"])
    return (
        f"search: {s['queries']} queries, sequential, search(top_k={s['search_top_k']}), "
        f"fusion window {s['window']}, knn num_candidates {s['num_candidates']}",
        f"fusion path: {paths} ({reasons})",
        f"rerank: {s['rerank_note']}",
        f"search wall time {s['wall_seconds']:.1f} s "
        f"({s['queries'] / max(s['wall_seconds'], 1e-9):.1f} queries/s, sequential); "
        f"warm-up {s['warmup_ms']:.0f} ms (untimed)",
    )


def _two_columns(title: str, first: str, rows: list[tuple[str, str]]) -> Table:
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    t.add_column(first)
    t.add_column("value", justify="right")
    for k, v in rows:
        t.add_row(k, v)
    return t


def _latency_table(rows: list[StageRow]) -> Table:
    from rich.table import Table

    t = Table(title="latency per stage (ms)", title_justify="left")
    t.add_column("stage")
    for c in (*COLUMNS, "n"):
        t.add_column(c, justify="right")
    for label, cells, style in rows:
        t.add_row(label, *cells, style=style)
    return t


def print_report(console: Console, out: dict[str, Any]) -> None:
    """The benchmark's record as prose and tables on ``console``."""
    s, q = out["search"], out["quality"]
    console.print(header_text(out), highlight=False, soft_wrap=True)
    console.print(_two_columns("ingest", "what", ingest_rows(out["ingest"])))
    setup, fusion, rerank, wall = search_lines(s)
    console.print(setup, highlight=False)
    console.print(_latency_table(stage_rows(s)))
    console.print(fusion, highlight=False)
    console.print(rerank, highlight=False)
    console.print(wall, highlight=False)
    quality = [(k, f"{v:.4f}") for k, v in q["metrics"].items()]
    console.print(_two_columns("quality (ranx)", "metric", quality))
    console.print(q["evaluator_note"], highlight=False)
