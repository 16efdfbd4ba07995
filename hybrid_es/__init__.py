"""hybrid-es: permission-safe hybrid retrieval for Elasticsearch.

BM25 + kNN legs, reciprocal rank fusion (native or client-side), an external cross-encoder.
"""

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
from hybrid_es.retrieval.fusion import hybrid_linear, linear, rrf
from hybrid_es.models import (
    AuthorizationDecision,
    Hit,
    Principal,
    RequestScope,
    SearchResponse,
)
from hybrid_es.retrieval.policy import authorize, policy_filter
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.settings import Settings

__version__ = "0.1.0"

__all__ = [
    "AuthorizationDecision",
    "BadQueryError",
    "BulkIndexError",
    "CapabilityMissingError",
    "ConfigurationError",
    "EngineError",
    "EngineUnavailableError",
    "Hit",
    "HybridEsError",
    "PolicyViolationError",
    "Principal",
    "RequestScope",
    "RetrievalParams",
    "SearchResponse",
    "Settings",
    "TemplateConflictError",
    "__version__",
    "authorize",
    "hybrid_linear",
    "linear",
    "policy_filter",
    "rrf",
]
