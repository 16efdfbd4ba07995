"""The capability report: what the probe saw, as a plain value that the rest of the package
consults (fusion path, analysis profile, role installation), and its rows for a table.

:class:`Capabilities` is built by each engine's probe (``probe_elasticsearch``,
``probe_opensearch``) and completed by ``capabilities.probe``; :class:`IndexShards` is one
hybrid-es index's shards, replicas and embedder (``topology``). No I/O here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hybrid_es.cluster.access import CommandAccess, LicenceRow
from hybrid_es.cluster.templates import AnalysisProfile, RankConstantAt
from hybrid_es.cluster.trace_storage import TraceStorageKind, describe
from hybrid_es.tenancy import IndexLayout, TenancyMode

NOT_PROBED = "not probed (needs --probe-writes)"


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
    served_as: str | None = None
    """The name readers and writers use for this index, where it is a generation an alias
    points at (``hybrid-es-chunks`` for ``hybrid-es-chunks+g1``; ``cluster.generations``);
    None for an index served under its own name, or a generation nothing serves (a rebuild's
    next one, or the one kept for switching back)."""

    @property
    def name(self) -> str:
        """The name this index is served as: its alias, or its own name."""
        return self.served_as or self.index

    def describe(self) -> str:
        auto = f" (auto {self.auto_expand})" if self.auto_expand else ""
        model = f"; embedder {self.embedding_model}" if self.embedding_model else ""
        why = f" ({self.embedding_choice})" if self.embedding_choice else ""
        shown = f"{self.served_as} ({self.index})" if self.served_as else self.index
        return f"{shown}: {self.shards} shards, {self.replicas} replicas{auto}{model}{why}"


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
    source: CommandAccess | None = None
    """Whether the source credentials (``HYBRID_ES_SOURCE_*``) may read the source index
    (``HYBRID_ES_SOURCE_INDEX``) as ``ingest --from-index`` does (``access.source_access``); None:
    no source configured."""
    writes_probed: bool = False
    """Whether the probe wrote (and removed) probe objects: ``probe(writes=True)``."""
    modules: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    rrf_rank_constant_at: RankConstantAt = "parameters"
    """Where this OpenSearch's RRF processor reads its rank constant (``RankConstantAt``)."""
    trace_storage: TraceStorageKind = "dated-indices"
    """Where traces go (``cluster.trace_storage``): a data stream, or an index per day."""
    nodes: int | None = None
    """Nodes in the cluster, and of them data nodes (None: the credentials may not read the
    cluster's health, cluster privilege ``monitor``)."""
    data_nodes: int | None = None
    cluster_status: str | None = None
    """green, yellow or red (None: unknown)."""
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
    indices: tuple[IndexShards, ...] | None = None
    """Shards and replicas of every hybrid-es index (the chunks, packets, traces and corpus state
    indices, and the traces data stream's backing indices); None: the credentials may not read
    their settings (``view_index_metadata``)."""

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
            *(
                [(f"source read ({self.source.command.split()[-1]})", self.source.describe())]
                if self.source is not None
                else []
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
