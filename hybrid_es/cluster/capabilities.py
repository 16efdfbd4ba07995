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

The report is :class:`~hybrid_es.cluster.capability_report.Capabilities`; each engine's probe is
its own module (``probe_elasticsearch``, ``probe_opensearch``), native fusion is asked in
``native_fusion``, and the nodes and shards in ``topology``. The names other modules use are
re-exported here.
"""

from __future__ import annotations

from hybrid_es.cluster.capability_report import NOT_PROBED, Capabilities, IndexShards
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.native_fusion import (
    NATIVE_FUSION_PLUGIN,
    OPENSEARCH_MINIMUM,
    fuses_per_shard,
    native_fusion_works,
    version_tuple,
)
from hybrid_es.cluster.probe_elasticsearch import probe_elasticsearch
from hybrid_es.cluster.probe_opensearch import probe_opensearch
from hybrid_es.cluster.topology import read_topology
from hybrid_es.cluster.trace_storage import probe_trace_storage
from hybrid_es.settings import (
    DEFAULT_CHUNKS_INDEX,
    DEFAULT_CORPUS_STATE_INDEX,
    DEFAULT_PACKETS_INDEX,
    DEFAULT_TRACES_INDEX,
)
from hybrid_es.tenancy import IndexLayout

__all__ = [
    "NATIVE_FUSION_PLUGIN",
    "NOT_PROBED",
    "OPENSEARCH_MINIMUM",
    "Capabilities",
    "IndexShards",
    "fuses_per_shard",
    "native_fusion_works",
    "probe",
    "version_tuple",
]


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
        caps = probe_opensearch(engine, writes=writes)
    else:
        caps = probe_elasticsearch(engine, writes=writes, layout=layout)
    storage, why = probe_trace_storage(engine)
    notes = [*caps.notes, why]
    topology = read_topology(engine, layout, notes)
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
