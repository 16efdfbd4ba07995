"""The capability probe of an Elasticsearch cluster: authentication, node info, the licence and
its matrix, the rrf and linear retrievers, the vector index types, and native roles with
document-level security, with the privileges of the credentials per command.

Read APIs only, unless ``writes`` (a probe index per vector type and a probe role, each removed
at once). ``capabilities.probe`` is the entry point; it calls :func:`probe_elasticsearch`.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from hybrid_es.cluster.access import (
    LicenceRow,
    elasticsearch_access,
    everyone_may,
    licence_matrix,
)
from hybrid_es.cluster.capability_report import Capabilities
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.native_fusion import retriever_works
from hybrid_es.cluster.probe_common import (
    available_analyzers,
    index_can_be_created,
    node_info,
    simulation_accepts,
)
from hybrid_es.errors import AuthenticationError, EngineError
from hybrid_es.tenancy import IndexLayout

_ES_VECTOR_TYPES = ("hnsw", "int8_hnsw", "bbq_hnsw")


def probe_elasticsearch(engine: Engine, *, writes: bool, layout: IndexLayout) -> Capabilities:
    notes: list[str] = []
    user, security = _es_authenticate(engine)
    node = node_info(engine, notes)
    version = str(node.get("version", engine.version))
    modules = tuple(sorted(m["name"] for m in node.get("modules", []) if "name" in m))
    licence, status = _es_license(engine, notes)
    matrix = licence_matrix("elasticsearch", licence, status or "active")
    rrf, rrf_note = retriever_works(engine, "rrf")
    linear, _ = retriever_works(engine, "linear")
    if not rrf:
        notes.append(rrf_note)
    options: tuple[str, ...] | None
    if writes:
        options = tuple(o for o in _ES_VECTOR_TYPES if _es_vector_type_works(engine, o))
    else:
        options = _es_vector_types_simulated(engine, notes)
    if not security:
        store, store_note = False, "security is off: no roles, no document-level security"
    elif writes:
        store, store_note = _es_role_store(engine, matrix[0].allowed)
    else:
        store, store_note = _es_role_store_derived(matrix[0], modules if node else None)
    notes.append(store_note)
    privileges = (
        elasticsearch_access(engine, layout) if security else everyone_may("security is off")
    )
    return Capabilities(
        flavor="elasticsearch",
        server_version=version,
        client_library=engine.client_library,
        license_type=licence,
        license_status=status,
        security_enabled=security,
        native_rrf=rrf,
        linear_retriever=linear,
        knn=None if options is None else bool(options),
        index_options=options,
        analyzers=available_analyzers(engine, notes),
        native_security_store=store,
        modules=modules,
        notes=tuple(notes),
        user=user,
        licence=matrix,
        privileges=privileges,
        writes_probed=writes,
    )


def _es_authenticate(engine: Engine) -> tuple[str | None, bool]:
    """Who the credentials are, and whether security is on (a cluster without security has no
    ``_security`` API)."""
    try:
        who = engine.request("GET", "/_security/_authenticate", what="authentication")
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        return None, False
    except EngineError:
        return None, False
    return (str(who["username"]) if who.get("username") else None), True


def _es_license(engine: Engine, notes: list[str]) -> tuple[str | None, str | None]:
    """The licence's type and status; (None, None) when it cannot be read."""
    try:
        lic = engine.request("GET", "/_license", what="reading the licence")["license"]
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        notes.append(
            "the credentials may not read the licence (cluster privilege monitor): the licence "
            "matrix is unknown"
        )
        return None, None
    except EngineError:
        return None, None
    return str(lic["type"]), str(lic.get("status", "active"))


def _es_vector_mapping(option: str) -> dict[str, Any]:
    vector = {"type": "dense_vector", "dims": 64, "similarity": "cosine"}
    return {"properties": {"v": {**vector, "index_options": {"type": option}}}}


def _es_vector_type_works(engine: Engine, option: str) -> bool:
    return index_can_be_created(engine, {"mappings": _es_vector_mapping(option)})


def _es_vector_types_simulated(engine: Engine, notes: list[str]) -> tuple[str, ...] | None:
    """The vector index types whose mapping the cluster accepts, asked of the template
    simulation (which validates the mapping and stores nothing); None when the credentials may
    not simulate."""
    found = []
    for option in _ES_VECTOR_TYPES:
        accepted = simulation_accepts(engine, {"mappings": _es_vector_mapping(option)})
        if accepted is None:
            notes.append(
                "vector index types: not probed (simulating a template needs the cluster "
                "privilege manage_index_templates; or probe with --probe-writes)"
            )
            return None
        if accepted:
            found.append(option)
    return tuple(found)


def _es_role_store(engine: Engine, dls_licensed: bool | None) -> tuple[bool, str]:
    """Store and delete a probe role with document-level security: whether native roles (and so
    API keys with role descriptors) can be stored. On Elasticsearch's integ-test zip the security
    index cannot be created (its mapping needs the analysis-common module)."""
    name = f"hybrid-es-capability-probe-{uuid.uuid4().hex[:8]}"
    dls = {"names": ["hybrid-es-capability-probe-none"], "privileges": ["read"]}
    try:
        engine.request(
            "PUT",
            f"/_security/role/{name}",
            body={"indices": [{**dls, "query": {"match_none": {}}}]},
            what="probe role",
        )
    except EngineError as exc:
        return False, f"roles with document-level security cannot be stored: {exc.message[:200]}"
    finally:
        with contextlib.suppress(EngineError):
            engine.request("DELETE", f"/_security/role/{name}", what="deleting a probe role")
    if not dls_licensed:
        return False, (
            "a probe role was stored (and deleted), but the licence does not allow "
            "document-level security"
        )
    return True, "roles with document-level security: a probe role was stored and deleted"


def _es_role_store_derived(dls: LicenceRow, modules: tuple[str, ...] | None) -> tuple[bool, str]:
    """Whether roles with document-level security can be stored and enforced, from read APIs:
    the licence, and the analysis-common module that the security index's mapping needs."""
    sure = "; --probe-writes stores and deletes a probe role to be sure"
    if dls.allowed is None:
        return False, "roles with document-level security: unknown (the licence is unreadable)"
    if not dls.allowed:
        return False, (
            "roles with document-level security: the licence does not allow document-level "
            f"security (needs {dls.needs})"
        )
    if modules is None:
        return False, "roles with document-level security: unknown (node info is unreadable)" + sure
    if "analysis-common" not in modules:
        return False, (
            "native users/roles/API keys unavailable: the security index needs the "
            "analysis-common module, which this node lacks (from node info)" + sure
        )
    return True, "roles with document-level security: derived from the licence and node info" + sure
