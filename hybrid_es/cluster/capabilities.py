"""What the connected cluster can do, probed from the live cluster, never inferred from a version.

``probe()`` does the I/O; :class:`Capabilities` is a plain value that the rest of the package
consults (fusion path, analysis profile, role installation). Each engine is probed in its own
terms (Elasticsearch: licence, retrievers, native roles; OpenSearch: plugins, the ``hybrid``
query with its search pipelines, the security plugin), and both answer the same questions.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import AnalysisProfile, RankConstantAt, pipeline_definition
from hybrid_es.errors import AuthenticationError, EngineError

_PROBE_PATTERN = "hybrid-es-capability-probe-nonexistent*"
_ANALYZERS = ("standard", "simple", "whitespace", "english", "cjk")
OPENSEARCH_MINIMUM = (2, 19)
"""The first OpenSearch with the ``score-ranker-processor`` (native RRF) that hybrid-es needs for
native fusion; older versions are served by the client-side fusion."""
NATIVE_FUSION_PLUGIN = "opensearch-neural-search"


class Capabilities(BaseModel):
    """A capability report. Booleans are what the probe saw; ``notes`` say why where useful."""

    model_config = ConfigDict(frozen=True)

    flavor: str
    server_version: str
    license_type: str | None
    security_enabled: bool
    native_rrf: bool
    linear_retriever: bool
    """Native min-max linear fusion (Elasticsearch's ``linear`` retriever; OpenSearch's
    ``normalization-processor``)."""
    knn: bool
    index_options: tuple[str, ...]
    """Vector index types that can be created (Elasticsearch: hnsw variants; OpenSearch: the
    k-NN engines hybrid-es uses, lucene only)."""
    analyzers: tuple[str, ...]
    native_security_store: bool
    """Roles with document-level security can be stored (Elasticsearch: native roles;
    OpenSearch: the security plugin's REST API)."""
    modules: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    rrf_rank_constant_at: RankConstantAt = "parameters"
    """Where this OpenSearch's RRF processor reads its rank constant (``RankConstantAt``)."""

    @property
    def server_major(self) -> int:
        head = self.server_version.split(".")[0]
        return int(head) if head.isdigit() else 0

    @property
    def analysis_profile(self) -> AnalysisProfile:
        """``full`` (english + cjk) where analysis-common is there, else ``standard``."""
        return "full" if {"english", "cjk"} <= set(self.analyzers) else "standard"

    @property
    def fusion_path(self) -> str:
        if self.native_rrf:
            return "native-rrf (hybrid query)" if self.flavor == "opensearch" else "native-rrf"
        return "client-rrf (msearch)"

    def rows(self) -> list[tuple[str, str]]:
        """The report as (capability, value) rows for a table."""

        def yn(v: bool) -> str:
            return "yes" if v else "no"

        return [
            ("server", f"{self.flavor} {self.server_version}"),
            ("licence", self.license_type or "none"),
            ("security", "on" if self.security_enabled else "off"),
            ("native rrf", yn(self.native_rrf)),
            ("native min-max linear", yn(self.linear_retriever)),
            ("fusion path", self.fusion_path),
            ("knn / vectors", yn(self.knn)),
            ("vector index types", ", ".join(self.index_options) or "none"),
            ("analyzers", ", ".join(self.analyzers)),
            ("analysis profile", self.analysis_profile),
            ("roles with document-level security", yn(self.native_security_store)),
            *([("plugins", ", ".join(self.plugins))] if self.plugins else []),
        ]


def probe(engine: Engine) -> Capabilities:
    """Probe the cluster behind ``engine`` (see :func:`hybrid_es.connect`).

    Raises:
        EngineUnavailableError / AuthenticationError: the cluster cannot be reached or refuses us.
    """
    if engine.flavor == "opensearch":
        return _probe_opensearch(engine)
    return _probe_elasticsearch(engine)


def native_fusion_works(engine: Engine, method: str) -> tuple[bool, str]:
    """Whether the engine runs ``method`` (``rrf`` or ``linear``) fusion natively, and why not.

    Read-only, and open to a least-privileged reader: one search of a pattern that matches no
    index, with the very request shape the searcher sends.
    """
    if engine.flavor == "opensearch":
        return _hybrid_works(engine, method)
    if method == "linear":
        return False, (
            "linear: Elasticsearch's linear retriever normalises min-max differently from "
            "hybrid-es (and OpenSearch); fused client-side"
        )
    return _retriever_works(engine, method)


def fuses_per_shard(engine: Engine) -> bool:
    """Whether the engine's native hybrid fusion ranks within each shard: OpenSearch before 3.5
    (neural-search#1718). Elasticsearch's rrf retriever fuses the global legs."""
    if engine.flavor != "opensearch":
        return False
    return engine.version in ("", "unknown") or version_tuple(engine.version) < (3, 5)


# -- Elasticsearch ---------------------------------------------------------------------------


def _probe_elasticsearch(engine: Engine) -> Capabilities:
    notes: list[str] = []
    node = engine.node_info()
    version = str(node.get("version", engine.version))
    modules = tuple(sorted(m["name"] for m in node.get("modules", []) if "name" in m))
    security = _es_security_enabled(engine)
    rrf, rrf_note = _retriever_works(engine, "rrf")
    linear, _ = _retriever_works(engine, "linear")
    if not rrf:
        notes.append(rrf_note)
    options = tuple(
        o for o in ("hnsw", "int8_hnsw", "bbq_hnsw") if _es_vector_type_works(engine, o)
    )
    store, store_note = _es_role_store(engine) if security else (False, "security off")
    if store_note:
        notes.append(store_note)
    return Capabilities(
        flavor="elasticsearch",
        server_version=version,
        license_type=_es_license(engine),
        security_enabled=security,
        native_rrf=rrf,
        linear_retriever=linear,
        knn=bool(options),
        index_options=options,
        analyzers=tuple(a for a in _ANALYZERS if engine.analyzer_works(a)),
        native_security_store=store,
        modules=modules,
        notes=tuple(notes),
    )


def _es_license(engine: Engine) -> str | None:
    try:
        return str(
            engine.request("GET", "/_license", what="reading the licence")["license"]["type"]
        )
    except EngineError:
        return None


def _es_security_enabled(engine: Engine) -> bool:
    try:
        engine.request("GET", "/_security/_authenticate", what="authentication")
        return True
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        return False
    except EngineError:
        return False


def _retriever_works(engine: Engine, kind: str) -> tuple[bool, str]:
    leaf: dict[str, Any] = {"standard": {"query": {"match_all": {}}}}
    if kind == "rrf":
        body: dict[str, Any] = {"rrf": {"retrievers": [leaf, leaf], "rank_window_size": 10}}
    else:
        retrievers = [{"retriever": leaf, "weight": 1.0}, {"retriever": leaf, "weight": 1.0}]
        body = {"linear": {"retrievers": retrievers, "rank_window_size": 10}}
    try:
        engine.search(
            _PROBE_PATTERN,
            {"retriever": body, "size": 1},
            allow_no_indices=True,
            ignore_unavailable=True,
            what="capability probe",
        )
        return True, ""
    except EngineError as exc:
        reason = exc.message[:200]
        if "unknown retriever" in reason or "does not support this retriever" in reason:
            return False, f"{kind}: the cluster has no {kind} retriever (no rank-rrf module)"
        if exc.status == 403 or "licen" in reason.lower():
            return False, f"{kind}: refused by the licence ({reason})"
        return False, f"{kind}: probe failed: {reason}"


def _es_vector_type_works(engine: Engine, option: str) -> bool:
    mapping = {
        "properties": {
            "v": {
                "type": "dense_vector",
                "dims": 64,
                "similarity": "cosine",
                "index_options": {"type": option},
            }
        }
    }
    return _index_can_be_created(engine, {"mappings": mapping})


def _es_role_store(engine: Engine) -> tuple[bool, str]:
    """Whether native roles (and so API keys with role descriptors) can be stored.

    On Elasticsearch's integ-test zip the security index cannot be created (its mapping needs
    the analysis-common module), so native users, roles and API keys are unavailable there.
    """
    name = f"hybrid-es-capability-probe-{uuid.uuid4().hex[:8]}"
    try:
        engine.request(
            "PUT",
            f"/_security/role/{name}",
            body={"indices": [{"names": ["none"], "privileges": ["read"]}]},
            what="storing a probe role",
        )
        engine.request("DELETE", f"/_security/role/{name}", what="deleting a probe role")
        return True, ""
    except EngineError as exc:
        return False, f"native users/roles/API keys unavailable: {exc.message[:200]}"


# -- OpenSearch ------------------------------------------------------------------------------


def _probe_opensearch(engine: Engine) -> Capabilities:
    notes: list[str] = []
    try:
        node = engine.node_info()
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        node = {}
        notes.append("the credentials may not read node info: plugins and modules unknown")
    version = str(node.get("version", engine.version))
    modules = tuple(sorted(m["name"] for m in node.get("modules", []) if "name" in m))
    plugins = tuple(sorted(p["name"] for p in node.get("plugins", []) if "name" in p))
    security = _os_security_enabled(engine)
    rrf, rrf_note = _hybrid_works(engine, "rrf")
    linear, linear_note = _hybrid_works(engine, "linear")
    notes += [n for n in (rrf_note, linear_note) if n]
    knn = _index_can_be_created(engine, _os_knn_index(), notes)
    store = False
    if security:
        store, store_note = _os_role_store(engine)
        if store_note:
            notes.append(store_note)
    else:
        notes.append("the security plugin is off or missing: no document-level security roles")
    return Capabilities(
        flavor="opensearch",
        server_version=version,
        license_type=None,
        security_enabled=security,
        native_rrf=rrf,
        linear_retriever=linear,
        knn=knn,
        index_options=("lucene",) if knn else (),
        analyzers=tuple(a for a in _ANALYZERS if engine.analyzer_works(a)),
        native_security_store=store,
        modules=modules,
        plugins=plugins,
        notes=tuple(notes),
        rrf_rank_constant_at=engine.rrf_rank_constant_at or "parameters",
    )


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for p in version.split(".")[:3]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _hybrid_works(engine: Engine, method: str) -> tuple[bool, str]:
    """Run a ``hybrid`` query through the fusion's own pipeline (inline) on no index. For RRF it
    also finds where this neural-search reads the rank constant (``engine.rrf_rank_constant_at``):
    the 2.19 place first, because 3.x refuses it loudly while 2.19 would silently ignore the
    3.x place."""
    if engine.version not in ("", "unknown") and version_tuple(engine.version) < OPENSEARCH_MINIMUM:
        minimum = ".".join(map(str, OPENSEARCH_MINIMUM))
        return False, (
            f"{method}: OpenSearch {engine.version} is older than {minimum}, the minimum for "
            "native fusion (score-ranker-processor); fused client-side"
        )
    places: tuple[RankConstantAt, ...] = ("parameters", "combination")
    reason = ""
    for place in places if method == "rrf" else places[:1]:
        pipeline = pipeline_definition(method, rank_constant=60, alpha=0.5, rank_constant_at=place)
        body = {
            "size": 1,
            "query": {"hybrid": {"queries": [{"match_all": {}}, {"match_all": {}}]}},
            "search_pipeline": pipeline,
        }
        try:
            engine.search(
                _PROBE_PATTERN, body, allow_no_indices=True, ignore_unavailable=True, what="probe"
            )
        except EngineError as exc:
            reason = exc.message[:200]
            if "supported parameters are" in reason:
                continue  # 3.x: the rank constant belongs in the combination itself
            if "unknown query [hybrid]" in reason:
                return False, (
                    f"{method}: no hybrid query ({NATIVE_FUSION_PLUGIN} is missing); fused "
                    "client-side with the same semantics"
                )
            break
        if method == "rrf":
            engine.rrf_rank_constant_at = place
        return True, ""
    return False, f"{method}: native fusion probe failed ({reason}); fused client-side"


def _os_security_enabled(engine: Engine) -> bool:
    try:
        engine.request("GET", "/_plugins/_security/authinfo", what="authentication")
        return True
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        return False
    except EngineError:
        return False


def _os_knn_index() -> dict[str, Any]:
    method = {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 4, "method": method}}},
    }


def _os_role_store(engine: Engine) -> tuple[bool, str]:
    """Whether the security plugin's REST API takes roles from these credentials."""
    try:
        engine.request("GET", "/_plugins/_security/api/roles/all_access", what="reading roles")
        return True, ""
    except EngineError as exc:
        return False, f"security plugin roles cannot be managed: {exc.message[:200]}"


# -- shared ----------------------------------------------------------------------------------


def _index_can_be_created(
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
