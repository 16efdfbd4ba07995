"""The capability probe of an OpenSearch cluster: node info and plugins, the ``hybrid`` query
with its search pipelines (rrf and linear), the k-NN index, and the security plugin (who the
credentials are, whether its REST API takes roles), with the privileges per command.

Read APIs only, unless ``writes`` (a probe k-NN index and a probe role, each removed at once).
``capabilities.probe`` is the entry point; it calls :func:`probe_opensearch`.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from hybrid_es.cluster.access import everyone_may, licence_matrix, opensearch_access
from hybrid_es.cluster.capability_report import Capabilities
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.native_fusion import hybrid_works
from hybrid_es.cluster.probe_common import (
    available_analyzers,
    index_can_be_created,
    node_info,
    simulation_accepts,
)
from hybrid_es.errors import AuthenticationError, EngineError


def probe_opensearch(engine: Engine, *, writes: bool) -> Capabilities:
    notes: list[str] = []
    node = node_info(engine, notes)
    version = str(node.get("version", engine.version))
    modules = tuple(sorted(m["name"] for m in node.get("modules", []) if "name" in m))
    plugins = tuple(sorted(p["name"] for p in node.get("plugins", []) if "name" in p))
    authinfo = _os_authinfo(engine)
    security = authinfo is not None
    rrf, rrf_note = hybrid_works(engine, "rrf")
    linear, linear_note = hybrid_works(engine, "linear")
    notes += [n for n in (rrf_note, linear_note) if n]
    knn: bool | None
    if writes:
        knn = index_can_be_created(engine, _os_knn_index(), notes)
    elif node and "opensearch-knn" not in plugins:
        knn = False
        notes.append("no k-NN: the opensearch-knn plugin is missing")
    else:
        knn = simulation_accepts(engine, _os_knn_index())
        if knn is None:
            notes.append(
                "k-NN index: not probed (simulating a template needs "
                "cluster_manage_index_templates; or probe with --probe-writes)"
            )
    store = False
    privileges = everyone_may("the security plugin is off")
    if authinfo is not None:
        store, store_note = _os_role_store(engine, writes=writes)
        if store_note:
            notes.append(store_note)
        privileges = tuple(
            a.model_copy(
                update={
                    "allowed": store,
                    "missing": () if store else ("access to the security plugin's REST API",),
                    "basis": "read a role through the security plugin's REST API",
                }
            )
            if a.command == "bootstrap --tenant"
            else a
            for a in opensearch_access(authinfo)
        )
    else:
        notes.append("the security plugin is off or missing: no document-level security roles")
    return Capabilities(
        flavor="opensearch",
        server_version=version,
        client_library=engine.client_library,
        license_type=None,
        security_enabled=security,
        native_rrf=rrf,
        linear_retriever=linear,
        knn=knn,
        index_options=None if knn is None else ("lucene",) if knn else (),
        analyzers=available_analyzers(engine, notes),
        native_security_store=store,
        modules=modules,
        plugins=plugins,
        notes=tuple(notes),
        rrf_rank_constant_at=engine.rrf_rank_constant_at or "parameters",
        user=str(authinfo.get("user_name") or "") or None if authinfo else None,
        licence=licence_matrix("opensearch", None),
        privileges=privileges,
        writes_probed=writes,
    )


def _os_authinfo(engine: Engine) -> dict[str, Any] | None:
    """The security plugin's account of the credentials (user, roles); None without it."""
    try:
        return dict(engine.request("GET", "/_plugins/_security/authinfo", what="authentication"))
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        return None
    except EngineError:
        return None


def _os_knn_index() -> dict[str, Any]:
    method = {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 4, "method": method}}},
    }


def _os_role_store(engine: Engine, *, writes: bool) -> tuple[bool, str]:
    """Whether the security plugin's REST API takes roles from these credentials: a role is read
    (only a REST API admin may), or with ``writes`` a probe role stored and deleted."""
    api = "/_plugins/_security/api/roles"
    try:
        if not writes:
            engine.request("GET", f"{api}/all_access", what="reading roles")
            return True, ""
        name = f"hybrid-es-capability-probe-{uuid.uuid4().hex[:8]}"
        permission = {"index_patterns": ["hybrid-es-capability-probe-none"], "dls": "{}"}
        body = {"index_permissions": [{**permission, "allowed_actions": ["read"]}]}
        try:
            engine.request("PUT", f"{api}/{name}", body=body, what="storing a probe role")
        finally:
            with contextlib.suppress(EngineError):
                engine.request("DELETE", f"{api}/{name}", what="deleting a probe role")
        return True, ""
    except EngineError as exc:
        return False, f"security plugin roles cannot be managed: {exc.message[:200]}"
