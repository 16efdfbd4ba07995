"""The cluster's topology as the capability report states it: the node count (cluster health),
and the shards, replicas and embedder of each hybrid-es index (its settings and mapping).

Reads only, the same on both engines; what the credentials may not read is left unknown, with a
note.
"""

from __future__ import annotations

from typing import Any

from hybrid_es.cluster import generations
from hybrid_es.cluster.capability_report import IndexShards
from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import AuthenticationError, EngineError
from hybrid_es.tenancy import IndexLayout

_SHARD_SETTINGS = "index.number_of_shards,index.number_of_replicas,index.auto_expand_replicas"


def read_topology(engine: Engine, layout: IndexLayout, notes: list[str]) -> dict[str, Any]:
    """The node count (cluster health) and the shards and replicas of each hybrid-es index (its
    settings): two reads, the same on both engines; what the credentials may not read is left
    unknown, with a note."""
    out: dict[str, Any] = {}
    try:
        health = engine.health()
        out["nodes"] = int(health["number_of_nodes"])
        out["data_nodes"] = int(health["number_of_data_nodes"])
        out["cluster_status"] = str(health["status"])
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        notes.append(
            "node count unknown: the credentials may not read the cluster's health (cluster "
            "privilege monitor)"
        )
    except EngineError as exc:
        notes.append(f"node count unknown: {exc.message[:160]}")
    names = (layout.chunks, layout.packets, layout.traces, layout.corpus_state)
    patterns = ",".join([*(f"{n}*" for n in names), f".ds-{layout.traces}*"])
    try:
        resp = engine.request(
            "GET",
            f"/{patterns}/_settings/{_SHARD_SETTINGS}",
            params={
                "expand_wildcards": "open,hidden",
                "allow_no_indices": True,
                "ignore_unavailable": True,
                "flat_settings": True,
            },
            what="reading the shards and replicas of the hybrid-es indices",
        )
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        notes.append(
            "shards and replicas per index unknown: the credentials may not read the indices' "
            "settings (index privilege view_index_metadata)"
        )
        return out
    except EngineError as exc:
        notes.append(f"shards and replicas per index unknown: {exc.message[:160]}")
        return out
    metas = _chunks_metas(engine, layout, notes)
    served = _served_as(engine, patterns)
    indices = []
    for index, body in sorted(dict(resp or {}).items()):
        flat = body.get("settings", {})
        auto = flat.get("index.auto_expand_replicas")
        meta = metas.get(index, {})
        indices.append(
            IndexShards(
                index=index,
                shards=int(flat.get("index.number_of_shards", 1)),
                replicas=int(flat.get("index.number_of_replicas", 0)),
                auto_expand=None if auto in (None, "false", False) else str(auto),
                embedding_model=meta.get("embedding_model"),
                embedding_choice=meta.get("embedding_choice"),
                served_as=served.get(index),
            )
        )
    out["indices"] = tuple(indices)
    return out


def _served_as(engine: Engine, patterns: str) -> dict[str, str]:
    """Each generation's index -> the alias that serves it (``cluster.generations``); empty
    where the aliases cannot be read (the report then names the physical indices only)."""
    try:
        aliases = engine.request(
            "GET",
            f"/{patterns}/_alias",
            params={
                "expand_wildcards": "open",
                "allow_no_indices": True,
                "ignore_unavailable": True,
            },
            what="reading the hybrid-es indices' aliases",
        )
    except EngineError as exc:
        if exc.status == 401:
            raise
        return {}
    return {
        g.index: g.name for g in generations.names_served(dict(aliases or {})).values() if g.aliased
    }


def _chunks_metas(engine: Engine, layout: IndexLayout, notes: list[str]) -> dict[str, Any]:
    """Each chunks index's mapping ``_meta`` (its embedder and why), where readable."""
    try:
        resp = engine.request(
            "GET",
            f"/{layout.chunks}*/_mapping",
            params={"allow_no_indices": True, "ignore_unavailable": True},
            what="reading the chunks indices' embedders",
        )
    except EngineError as exc:
        if exc.status == 401:
            raise
        notes.append(f"chunks indices' embedders unknown: {exc.message[:160]}")
        return {}
    return {
        name: dict(body.get("mappings", {}).get("_meta", {}))
        for name, body in dict(resp or {}).items()
    }
