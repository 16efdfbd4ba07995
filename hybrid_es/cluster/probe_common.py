"""What the Elasticsearch and OpenSearch probes share: node info, the analyzers, and whether
an index could be created, asked of the template simulation (read-only) or of a probe index that
is removed at once (``writes=True``).

A 401 is raised (the credentials are refused); any other refusal is an answer, or a note.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import AuthenticationError, EngineError

_ANALYZERS = ("standard", "simple", "whitespace", "english", "cjk")


def node_info(engine: Engine, notes: list[str]) -> dict[str, Any]:
    try:
        return engine.node_info()
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        notes.append(
            "the credentials may not read node info (cluster privilege monitor): modules and "
            "plugins unknown"
        )
        return {}


def available_analyzers(engine: Engine, notes: list[str]) -> tuple[str, ...]:
    """The analyzers the cluster has: asked of the analyze API, or where the credentials may
    not call it (a bootstrap credential without cluster ``manage``), of the template simulation,
    which validates a mapping's analyzers."""
    found = tuple(a for a in _ANALYZERS if engine.analyzer_works(a))
    if found:  # `standard` always exists: nothing found means the analyze API was refused
        return found
    simulated = []
    for analyzer in _ANALYZERS:
        text = {"type": "text", "analyzer": analyzer}
        accepted = simulation_accepts(engine, {"mappings": {"properties": {"t": text}}})
        if accepted is None:
            notes.append(
                "analyzers unknown: the credentials may call neither the analyze API nor the "
                "template simulation"
            )
            return ()
        if accepted:
            simulated.append(analyzer)
    return tuple(simulated)


def simulation_accepts(engine: Engine, template: dict[str, Any]) -> bool | None:
    """Whether an index with these settings and mappings could be created, asked of the
    template simulation, which validates them and stores nothing; None when the credentials
    may not simulate. The pattern matches no index and the priority is drawn at random, so that
    no installed template (equal priority and overlapping patterns is an error) is in the way."""
    body = {
        "index_patterns": [f"hybrid-es-capability-probe-{uuid.uuid4().hex[:12]}"],
        "priority": 2**40 + uuid.uuid4().int % 2**40,
        "template": template,
    }
    try:
        engine.request(
            "POST", "/_index_template/_simulate", body=body, what="simulating a template"
        )
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        return None
    except EngineError:
        return False
    return True


def index_can_be_created(
    engine: Engine, body: dict[str, Any], notes: list[str] | None = None
) -> bool:
    name = f"hybrid-es-probe-{uuid.uuid4().hex[:12]}"
    body = {**body, "settings": {**body.get("settings", {}), "number_of_replicas": 0}}
    try:
        engine.create_index(name, body)
        return True
    except EngineError as exc:
        if notes is not None:
            notes.append(f"vector index probe failed: {exc.message[:200]}")
        return False
    finally:
        with contextlib.suppress(EngineError):
            engine.delete_index(name)
