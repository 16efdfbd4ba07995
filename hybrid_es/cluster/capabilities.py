"""What the connected cluster can do, probed from the live cluster, never inferred from a version.

``probe()`` does the I/O; :class:`Capabilities` is a plain value that the rest of the package
consults (fusion path, analysis profile, role installation). Each engine is probed in its own
terms (Elasticsearch: licence, retrievers, native roles; OpenSearch: plugins, the ``hybrid``
query with its search pipelines, the security plugin), and both answer the same questions.

The probe writes nothing by default: read APIs (licence, node info, authentication, privileges),
searches of a pattern that matches no index, and template simulation. What only a write can
settle (a probe index per vector type, a probe role) runs with ``writes=True``
(``hybrid-es capabilities --probe-writes``), which removes what it made; without it such answers
are derived from read APIs, or reported as not probed.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict

from hybrid_es.cluster.access import (
    CommandAccess,
    LicenceRow,
    elasticsearch_access,
    everyone_may,
    licence_matrix,
    opensearch_access,
)
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import AnalysisProfile, RankConstantAt, pipeline_definition
from hybrid_es.cluster.trace_storage import TraceStorageKind, describe, probe_trace_storage
from hybrid_es.errors import AuthenticationError, EngineError
from hybrid_es.settings import (
    DEFAULT_CHUNKS_INDEX,
    DEFAULT_CORPUS_STATE_INDEX,
    DEFAULT_PACKETS_INDEX,
    DEFAULT_TRACES_INDEX,
)
from hybrid_es.tenancy import IndexLayout, TenancyMode

_PROBE_PATTERN = "hybrid-es-capability-probe-nonexistent*"
_ANALYZERS = ("standard", "simple", "whitespace", "english", "cjk")
_ES_VECTOR_TYPES = ("hnsw", "int8_hnsw", "bbq_hnsw")
NOT_PROBED = "not probed (needs --probe-writes)"
OPENSEARCH_MINIMUM = (2, 19)
"""The first OpenSearch with the ``score-ranker-processor`` (native RRF) that hybrid-es needs for
native fusion; older versions are served by the client-side fusion."""
NATIVE_FUSION_PLUGIN = "opensearch-neural-search"


class IndexShards(BaseModel):
    """The shards and replicas of one hybrid-es index, as its settings say."""

    model_config = ConfigDict(frozen=True)

    index: str
    shards: int
    replicas: int
    """The replicas now (with ``auto_expand``, what the cluster expanded them to)."""
    auto_expand: str | None = None
    """The ``auto_expand_replicas`` range (``0-1``), where the index has one."""
    embedding_model: str | None = None
    """A chunks index's embedder, as its mapping records it (None: nothing written yet, or not
    a chunks index)."""
    embedding_choice: str | None = None
    """Why that embedder (``HYBRID_ES_EMBEDDER=auto``: the scripts of the first documents)."""

    def describe(self) -> str:
        auto = f" (auto {self.auto_expand})" if self.auto_expand else ""
        model = f"; embedder {self.embedding_model}" if self.embedding_model else ""
        why = f" ({self.embedding_choice})" if self.embedding_choice else ""
        return f"{self.index}: {self.shards} shards, {self.replicas} replicas{auto}{model}{why}"


class Capabilities(BaseModel):
    """A capability report. Booleans are what the probe saw; ``notes`` say why where useful."""

    model_config = ConfigDict(frozen=True)

    flavor: str
    server_version: str
    client_library: str = ""
    """The client and its version (``elasticsearch-py 9.5.1``), shown beside the server's."""
    license_type: str | None
    security_enabled: bool
    native_rrf: bool
    linear_retriever: bool
    """Native min-max linear fusion (Elasticsearch's ``linear`` retriever; OpenSearch's
    ``normalization-processor``)."""
    knn: bool | None
    """None: not probed (the credentials may not simulate templates; ``writes=True`` settles it)."""
    index_options: tuple[str, ...] | None
    """Vector index types that can be created (Elasticsearch: hnsw variants; OpenSearch: the
    k-NN engines hybrid-es uses, lucene only); None when not probed."""
    analyzers: tuple[str, ...]
    native_security_store: bool
    """Roles with document-level security can be stored and enforced (Elasticsearch: native
    roles, a licence with document-level security; OpenSearch: the security plugin's REST API).
    Derived from read APIs unless ``writes_probed``; whether these credentials may store roles is
    in ``privileges`` (``bootstrap --tenant``)."""
    user: str | None = None
    """Who the probe connected as (None: security is off, or the cluster would not say)."""
    license_status: str | None = None
    licence: tuple[LicenceRow, ...] = ()
    """The licence matrix: each licensed feature, what it needs, whether this licence has it."""
    privileges: tuple[CommandAccess, ...] = ()
    """What these credentials may do, per command (``cluster.access``)."""
    writes_probed: bool = False
    """Whether the probe wrote (and removed) probe objects: ``probe(writes=True)``."""
    modules: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    rrf_rank_constant_at: RankConstantAt = "parameters"
    trace_storage: TraceStorageKind = "dated-indices"
    """Where traces go (``cluster.trace_storage``): a data stream, or an index per day."""
    nodes: int | None = None
    """Nodes in the cluster, and of them data nodes (None: the credentials may not read the
    cluster's health, cluster privilege ``monitor``)."""
    data_nodes: int | None = None
    cluster_status: str | None = None
    fusion: str = "auto"
    """The configured fusion mode (``HYBRID_ES_FUSION``: auto, native or client)."""
    fusion_method: str = "linear"
    """The configured fusion method (``HYBRID_ES_FUSION_METHOD``: linear or rrf)."""
    fusion_alpha: float | str = "spread"
    """The configured dense weight of linear fusion (``HYBRID_ES_FUSION_ALPHA``): a number, or
    ``spread`` (chosen per query from the legs' scores, so fused client-side)."""
    tenancy: TenancyMode = "index-per-tenant"
    """The index layout of the settings probed with: it decides whether a tenant reader
    credential can be confined to one tenant (``IndexLayout.reader_refused_because``)."""
    """green, yellow or red (None: unknown)."""
    indices: tuple[IndexShards, ...] | None = None
    """Shards and replicas of every hybrid-es index (the chunks, packets, traces and corpus state
    indices, and the traces data stream's backing indices); None: the credentials may not read
    their settings (``view_index_metadata``)."""
    """Where this OpenSearch's RRF processor reads its rank constant (``RankConstantAt``)."""

    @property
    def server_major(self) -> int:
        head = self.server_version.split(".")[0]
        return int(head) if head.isdigit() else 0

    @property
    def analysis_profile(self) -> AnalysisProfile:
        """``full`` (english + cjk) where analysis-common is there, else ``standard``."""
        return "full" if {"english", "cjk"} <= set(self.analyzers) else "standard"

    def native_fusion(self, method: str) -> bool:
        """Whether searches fuse ``method`` (``rrf`` or ``linear``) in the cluster. Never
        ``linear`` on Elasticsearch: its ``linear`` retriever normalises min-max differently
        from hybrid-es, so the searcher fuses it client-side even where the retriever exists."""
        if method == "rrf":
            return self.native_rrf
        return self.flavor == "opensearch" and self.linear_retriever

    def path_for(self, method: str) -> str:
        """The path a search with ``method`` takes here under the configured ``fusion`` mode
        (what ``HybridSearcher`` chooses: ``SearchResponse.fusion_path``)."""
        native = self.native_fusion(method)
        if method == "linear" and self.fusion_alpha == "spread":
            if self.fusion == "native":
                return "refused: native linear takes a fixed weight (HYBRID_ES_FUSION_ALPHA)"
            return "client-linear (msearch; dense weight per query: spread)"
        if self.fusion == "client" or (self.fusion == "auto" and not native):
            return f"client-{method} (msearch)"
        if not native:
            return f"refused: native {method} requested (HYBRID_ES_FUSION=native), not available"
        return f"native-{method}" + (" (hybrid query)" if self.flavor == "opensearch" else "")

    @property
    def fusion_path(self) -> str:
        """The path of searches with the configured fusion method."""
        return self.path_for(self.fusion_method)

    def _fusion_rows(self) -> str:
        other = "rrf" if self.fusion_method == "linear" else "linear"
        return (
            f"{self.fusion_path}, the configured {self.fusion_method} "
            f"(HYBRID_ES_FUSION={self.fusion})\n{other}: {self.path_for(other)}"
        )

    def rows(self) -> list[tuple[str, str]]:
        """The report as (capability, value) rows for a table."""

        def yn(v: bool | None) -> str:
            return NOT_PROBED if v is None else "yes" if v else "no"

        options = self.index_options

        return [
            ("server", f"{self.flavor} {self.server_version}"),
            ("client", self.client_library or "unknown"),
            (
                "probe",
                "with writes (probe objects made and removed)"
                if self.writes_probed
                else "read-only",
            ),
            ("user", self.user or "n/a"),
            (
                "licence",
                self.license_type
                or ("n/a (open source)" if self.flavor == "opensearch" else "unknown"),
            ),
            ("licence matrix", "\n".join(_licence_line(r) for r in self.licence)),
            ("security", "on" if self.security_enabled else "off"),
            ("native rrf", yn(self.native_rrf)),
            ("native min-max linear", yn(self.native_fusion("linear"))),
            ("fusion path", self._fusion_rows()),
            ("knn / vectors", yn(self.knn)),
            ("vector index types", NOT_PROBED if options is None else ", ".join(options) or "none"),
            ("analyzers", ", ".join(self.analyzers) or "unknown"),
            ("analysis profile", self.analysis_profile),
            ("roles with document-level security", yn(self.native_security_store)),
            ("tenant reader credentials", self.reader_credentials()),
            (
                f"privileges of {self.user or 'these credentials'}",
                "\n".join(f"{a.command}: {a.describe()}" for a in self.privileges),
            ),
            *([("plugins", ", ".join(self.plugins))] if self.plugins else []),
            ("trace storage", describe(self.trace_storage)),
            ("nodes", self._nodes()),
            (
                "hybrid-es indices",
                "unknown"
                if self.indices is None
                else "\n".join(i.describe() for i in self.indices) or "none yet",
            ),
        ]

    def reader_credentials(self) -> str:
        """What ``bootstrap --tenant`` makes here, or why it refuses to."""
        why = IndexLayout(mode=self.tenancy).reader_refused_because()
        if why:
            return f"refused ({self.tenancy} tenancy): {why}; use index-per-tenant"
        return "one role per tenant naming only its own chunks index (bootstrap --tenant)"

    def _nodes(self) -> str:
        if self.nodes is None:
            return "unknown"
        return f"{self.nodes} ({self.data_nodes} data), cluster {self.cluster_status}"


