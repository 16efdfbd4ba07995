"""Deployment namespaces in integration tests: every object of one namespace on the cluster, as
bytes to compare (:func:`snapshot`), and its removal when a test is done (:func:`drop`).

A namespace's objects are the ones whose names carry it (``hybrid_es.namespace``): index and
component templates, indices and data streams (with their backing indices), search pipelines
and roles, all named ``hybrid-es.<ns>-...``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.cluster.templates import load_pipelines
from hybrid_es.errors import EngineError
from hybrid_es.namespace import prefix

VOLATILE_SETTINGS = ("index.creation_date_string",)
"""Index settings that say nothing of what was done to the index (none is left out today but
this rendering of the creation date, which some versions add on read)."""


ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
NAME_VARIABLES = (
    "HYBRID_ES_NAMESPACE",
    "HYBRID_ES_CHUNKS_INDEX",
    "HYBRID_ES_PACKETS_INDEX",
    "HYBRID_ES_TRACES_INDEX",
    "HYBRID_ES_CORPUS_STATE_INDEX",
)
"""The variables that name a deployment's objects: an example names its own."""


def example_namespace(program: str) -> str:
    """The namespace an example program (``examples/<program>``) gives its deployment
    (``Settings(namespace="...")``)."""
    text = (EXAMPLES / program).read_text(encoding="utf-8")
    (found,) = set(re.findall(r'namespace="([a-z0-9_]+)"', text))
    return found


def run_example(program: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python examples/<program>`` as a user runs it: the environment's connection settings,
    none of its object names (the example's namespace gives them), ``env`` added; offline."""
    run_env = {k: v for k, v in os.environ.items() if k not in NAME_VARIABLES}
    run_env.update(
        HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HAYSTACK_TELEMETRY_ENABLED="False", **env
    )
    return subprocess.run(
        [sys.executable, str(EXAMPLES / program)],
        env=run_env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _get(engine: Engine, path: str, **params: Any) -> Any:
    try:
        return engine.request("GET", path, params=params or None, what="reading a namespace")
    except EngineError as exc:
        # None there, or no such API (the data streams of Elasticsearch's integ-test build).
        if exc.status == 404 or (exc.status == 400 and "no handler found" in exc.message):
            return {}
        raise


def snapshot(engine: Engine | Any, namespace: str) -> bytes:
    """Everything of ``namespace`` on the cluster, as canonical JSON: its index and component
    templates, search pipelines and roles (whole), its data streams (name, template, backing
    indices), and each of its indices' mappings, settings and documents (``_id``, ``_source``,
    ``_version``, ``_seq_no``, ``_primary_term``: a write of the same source changes them too).
    Two snapshots are equal when nothing of the namespace was written between them."""
    engine = as_engine(engine.raw, url=engine.url)  # unguarded: the documents are read raw
    head = f"{prefix(namespace)}-*"
    out: dict[str, Any] = {}
    templates = _get(engine, f"/_index_template/{head}").get("index_templates", [])
    out["index_templates"] = sorted(templates, key=lambda t: t["name"])
    components = _get(engine, f"/_component_template/{head}").get("component_templates", [])
    out["component_templates"] = sorted(components, key=lambda t: t["name"])
    if engine.flavor == "opensearch":
        pipelines = load_pipelines(namespace=namespace)  # by their default names: comparable
        out["pipelines"] = {p.key: engine.get_search_pipeline(p.name) for p in pipelines}
    out["roles"] = _roles(engine, namespace)
    streams = _get(engine, f"/_data_stream/{head}").get("data_streams", [])
    out["data_streams"] = sorted(
        (
            {
                "name": s["name"],
                "template": s.get("template"),
                "indices": [i["index_name"] for i in s.get("indices", [])],
            }
            for s in streams
        ),
        key=lambda s: str(s["name"]),
    )
    wild = {"expand_wildcards": "all", "allow_no_indices": "true", "ignore_unavailable": "true"}
    mappings = _get(engine, f"/{head}/_mapping", **wild)
    settings = _get(engine, f"/{head}/_settings", flat_settings="true", **wild)
    indices = {}
    for index in sorted(mappings):
        flat = dict(settings.get(index, {}).get("settings", {}))
        for name in VOLATILE_SETTINGS:
            flat.pop(name, None)
        engine.refresh(index)
        docs = engine.search(
            index,
            {
                "size": 10_000,
                "query": {"match_all": {}},
                "seq_no_primary_term": True,
                "version": True,
            },
        )
        hits = sorted(
            (
                {k: h.get(k) for k in ("_id", "_source", "_version", "_seq_no", "_primary_term")}
                for h in docs["hits"]["hits"]
            ),
            key=lambda h: str(h["_id"]),
        )
        indices[index] = {"mappings": mappings[index], "settings": flat, "documents": hits}
    out["indices"] = indices
    return json.dumps(out, sort_keys=True, ensure_ascii=False).encode()


def _security(engine: Engine, what: str) -> str:
    """The path of the security API's ``what`` (``role``, ``rolesmapping``) on this engine."""
    if engine.flavor == "opensearch":
        return f"/_plugins/_security/api/{'roles' if what == 'role' else what}"
    return "/_security/role"


def _roles(engine: Engine, namespace: str) -> dict[str, Any]:
    """The namespace's roles (and, on OpenSearch, their mappings), by name; none where the
    cluster has no security."""
    head = f"{prefix(namespace)}-"
    out: dict[str, Any] = {}
    kinds = ("role", "rolesmapping") if engine.flavor == "opensearch" else ("role",)
    for kind in kinds:
        try:
            listed = engine.request("GET", _security(engine, kind), what="listing roles")
        except EngineError:  # security off: nothing to compare
            continue
        out |= {f"{kind} {n}": v for n, v in dict(listed or {}).items() if n.startswith(head)}
    return out


def drop(engine: Engine | Any, namespace: str) -> None:
    """Delete every object of ``namespace`` (never the default one's): its data streams, its
    indices, its index and component templates, search pipelines and roles."""
    assert namespace, "the default namespace is the test session's own"
    engine = as_engine(engine.raw, url=engine.url)
    head = f"{prefix(namespace)}-*"
    for s in _get(engine, f"/_data_stream/{head}").get("data_streams", []):
        engine.request("DELETE", f"/_data_stream/{s['name']}", what="dropping a data stream")
    names = engine.indices(head)
    if names:
        engine.delete_index(",".join(names))
    for kind, key in (("index_template", "index_templates"), ("component_template", None)):
        listed = _get(engine, f"/_{kind}/{head}").get(key or "component_templates", [])
        for t in listed:
            engine.request("DELETE", f"/_{kind}/{t['name']}", what="dropping a template")
    if engine.flavor == "opensearch":
        for p in load_pipelines(namespace=namespace):
            if engine.get_search_pipeline(p.name) is not None:
                engine.request("DELETE", f"/_search/pipeline/{p.name}", what="dropping")
    for listed in _roles(engine, namespace):
        kind, name = listed.split(" ", 1)
        engine.request("DELETE", f"{_security(engine, kind)}/{name}", what="dropping a role")
