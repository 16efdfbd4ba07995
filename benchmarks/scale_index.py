"""The growth benchmark's index: its body, and what the engine says about it once loaded.

Each index gets the real chunk mapping and analysis: the ``hybrid-es-chunks`` index template's
mappings and its components' settings (``hybrid-es-settings``, ``hybrid-es-analysis``), composed
as Elasticsearch composes them, with only ``embedding.index_options.type`` replaced. After the
load it reads the index stats (docs, store size, segments, the dense-vector off-heap sections),
the node's heap and the vector field's effective index options. Composing the body and
summarising the stats are pure; the functions that take an engine read from it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import (
    ANALYSIS_TEMPLATE,
    CHUNKS_TEMPLATE,
    SETTINGS_TEMPLATE,
    load_templates,
)

DISK_PER_CHUNK = 8_000 * 3
"""Bytes of free disk asked for per chunk: ~6-8 KB a chunk measured at 10k-100k, and merges
need headroom."""


def merge_settings(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """``b`` over a deep copy of ``a``, nested dicts merged key by key."""
    out = copy.deepcopy(dict(a))
    for k, v in b.items():
        out[k] = (
            merge_settings(out[k], v)
            if isinstance(v, dict) and isinstance(out.get(k), dict)
            else copy.deepcopy(v)
        )
    return out


def compose_index_body(
    templates: Mapping[str, Mapping[str, Any]], quantization: str
) -> dict[str, Any]:
    """The chunks index template's mappings and its components' settings (``templates``: body
    per template name), with ``embedding.index_options.type`` = ``quantization``."""
    chunks = templates[CHUNKS_TEMPLATE]
    settings: dict[str, Any] = {}
    for name in chunks.get("composed_of", [SETTINGS_TEMPLATE, ANALYSIS_TEMPLATE]):
        settings = merge_settings(settings, templates[name].get("template", {}).get("settings", {}))
    settings = merge_settings(settings, chunks["template"].get("settings", {}))
    mappings = copy.deepcopy(chunks["template"]["mappings"])
    emb = mappings["properties"]["embedding"]
    emb["index_options"]["type"] = quantization
    return {"settings": settings, "mappings": mappings}


def index_body(engine: Engine, quantization: str) -> dict[str, Any]:
    """The chunk index body for ``quantization``, from the templates this engine installs."""
    templates = {
        t.name: t.body for t in load_templates(probe(engine).analysis_profile, flavor=engine.flavor)
    }
    return compose_index_body(templates, quantization)


def refresh_interval(body: Mapping[str, Any]) -> Any:
    """The refresh interval an index body sets (``1s``, the engine's default, when none)."""
    return body["settings"].get("index", {}).get("refresh_interval", "1s")


def simulation_summary(sim: Mapping[str, Any]) -> dict[str, Any]:
    """Which index templates overlap, and whether one applies, from ``_simulate_index``."""
    overlapping = [o.get("name") for o in sim.get("overlapping", [])]
    applied = sim.get("template", {})
    matched = (applied.get("settings") or applied.get("mappings")) and sim.get("template")
    return {"overlapping": overlapping, "applies": bool(matched)}


def templates_matching(engine: Engine, index: str) -> dict[str, Any]:
    """Which index template would apply to ``index`` (none is the intent: the benchmark
    composes the chunk template's body itself)."""
    return simulation_summary(engine.simulate_index_template(index))


def stats_summary(
    stats: Mapping[str, Any], segments: Mapping[str, Any], index: str
) -> dict[str, Any]:
    """Docs, store bytes, segment count and dense-vector sections from ``_stats`` and
    ``_segments``."""
    p = stats["indices"][index]["primaries"]
    off = p.get("dense_vector", {}).get("off_heap", {})
    shards = segments["indices"][index]["shards"]
    return {
        "docs": int(p["docs"]["count"]),
        "store_bytes": int(p["store"]["size_in_bytes"]),
        "segments": sum(len(c["segments"]) for copies in shards.values() for c in copies),
        "dense_vector_count": p.get("dense_vector", {}).get("value_count"),
        "off_heap": {k: int(v) for k, v in off.items() if isinstance(v, int | float)},
    }


def index_stats(engine: Engine, index: str) -> dict[str, Any]:
    s = engine.request("GET", f"/{index}/_stats", what="reading index stats")
    seg = engine.request("GET", f"/{index}/_segments", what="reading segments")
    return stats_summary(s, seg, index)


def heap_summary(nodes: Mapping[str, Any]) -> dict[str, int]:
    """Heap used and heap max of the one node in a ``_nodes/_local/stats/jvm`` answer."""
    (node,) = nodes["nodes"].values()
    mem = node["jvm"]["mem"]
    return {
        "heap_used_bytes": int(mem["heap_used_in_bytes"]),
        "heap_max_bytes": int(mem["heap_max_in_bytes"]),
    }


def node_heap(engine: Engine) -> dict[str, int]:
    return heap_summary(
        engine.request("GET", "/_nodes/_local/stats/jvm", what="reading node stats")
    )


def vector_index_options(engine: Engine, index: str) -> dict[str, Any]:
    """The embedding field's index options as the engine has them, defaults included."""
    field = engine.request(
        "GET",
        f"/{index}/_mapping/field/embedding",
        params={"include_defaults": "true"},
        what="reading the vector field",
    )
    options: dict[str, Any] = field[index]["mappings"]["embedding"]["mapping"]["embedding"].get(
        "index_options", {}
    )
    return options
