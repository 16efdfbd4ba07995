"""Pass@k, the contextual-retrieval cookbook's metric, and the cookbook's own numbers to set ours
beside.

Pass@k of a query is the share of its golden chunks found in the top k; a pipeline's score is
the mean over the queries, in percent. The cookbook's rows come from ``ANCHORS.md`` beside the
dataset (its section "Anthropic contextual-retrieval cookbook": Voyage embeddings, Claude 3
Haiku headers, Cohere rerank). Everything but reading that file is pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

KS = (5, 10, 20)
PIPELINES = {
    "dense only": "dense only",
    "hybrid, no context": None,
    "contextual dense": "contextual dense",
    "contextual hybrid": "contextual dense + contextual BM25",
    "contextual hybrid + rerank": "+ rerank",
}
"""Our pipeline -> the cookbook's row in ANCHORS.md (None: the cookbook has no such row)."""
ANCHORS_SECTION = "## Anthropic contextual-retrieval cookbook"


def pass_at(ranked: list[str], golden: set[str], k: int) -> float:
    """The share of ``golden`` among the first ``k`` of ``ranked``."""
    return len(golden & set(ranked[:k])) / len(golden)


def pass_at_k_table(
    runs: Mapping[str, Sequence[list[str]]], golden: Sequence[set[str]]
) -> dict[str, list[float]]:
    """Mean Pass@k per pipeline (percent, two decimals), one value per k of :data:`KS`."""
    return {
        name: [
            round(
                100
                * sum(pass_at(r, g, k) for r, g in zip(ranked, golden, strict=True))
                / len(golden),
                2,
            )
            for k in KS
        ]
        for name, ranked in runs.items()
    }


def parse_anchors(text: str) -> dict[str, tuple[float, float, float]]:
    """The Pass@5/10/20 rows of the cookbook's section of ``ANCHORS.md`` (a Markdown table)."""
    section = text.split(ANCHORS_SECTION, 1)[-1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"[\d.]+", cells[1]):
            rows[cells[0]] = (float(cells[1]), float(cells[2]), float(cells[3]))
    return rows


def cookbook_anchors(path: Path) -> dict[str, tuple[float, float, float]]:
    """The cookbook's Pass@5/10/20 rows from ANCHORS.md (empty when the file is missing)."""
    if not path.is_file():
        return {}
    return parse_anchors(path.read_text(encoding="utf-8"))
