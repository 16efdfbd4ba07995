"""The reads behind ``index_status``: which names the indices matching some patterns serve, their
mappings and analysis settings, and what the installed templates would give a new index of each
name; every index's status from them. Read-only: what bootstrap and ``hybrid-es verify`` share.
"""

from __future__ import annotations

from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.generations import Generation, serving
from hybrid_es.cluster.index_status import IndexStatus, Wanted, classify
from hybrid_es.errors import IndexMissingError

_WIDE = {"expand_wildcards": "open", "allow_no_indices": True, "ignore_unavailable": True}


def served_indices(engine: Engine, pattern: str) -> dict[str, Generation]:
    """What serves each name among the open indices matching ``pattern`` (comma-separated), a
    data stream's backing indices left out (they are the stream's)."""
    return {n: g for n, g in serving(engine, pattern).items() if not g.index.startswith(".ds-")}


def survey(engine: Engine, pattern: str, wanted: Wanted) -> dict[str, IndexStatus]:
    """The status of every index serving a name among those matching ``pattern``, by that name
    (``index_status.classify``): two reads for all of them (mappings, analysis settings), and
    one template simulation each. An index deleted meanwhile is left out."""
    served = served_indices(engine, pattern)
    if not served:
        return {}
    mappings = dict(
        engine.request("GET", f"/{pattern}/_mapping", params=_WIDE, what="reading mappings") or {}
    )
    settings = dict(
        engine.request(
            "GET",
            f"/{pattern}/_settings",
            params={**_WIDE, "filter_path": "*.settings.index.analysis"},
            what="reading analysis settings",
        )
        or {}
    )
    out = {}
    for name, live in sorted(served.items()):
        if live.index not in mappings:
            continue
        try:
            simulated = engine.simulate_index_template(live.index)
        except IndexMissingError:
            continue
        analysis = _analysis(settings.get(live.index))
        mapping = (mappings[live.index] or {}).get("mappings") or {}
        out[name] = classify(live, mapping, analysis, simulated.get("template") or {}, wanted)
    return out


def _analysis(body: Any) -> dict[str, Any]:
    return dict((((body or {}).get("settings") or {}).get("index") or {}).get("analysis") or {})
