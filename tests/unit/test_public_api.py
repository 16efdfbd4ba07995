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


def test_all_is_pinned():
    # Adding or removing a public name must be a deliberate edit of this list too.
    assert hybrid_es.__all__ == EXPECTED


def test_all_is_sorted():
    assert sorted(hybrid_es.__all__) == hybrid_es.__all__


@pytest.mark.parametrize("name", EXPECTED)
def test_every_public_name_resolves(name):
    assert getattr(hybrid_es, name) is not None


def test_star_import_exports_exactly_all():
    namespace: dict[str, object] = {}
    exec("from hybrid_es import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(EXPECTED)


def test_errors_share_the_base_class():
    for name in EXPECTED:
        obj = getattr(hybrid_es, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, hybrid_es.HybridEsError), name