def _licence_line(row: LicenceRow) -> str:
    if row.needs.startswith("n/a"):
        return f"{row.feature}: {row.needs}"
    verdict = {True: "yes", False: "no", None: "unknown"}[row.allowed]
    return f"{row.feature}: {verdict} (needs {row.needs})"


def probe(
    engine: Engine,
    *,
    writes: bool = False,
    layout: IndexLayout | None = None,
    fusion: str = "auto",
    fusion_method: str = "linear",
    fusion_alpha: float | str = "spread",
) -> Capabilities:
    """Probe the cluster behind ``engine`` (see :func:`hybrid_es.connect`) with read APIs only;
    ``writes=True`` also settles what only a write can (vector index types, the role store) with
    probe objects that it removes. ``layout`` names the indices whose privileges are checked
    (default: the default index names); ``fusion``, ``fusion_method`` and ``fusion_alpha`` are
    the configured ones, whose path the report states.

    Raises:
        EngineUnavailableError / AuthenticationError: the cluster cannot be reached or refuses the
        credentials (401). Missing privileges are reported, not raised.
    """
    layout = layout or IndexLayout(
        chunks=DEFAULT_CHUNKS_INDEX,
        packets=DEFAULT_PACKETS_INDEX,
        traces=DEFAULT_TRACES_INDEX,
        corpus_state=DEFAULT_CORPUS_STATE_INDEX,
    )
    if engine.flavor == "opensearch":
        caps = _probe_opensearch(engine, writes=writes)
    else:
        caps = _probe_elasticsearch(engine, writes=writes, layout=layout)
    storage, why = probe_trace_storage(engine)
    notes = [*caps.notes, why]
    topology = _topology(engine, layout, notes)
    return caps.model_copy(
        update={
            "trace_storage": storage,
            "notes": tuple(notes),
            "tenancy": layout.mode,
            "fusion": fusion,
            "fusion_method": fusion_method,
            "fusion_alpha": fusion_alpha,
            **topology,
        }
    )


