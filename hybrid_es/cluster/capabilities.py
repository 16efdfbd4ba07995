"""What the connected cluster can do, probed from the live cluster, never inferred from a version.

``probe()`` does the I/O; :class:`Capabilities` is a plain value that the rest of the package
consults (fusion path, analysis profile, role installation).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from elasticsearch import ApiError, Elasticsearch, UnsupportedProductError
from pydantic import BaseModel, ConfigDict

from hybrid_es.cluster.templates import AnalysisProfile
from hybrid_es.errors import EngineError, error_reason, translate_es_error

_PROBE_PATTERN = "hybrid-es-capability-probe-nonexistent*"
_ANALYZERS = ("standard", "simple", "whitespace", "english", "cjk")


class Capabilities(BaseModel):
    """A capability report. Booleans are what the probe saw; ``notes`` say why where useful."""

    model_config = ConfigDict(frozen=True)

    flavor: str
    server_version: str
    license_type: str | None
    security_enabled: bool
    native_rrf: bool
    linear_retriever: bool
    knn: bool
    index_options: tuple[str, ...]
    analyzers: tuple[str, ...]
    native_security_store: bool
    modules: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def server_major(self) -> int:
        return int(self.server_version.split(".")[0])

    @property
    def analysis_profile(self) -> AnalysisProfile:
        """``full`` (english + cjk) where analysis-common is there, else ``standard``."""
        return "full" if {"english", "cjk"} <= set(self.analyzers) else "standard"

    def rows(self) -> list[tuple[str, str]]:
        """The report as (capability, value) rows for a table."""

        def yn(v: bool) -> str:
            return "yes" if v else "no"

        return [
            ("server", f"{self.flavor} {self.server_version}"),
            ("licence", self.license_type or "unknown"),
            ("security", "on" if self.security_enabled else "off"),
            ("native rrf retriever", yn(self.native_rrf)),
            ("native linear retriever", yn(self.linear_retriever)),
            ("fusion path", "native-rrf" if self.native_rrf else "client-rrf (msearch)"),
            ("knn / dense_vector", yn(self.knn)),
            ("vector index_options", ", ".join(self.index_options) or "none"),
            ("analyzers", ", ".join(self.analyzers)),
            ("analysis profile", self.analysis_profile),
            ("native users/roles/API keys", yn(self.native_security_store)),
        ]


def probe(client: Elasticsearch, *, url: str = "") -> Capabilities:
    """Probe the cluster behind ``client``.

    Raises:
        EngineUnavailableError / AuthenticationError: the cluster cannot be reached or refuses us.
    """
    notes: list[str] = []
    try:
        nodes = client.nodes.info(
            node_id="_local", filter_path="nodes.*.version,nodes.*.modules.name"
        )
    except UnsupportedProductError as exc:
        raise EngineError(
            f"the server at {url} is not Elasticsearch (OpenSearch?): {exc}",
            hint="hybrid-es talks to Elasticsearch 8.19+/9.x; OpenSearch needs opensearch-py",
        ) from exc
    except Exception as exc:
        raise translate_es_error(exc, url=url, what="capability probe") from exc
    node: dict[str, Any] = next(iter(nodes.body.get("nodes", {}).values()), {})
    version = str(node.get("version", "unknown"))
    modules = tuple(sorted(m["name"] for m in node.get("modules", []) if "name" in m))

    license_type = _license(client)
    security = _security_enabled(client)
    rrf, rrf_note = _retriever_works(client, "rrf")
    linear, _ = _retriever_works(client, "linear")
    if rrf_note:
        notes.append(rrf_note)
    knn, options = _vector_options(client)
    analyzers = tuple(a for a in _ANALYZERS if _analyzer_works(client, a))
    store, store_note = _native_security_store(client) if security else (False, "security off")
    if store_note:
        notes.append(store_note)
    return Capabilities(
        flavor="elasticsearch",
        server_version=version,
        license_type=license_type,
        security_enabled=security,
        native_rrf=rrf,
        linear_retriever=linear,
        knn=knn,
        index_options=options,
        analyzers=analyzers,
        native_security_store=store,
        modules=modules,
        notes=tuple(notes),
    )


def _license(client: Elasticsearch) -> str | None:
    try:
        return str(client.license.get().body["license"]["type"])
    except Exception:
        return None


def _security_enabled(client: Elasticsearch) -> bool:
    try:
        client.security.authenticate()
        return True
    except ApiError as exc:
        if exc.meta.status == 401:
            raise translate_es_error(exc, what="authentication") from exc
        return False


def _retriever_works(client: Elasticsearch, kind: str) -> tuple[bool, str | None]:
    leaf: dict[str, Any] = {"standard": {"query": {"match_all": {}}}}
    retrievers: list[Any]
    if kind == "rrf":
        body: dict[str, Any] = {"rrf": {"retrievers": [leaf, leaf], "rank_window_size": 10}}
    else:
        retrievers = [{"retriever": leaf, "weight": 1.0}, {"retriever": leaf, "weight": 1.0}]
        body = {"linear": {"retrievers": retrievers, "rank_window_size": 10}}
    try:
        client.search(
            index=_PROBE_PATTERN,
            retriever=body,
            size=1,
            allow_no_indices=True,
            ignore_unavailable=True,
        )
        return True, None
    except ApiError as exc:
        reason = str(exc.body)[:200]
        if "unknown retriever" in reason:
            return False, f"{kind}: the cluster has no {kind} retriever (no rank-rrf module)"
        if exc.meta.status == 403 or "license" in reason.lower():
            return False, f"{kind}: refused by the licence ({reason})"
        return False, f"{kind}: probe failed: {reason}"


def _vector_options(client: Elasticsearch) -> tuple[bool, tuple[str, ...]]:
    found: list[str] = []
    for opt in ("hnsw", "int8_hnsw", "bbq_hnsw"):
        name = f"hybrid-es-probe-{uuid.uuid4().hex[:12]}"
        mapping = {
            "properties": {
                "v": {
                    "type": "dense_vector",
                    "dims": 64,
                    "similarity": "cosine",
                    "index_options": {"type": opt},
                },
            }
        }
        try:
            client.indices.create(index=name, mappings=mapping, settings={"number_of_replicas": 0})
            found.append(opt)
        except ApiError:
            pass
        finally:
            with contextlib.suppress(ApiError):
                client.indices.delete(index=name, ignore_unavailable=True)
    return bool(found), tuple(found)


def _analyzer_works(client: Elasticsearch, analyzer: str) -> bool:
    try:
        client.indices.analyze(analyzer=analyzer, text="probe")
        return True
    except ApiError:
        return False


def _native_security_store(client: Elasticsearch) -> tuple[bool, str | None]:
    """Whether native roles (and so API keys with role descriptors) can be stored.

    On Elasticsearch's integ-test zip the security index cannot be created (its mapping needs
    the analysis-common module), so native users, roles and API keys are unavailable there.
    """
    name = f"hybrid-es-capability-probe-{uuid.uuid4().hex[:8]}"
    try:
        client.security.put_role(name=name, indices=[{"names": ["none"], "privileges": ["read"]}])
        client.security.delete_role(name=name)
        return True, None
    except ApiError as exc:
        return False, f"native users/roles/API keys unavailable: {error_reason(exc.body)}"
