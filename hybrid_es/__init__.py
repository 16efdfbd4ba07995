"""hybrid-es: permission-safe hybrid retrieval for Elasticsearch and OpenSearch.

BM25 + kNN legs, reciprocal rank fusion (native or client-side), an external cross-encoder, and
evidence packets; every operation takes the caller's ``Principal``. ``connect(settings)`` gives
the :class:`Engine` of either flavour (probed) that every component takes. The layers and what
each may import are listed in ``tests/unit/test_layers.py``; this module only re-exports the
public names.
"""

from hybrid_es.cluster.client import make_client
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.errors import (
    BadQueryError,
    BulkIndexError,
    CapabilityMissingError,
    ConfigurationError,
    EngineError,
    EngineUnavailableError,
    HybridEsError,
    PolicyViolationError,
    TemplateConflictError,
)
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.ingest.run import ingest_path
from hybrid_es.models import (
    AuthorizationDecision,
    Hit,
    Principal,
    RequestScope,
    SearchResponse,
)
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from hybrid_es.retrieval.fusion import hybrid_linear, linear, rrf
from hybrid_es.retrieval.policy import authorize, policy_filter
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout

__version__ = "0.1.0"

__all__ = [
    "AuthorizationDecision",
    "BadQueryError",
    "BulkIndexError",
    "CapabilityMissingError",
    "ConfigurationError",
    "Engine",
    "EngineError",
    "EngineUnavailableError",
    "Hit",
    "HybridEsError",
    "HybridSearcher",
    "IndexLayout",
    "Ingestor",
    "PacketService",
    "PacketStore",
    "PolicyViolationError",
    "Principal",
    "RequestScope",
    "RetrievalParams",
    "SearchResponse",
    "Settings",
    "TemplateConflictError",
    "__version__",
    "authorize",
    "connect",
    "hybrid_linear",
    "ingest_path",
    "linear",
    "make_client",
    "policy_filter",
    "rrf",
]
