"""The public surface of ``hybrid_es``: a change here is a change for every user."""

from __future__ import annotations

import pytest

import hybrid_es

EXPECTED = [
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


def test_all_is_pinned():
    # Adding or removing a public name must be a deliberate edit of this list too. Issue 12 added
    # what a library user could not import from the package before: the searcher, the packet
    # service and its store, the ingest entry points, the index layout and the client factory.
    # Issue 39 added the front door (HybridEs) and the one search request value (SearchRequest).
    # Issue 38 added an existing index as a source beside the file loaders (IndexSource).
    assert hybrid_es.__all__ == EXPECTED


def test_all_is_sorted():
    assert sorted(hybrid_es.__all__) == hybrid_es.__all__


HOMES = {
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


def test_every_error_the_package_defines_is_public():
    """Issue 27: 10 of the 20 error classes that public methods raise were missing."""
    import hybrid_es.errors as errors

    defined = {
        name
        for name, obj in vars(errors).items()
        if isinstance(obj, type) and issubclass(obj, errors.HybridEsError)
    }
    assert defined <= set(hybrid_es.__all__), sorted(defined - set(hybrid_es.__all__))


def _examples() -> list[Exception]:
    import hybrid_es.errors as e

    out: list[Exception] = [
        e.TemplateConflictError("differs", diffs={"t": "- a\n+ b"}, hint="use --force"),
        e.BulkIndexError("2 failed", failed=[{"id": "x", "reason": "mapper"}]),
        e.IngestError("bad JSON", line=7, hint="fix the line"),
        e.AuthenticationError("no", hint="grant it", status=403),
    ]
    for name in sorted(dir(e)):
        cls = getattr(e, name)
        known = {type(x) for x in out}
        if isinstance(cls, type) and issubclass(cls, e.HybridEsError) and cls not in known:
            try:
                out.append(cls("what went wrong", hint="what to do"))
            except TypeError:
                out.append(cls("what went wrong"))
    return out


@pytest.mark.parametrize("err", _examples(), ids=lambda x: type(x).__name__)
def test_every_error_survives_pickling_with_its_data(err):
    """BulkIndexError and TemplateConflictError did not (their required keyword fields)."""
    import pickle

    err.trace_id = "t-1"  # type: ignore[attr-defined]
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert vars(back) == vars(err) and str(back) == str(err) and back.args == err.args


def test_import_is_lazy_and_cheap():
    """``import hybrid_es`` loads no client, model or ingest code (issue 24: it took 1.3-1.6 s
    because it imported ingest, packets and the searcher eagerly)."""
    import subprocess
    import sys

    probe = (
        "import sys, hybrid_es; "
        "heavy = [m for m in ('elasticsearch', 'pydantic', 'numpy', 'hybrid_es.ingest', "
        "'hybrid_es.retrieval', 'torch') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
