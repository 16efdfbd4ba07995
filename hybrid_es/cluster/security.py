"""The per-tenant reader role, installed in each engine's own security API.

The role comes from ``es_templates/roles`` (Elasticsearch: a native role with a DLS ``query``) or
``es_templates/opensearch/roles`` (the security plugin: ``index_permissions`` with a ``dls``
string); the tenant is filled in by ``templates.render_role``. On OpenSearch the role is mapped to
the backend role ``hybrid-es-tenant-<tenant>``, so a user (internal, LDAP, SAML, ...) that carries
that backend role reads that tenant only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import (
    DEPLOYMENT_ROLES,
    backend_role,
    deployment_role_names,
    render_deployment_role,
    render_role,
)
from hybrid_es.errors import EngineError
from hybrid_es.tenancy import IndexLayout

_OS_API = "/_plugins/_security/api"


def install_tenant_reader(
    engine: Engine, tenant: str, layout: IndexLayout, directory: Path | None = None
) -> list[tuple[str, str]]:
    """Install (or overwrite) ``tenant``'s reader role, naming exactly its own indices in
    ``layout``; the (kind, name) of what was written. Raises ConfigurationError (nothing
    written) for an invalid tenant or a layout where a reader cannot be confined to one tenant
    (the shared layout: ``IndexLayout.reader_refused_because``)."""
    name, role = render_role(tenant, layout, directory=directory, flavor=engine.flavor)
    if engine.flavor != "opensearch":
        engine.request("PUT", f"/_security/role/{name}", body=role, what="installing a role")
        return [("role", name)]
    engine.request("PUT", f"{_OS_API}/roles/{name}", body=role, what="installing a role")
    mapping = _os_mapping(engine, name)
    wanted = backend_role(tenant, layout.namespace)
    if wanted not in mapping["backend_roles"]:
        mapping["backend_roles"].append(wanted)
    engine.request("PUT", f"{_OS_API}/rolesmapping/{name}", body=mapping, what="mapping a role")
    return [("role", name), ("role mapping", f"{name} <- backend role {wanted}")]


def install_deployment_roles(
    engine: Engine, layout: IndexLayout, directory: Path | None = None
) -> list[tuple[str, str]]:
    """Install (or overwrite) the least-privilege roles ``hybrid-es-admin``, ``-ingest``,
    ``-app`` and ``-trace-reader`` (:data:`~hybrid_es.cluster.templates.DEPLOYMENT_ROLES`) on
    ``layout``'s index names, named for its namespace (``hybrid-es.<ns>-admin``, ...); the
    (kind, name) of what was written. Users, API keys and mappings
    to them are the deployment's (README "Deploy with least privilege"; the compose stack makes
    a user of the trace reader's)."""
    out = []
    for name, installed in zip(
        DEPLOYMENT_ROLES, deployment_role_names(layout.namespace), strict=True
    ):
        body = render_deployment_role(name, layout, directory=directory, flavor=engine.flavor)
        path = (
            f"{_OS_API}/roles/{installed}"
            if engine.flavor == "opensearch"
            else f"/_security/role/{installed}"
        )
        engine.request("PUT", path, body=body, what="installing a role")
        out.append(("role", installed))
    return out


def _os_mapping(engine: Engine, name: str) -> dict[str, Any]:
    """The role's current mapping (kept: an operator may have mapped users or hosts to it)."""
    try:
        current = engine.request("GET", f"{_OS_API}/rolesmapping/{name}", what="reading a mapping")
    except EngineError as exc:
        if exc.status == 404:
            current = {}
        else:
            raise
    body = dict(current.get(name, {}))
    return {
        "backend_roles": list(body.get("backend_roles", [])),
        "users": list(body.get("users", [])),
        "hosts": list(body.get("hosts", [])),
    }
