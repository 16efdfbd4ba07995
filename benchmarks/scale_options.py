"""What one run of the growth benchmark (``scripts/bench_scale.py``) is asked to do.

The command line gives the sizes, quantisations and settings as comma-separated text; the parsers
here turn that text into lists, and :class:`ScaleOptions` holds the result for the rest of the
benchmark. The names of what the benchmark creates (its indices and its corpus-state index) are
fixed here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUANTIZATIONS = ("hnsw", "int8_hnsw", "bbq_hnsw")
"""The vector formats measured (``embedding.index_options.type``), in table order."""
PREFIX = "hybrid-es-scale"
CORPUS_STATE = "hybrid-es-corpus-state-bench-scale"


@dataclass
class ScaleOptions:
    """The parsed command line of ``scripts/bench_scale.py`` (one field per flag)."""

    sizes: list[int]
    quantizations: list[str]
    queries: int
    num_candidates: list[int]
    window: int
    oversample: list[float]
    tenants: int
    noise: float
    seed: int
    bulk_size: int
    bulk_threads: int
    force_merge: int
    keep: bool
    json: Path
    plot: Path
    merge: bool
    reuse: bool = False
    """Search an index of the right size that an earlier run left (``--keep``, or a run stopped
    after its load) instead of loading it again; its row has no indexing rate."""


def parse_ints(text: str) -> list[int]:
    """``"10_000,100000"`` -> ``[10000, 100000]`` (underscores allowed, empty items skipped)."""
    return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]


def parse_floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def parse_names(text: str) -> list[str]:
    return [q.strip() for q in text.split(",") if q.strip()]


def unknown_quantizations(names: Sequence[str]) -> list[str]:
    return [q for q in names if q not in QUANTIZATIONS]


def fit_window(window: int, num_candidates: Sequence[int]) -> int:
    """The per-leg window, lowered to the smallest ``num_candidates`` when one is below it."""
    if any(nc < window for nc in num_candidates):
        return min(num_candidates)
    return window


def index_name(quantization: str, size: int) -> str:
    """``hybrid-es-scale-<q>-<n>``, underscores of the quantisation as dashes."""
    return f"{PREFIX}-{quantization.replace('_', '-')}-{size}"


def row_order(row: Mapping[str, Any]) -> tuple[Any, int]:
    """Sort key of a result row: by size, then in :data:`QUANTIZATIONS` order."""
    return (row["size"], QUANTIZATIONS.index(row["quantization"]))
