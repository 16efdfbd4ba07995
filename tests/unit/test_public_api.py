"""The public surface of ``hybrid_es``: a change here is a change for every user."""

from __future__ import annotations

import pytest

import hybrid_es

EXPECTED = [
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


def test_all_is_pinned():
    # Adding or removing a public name must be a deliberate edit of this list too. Issue 12 added
    # what a library user could not import from the package before: the searcher, the packet
    # service and its store, the ingest entry points, the index layout and the client factory.
    assert hybrid_es.__all__ == EXPECTED


def test_all_is_sorted():
    assert sorted(hybrid_es.__all__) == hybrid_es.__all__


HOMES = {
    "AuthorizationDecision": "hybrid_es.models",
    "BadQueryError": "hybrid_es.errors",
    "BulkIndexError": "hybrid_es.errors",
    "CapabilityMissingError": "hybrid_es.errors",
    "ConfigurationError": "hybrid_es.errors",
    "Engine": "hybrid_es.cluster.engine",
    "EngineError": "hybrid_es.errors",
    "EngineUnavailableError": "hybrid_es.errors",
    "Hit": "hybrid_es.models",
    "HybridEsError": "hybrid_es.errors",
    "HybridSearcher": "hybrid_es.retrieval.searcher",
    "IndexLayout": "hybrid_es.tenancy",
    "Ingestor": "hybrid_es.ingest.indexer",
    "PacketService": "hybrid_es.packets.service",
    "PacketStore": "hybrid_es.packets.store",
    "PolicyViolationError": "hybrid_es.errors",
    "Principal": "hybrid_es.models",
    "RequestScope": "hybrid_es.models",
    "RetrievalParams": "hybrid_es.retrieval.queries",
    "SearchResponse": "hybrid_es.models",
    "Settings": "hybrid_es.settings",
    "TemplateConflictError": "hybrid_es.errors",
    "authorize": "hybrid_es.retrieval.policy",
    "connect": "hybrid_es.cluster.engine",
    "hybrid_linear": "hybrid_es.retrieval.fusion",
    "ingest_path": "hybrid_es.ingest.run",
    "linear": "hybrid_es.retrieval.fusion",
    "make_client": "hybrid_es.cluster.client",
    "policy_filter": "hybrid_es.retrieval.policy",
    "rrf": "hybrid_es.retrieval.fusion",
}


@pytest.mark.parametrize("name", sorted(HOMES))
def test_every_public_name_is_the_object_its_home_module_defines(name):
    import importlib

    home = importlib.import_module(HOMES[name])
    obj = getattr(hybrid_es, name)
    assert obj is getattr(home, name)
    assert getattr(obj, "__module__", None) == HOMES[name]  # defined there, not re-exported


def test_the_version_is_the_installed_distributions():
    from importlib.metadata import version

    assert hybrid_es.__version__ == version("hybrid-es")


def test_every_public_name_has_a_home():
    assert sorted([*HOMES, "__version__"]) == EXPECTED


def test_star_import_exports_exactly_all():
    namespace: dict[str, object] = {}
    exec("from hybrid_es import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(EXPECTED)


def test_errors_share_the_base_class():
    for name in EXPECTED:
        obj = getattr(hybrid_es, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, hybrid_es.HybridEsError), name
