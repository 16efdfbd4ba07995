"""Query-embedding latency of several embedders, measured side by side under the same load.

One query at a time (a single client), the embedders taking turns query by query, so that a
burst of load from elsewhere on the machine falls on every embedder alike; the order of the turn
alternates, so neither always runs first. What it measures is the model compute of one search
(``embed_queries`` of one text), the cost that differs between embedders; the rest of a search
(the legs, fusion) does not depend on the embedder.

    python -m benchmarks.embed_latency minilm,e5 ../shared/datasets/xquad_zh_paragraph \\
        ../shared/datasets/scifact --queries 150
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from benchmarks.bench import summary


def interleaved_latency(
    embed: Mapping[str, Callable[[list[str]], object]], texts: Sequence[str]
) -> dict[str, list[float]]:
    """Milliseconds of each ``embed[name]([text])`` call, the names taking turns per text (their
    order reversed on every other text). Returns ``{name: [ms per text]}`` in text order."""
    names = list(embed)
    out: dict[str, list[float]] = {n: [] for n in names}
    for i, text in enumerate(texts):
        for n in names if i % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            embed[n]([text])
            out[n].append((time.perf_counter() - t0) * 1000.0)
    return out


def _questions(dataset: Path, limit: int) -> list[str]:
    from hybrid_es.ingest.beir import read_qrels, read_queries

    queries, qrels = read_queries(dataset), read_qrels(dataset, "test")
    return [queries[q] for q in qrels if queries.get(q, "").strip()][:limit]


def main(argv: Sequence[str] | None = None) -> int:
    """Print (and with ``--json`` write) p50/p95/mean ms per embedder and collection."""
    from benchmarks.bench import bench_embedder

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("embedders", help="comma list: minilm,e5")
    ap.add_argument("datasets", nargs="+", type=Path, help="BEIR-layout folders")
    ap.add_argument("--queries", type=int, default=150, help="judged queries per collection")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    models = {n: bench_embedder(n) for n in args.embedders.split(",")}  # loaded and warmed up
    result: dict[str, dict[str, object]] = {}
    for ds in args.datasets:
        ms = interleaved_latency(
            {n: m.embed_queries for n, m in models.items()}, _questions(ds, args.queries)
        )
        result[ds.name] = {n: summary(v) for n, v in ms.items()}
        for n, s in result[ds.name].items():
            print(f"{ds.name:>22} {n:>8}: {s}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
