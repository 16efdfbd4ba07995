"""The contextual-retrieval benchmark end to end: what ``scripts/bench_contextual.py`` runs.

It connects to the configured cluster (Elasticsearch or OpenSearch), loads the embedder, runs
part 1 (the codebase set) and, when asked, part 2 (re-ingesting SciFact), and prints the record
as tables, or as one JSON object on stdout with ``--json`` (progress then goes to stderr). The
indices are created fresh and deleted at the end unless ``keep``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.bench import machine
from benchmarks.contextual_codebase import codebase_part
from benchmarks.contextual_report import print_report
from benchmarks.contextual_scifact import scifact_part
from hybrid_es.cluster.engine import connect
from hybrid_es.encoders.embedder import make_embedder
from hybrid_es.settings import Settings

CONSOLE_WIDTH = 140
"""The least width of a console that is not a terminal."""


@dataclass
class ContextualOptions:
    """The parsed command line of ``scripts/bench_contextual.py`` (one field per flag)."""

    dataset: Path
    queries: int | None
    rerank_model: str | None
    embedder: str
    index_prefix: str
    scifact: bool
    scifact_dataset: Path
    scifact_docs: int | None
    keep: bool
    json: bool


def run(options: ContextualOptions, command: str) -> int:
    """Both parts and the report; ``command``: the command line recorded."""
    from rich.console import Console  # the cli extra (or eval): imported when a benchmark runs

    console = Console(stderr=options.json)
    if not console.is_terminal:
        console.width = max(console.width, CONSOLE_WIDTH)
    client = connect(Settings())
    embedder = make_embedder(options.embedder)
    out: dict[str, Any] = {
        "command": command,
        "machine": machine(client),
        "embedder": embedder.model_id,
    }
    t = time.perf_counter()
    out["codebase"] = codebase_part(
        client,
        embedder,
        console,
        dataset=options.dataset,
        queries=options.queries,
        index_prefix=options.index_prefix,
        rerank_model=options.rerank_model,
        keep=options.keep,
    )
    if options.scifact:
        out["scifact"] = scifact_part(
            client,
            embedder,
            console,
            dataset=options.scifact_dataset,
            limit=options.scifact_docs,
            index_prefix=options.index_prefix,
            keep=options.keep,
        )
    out["seconds"] = round(time.perf_counter() - t, 1)
    if options.json:
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        print_report(console, out)
        console.print(f"total {out['seconds']} s", highlight=False)
    return 0