_SHARD_SETTINGS = "index.number_of_shards,index.number_of_replicas,index.auto_expand_replicas"


def _topology(engine: Engine, layout: IndexLayout, notes: list[str]) -> dict[str, Any]:
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
            )
        )
    out["indices"] = tuple(indices)
    return out


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


def _probe_elasticsearch(engine: Engine, *, writes: bool, layout: IndexLayout) -> Capabilities:
    notes: list[str] = []
    user, security = _es_authenticate(engine)
    node = _node_info(engine, notes)
    version = str(node.get("version", engine.version))
    modules = tuple(sorted(m["name"] for m in node.get("modules", []) if "name" in m))
    licence, status = _es_license(engine, notes)
    matrix = licence_matrix("elasticsearch", licence, status or "active")
    rrf, rrf_note = _retriever_works(engine, "rrf")
    linear, _ = _retriever_works(engine, "linear")
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
        analyzers=_analyzers(engine, notes),
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


def _node_info(engine: Engine, notes: list[str]) -> dict[str, Any]:
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


def _analyzers(engine: Engine, notes: list[str]) -> tuple[str, ...]:
    """The analyzers the cluster has: asked of the analyze API, or where the credentials may
    not call it (a bootstrap credential without cluster ``manage``), of the template simulation,
    which validates a mapping's analyzers."""
    found = tuple(a for a in _ANALYZERS if engine.analyzer_works(a))
    if found:  # `standard` always exists: nothing found means the analyze API was refused
        return found
    simulated = []
    for analyzer in _ANALYZERS:
        text = {"type": "text", "analyzer": analyzer}
        accepted = _simulated(engine, {"mappings": {"properties": {"t": text}}})
        if accepted is None:
            notes.append(
                "analyzers unknown: the credentials may call neither the analyze API nor the "
                "template simulation"
            )
            return ()
        if accepted:
            simulated.append(analyzer)
    return tuple(simulated)


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


