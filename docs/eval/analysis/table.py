"""Print the analysis-profile table from the `hybrid-es eval --json` files in this folder.

    python docs/eval/analysis/table.py

Files are named <engine>-<dataset>-<terms|noterms>.json: one `hybrid-es eval <dataset>
--pipelines bm25,hybrid --embedder minilm [--client-terms|--no-client-terms] --json` each, with
Elasticsearch 9.5.4 (the integ-test node: `standard` profile) or OpenSearch 2.19.1 (`full`
profile: English stems, CJK bigrams).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
PROFILE = {"elasticsearch": "standard (ES 9.5.4)", "opensearch": "full (OS 2.19.1)"}


def main() -> int:
    rows: dict[tuple[str, str], dict[str, dict]] = {}
    for f in sorted(HERE.glob("*.json")):
        engine, rest = f.stem.split("-", 1)
        dataset, terms = rest.rsplit("-", 1)
        by = {r["pipeline"]: r for r in json.loads(f.read_text())["results"]}
        rows.setdefault((dataset, engine), {})[terms] = by
    print("| dataset | profile | BM25 nDCG@10 off / on | hybrid nDCG@10 off / on "
          "| BM25-leg p50/p95 ms off | on |")
    print("|---|---|---|---|---|---|")
    for (dataset, engine), runs in sorted(rows.items()):
        if {"terms", "noterms"} - runs.keys():
            continue
        off, on = runs["noterms"], runs["terms"]

        def nd(r: dict, p: str) -> str:
            return f"{r[p]['metrics']['ndcg@10']:.4f}"

        def lat(r: dict) -> str:
            x = r["bm25"]["latency_ms"]["retrieval"]
            return f"{x['p50']:.1f} / {x['p95']:.1f}"

        print(f"| {dataset} | {PROFILE[engine]} | {nd(off, 'bm25')} / {nd(on, 'bm25')} "
              f"| {nd(off, 'hybrid')} / {nd(on, 'hybrid')} | {lat(off)} | {lat(on)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
