"""hybrid-es: permission-safe hybrid retrieval for Elasticsearch and OpenSearch.

BM25 + kNN legs, reciprocal rank fusion (native or client-side), an external cross-encoder, and
evidence packets; every operation takes the caller's ``Principal``. The front door is
:class:`HybridEs` (``hybrid_es.deployment``): one deployment, every part of it built from its
``Settings``. ``connect(settings)`` gives the :class:`Engine` of either flavour (probed) that
every component takes. The layers and what
each may import are listed in ``tests/unit/test_layers.py``; this module only re-exports the
public names.

The names are imported lazily, on first use (PEP 562), so ``import hybrid_es`` loads no client,
model or ingest code until a name is asked for: a program that needs only ``Principal`` pays for
the models module alone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_HOMES = {
    "AuthenticationError": "hybrid_es.errors",
    "AuthorizationDecision": "hybrid_es.models",
    "BadQueryError": "hybrid_es.errors",
    "BulkIndexError": "hybrid_es.errors",
    "CapabilityMissingError": "hybrid_es.errors",
    "ConfigurationError": "hybrid_es.errors",
    "Document": "hybrid_es.ingest.documents",
    "Engine": "hybrid_es.cluster.engine",
    "EngineError": "hybrid_es.errors",
    "EngineUnavailableError": "hybrid_es.errors",
    "FilterError": "hybrid_es.errors",
    "Hit": "hybrid_es.models",
    "HybridEs": "hybrid_es.deployment",
    "HybridEsError": "hybrid_es.errors",
    "HybridSearcher": "hybrid_es.retrieval.searcher",
    "IndexLayout": "hybrid_es.tenancy",
    "IndexMissingError": "hybrid_es.errors",
    "IndexSource": "hybrid_es.ingest.sync",
    "IngestError": "hybrid_es.errors",
    "Ingestor": "hybrid_es.ingest.indexer",
    "ManifestConflictError": "hybrid_es.errors",
    "ModelError": "hybrid_es.errors",
    "PacketError": "hybrid_es.errors",
    "PacketNotFoundError": "hybrid_es.errors",
    "PacketService": "hybrid_es.packets.service",
    "PacketStore": "hybrid_es.packets.store",
    "PolicyViolationError": "hybrid_es.errors",
    "Principal": "hybrid_es.models",
    "RequestScope": "hybrid_es.models",
    "RetrievalParams": "hybrid_es.retrieval.queries",
    "SearchRequest": "hybrid_es.models",
    "SearchResponse": "hybrid_es.models",
    "SearchTimeoutError": "hybrid_es.errors",
    "Settings": "hybrid_es.settings",
    "TemplateConflictError": "hybrid_es.errors",
    "TraceNotFoundError": "hybrid_es.errors",
    "UnknownTenantError": "hybrid_es.errors",
    "VersionConflictError": "hybrid_es.errors",
    "authorize": "hybrid_es.retrieval.policy",
    "connect": "hybrid_es.cluster.engine",
    "hybrid_linear": "hybrid_es.retrieval.fusion",
    "ingest_path": "hybrid_es.ingest.run",
    "linear": "hybrid_es.retrieval.fusion",
    "make_client": "hybrid_es.cluster.client",
    "policy_filter": "hybrid_es.retrieval.policy",
    "rrf": "hybrid_es.retrieval.fusion",
}
"""Each public name and the module that defines it."""

__all__ = [
    "AuthenticationError",
    "AuthorizationDecision",
    "BadQueryError",
    "BulkIndexError",
    "CapabilityMissingError",
    "ConfigurationError",
    "Document",
    "Engine",
    "EngineError",
    "EngineUnavailableError",
    "FilterError",
    "Hit",
    "HybridEs",
    "HybridEsError",
    "HybridSearcher",
    "IndexLayout",
    "IndexMissingError",
    "IndexSource",
    "IngestError",
    "Ingestor",
    "ManifestConflictError",
    "ModelError",
    "PacketError",
    "PacketNotFoundError",
    "PacketService",
    "PacketStore",
    "PolicyViolationError",
    "Principal",
    "RequestScope",
    "RetrievalParams",
    "SearchRequest",
    "SearchResponse",
    "SearchTimeoutError",
    "Settings",
    "TemplateConflictError",
    "TraceNotFoundError",
    "UnknownTenantError",
    "VersionConflictError",
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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hybrid_es' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


if TYPE_CHECKING:  # what type checkers and IDEs see (the same names, imported eagerly)
    from hybrid_es.cluster.client import make_client
    from hybrid_es.cluster.engine import Engine, connect
    from hybrid_es.deployment import HybridEs
    from hybrid_es.errors import (
        AuthenticationError,
        BadQueryError,
        BulkIndexError,
        CapabilityMissingError,
        ConfigurationError,
        EngineError,
        EngineUnavailableError,
        FilterError,
        HybridEsError,
        IndexMissingError,
        IngestError,
        ManifestConflictError,
        ModelError,
        PacketError,
        PacketNotFoundError,
        PolicyViolationError,
        SearchTimeoutError,
        TemplateConflictError,
        TraceNotFoundError,
        UnknownTenantError,
        VersionConflictError,
    )
    from hybrid_es.ingest.documents import Document
    from hybrid_es.ingest.indexer import Ingestor
    from hybrid_es.ingest.run import ingest_path
    from hybrid_es.ingest.sync import IndexSource
    from hybrid_es.models import (
        AuthorizationDecision,
        Hit,
        Principal,
        RequestScope,
        SearchRequest,
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