def _es_vector_mapping(option: str) -> dict[str, Any]:
    vector = {"type": "dense_vector", "dims": 64, "similarity": "cosine"}
    return {"properties": {"v": {**vector, "index_options": {"type": option}}}}


def _es_vector_type_works(engine: Engine, option: str) -> bool:
    return _index_can_be_created(engine, {"mappings": _es_vector_mapping(option)})


def _es_vector_types_simulated(engine: Engine, notes: list[str]) -> tuple[str, ...] | None:
    """The vector index types whose mapping the cluster accepts, asked of the template
    simulation (which validates the mapping and stores nothing); None when the credentials may
    not simulate."""
    found = []
    for option in _ES_VECTOR_TYPES:
        accepted = _simulated(engine, {"mappings": _es_vector_mapping(option)})
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


# -- OpenSearch ------------------------------------------------------------------------------


def _probe_opensearch(engine: Engine, *, writes: bool) -> Capabilities:
    notes: list[str] = []
    node = _node_info(engine, notes)
    version = str(node.get("version", engine.version))
    modules = tuple(sorted(m["name"] for m in node.get("modules", []) if "name" in m))
    plugins = tuple(sorted(p["name"] for p in node.get("plugins", []) if "name" in p))
    authinfo = _os_authinfo(engine)
    security = authinfo is not None
    rrf, rrf_note = _hybrid_works(engine, "rrf")
    linear, linear_note = _hybrid_works(engine, "linear")
    notes += [n for n in (rrf_note, linear_note) if n]
    knn: bool | None
    if writes:
        knn = _index_can_be_created(engine, _os_knn_index(), notes)
    elif node and "opensearch-knn" not in plugins:
        knn = False
        notes.append("no k-NN: the opensearch-knn plugin is missing")
    else:
        knn = _simulated(engine, _os_knn_index())
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
        analyzers=_analyzers(engine, notes),
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


# -- shared ----------------------------------------------------------------------------------


def _simulated(engine: Engine, template: dict[str, Any]) -> bool | None:
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
