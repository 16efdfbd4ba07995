"""What every request says about itself, on the engine under test (issue 14, item 1): the
user-agent ``hybrid-es/<version>``, and an ``X-Opaque-Id`` equal to the search's trace id, so that
the cluster's slow log, tasks API and HTTP client stats point back to our traces; and a cluster
that demands credentials when none are configured.

The id is checked where the cluster shows it: both engines copy a request's ``X-Opaque-Id`` into
their response headers, read here at each client's HTTP layer; Elasticsearch's HTTP client stats
(``GET _nodes/stats/http``) show the user-agent and the opaque id of a connection's first request.
"""

from __future__ import annotations

import hashlib
import ssl
import uuid
from datetime import date
from typing import Any
from urllib.parse import urlsplit

import pytest
import trustme

from hybrid_es.cluster.client import make_client, user_agent
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import (
    ElasticsearchEngine,
    Engine,
    OpenSearchEngine,
    _opensearch_client,
    connect,
)
from hybrid_es.errors import ConfigurationError, HybridEsError, IndexMissingError
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.traces.hooks import search_hook
from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents
from tests.constants import AGENT, NOW

pytestmark = pytest.mark.integration

STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))

Seen = list[dict[str, Any]]
"""One entry per request: ``path``, ``sent`` (its headers) and ``echoed`` (the response's
X-Opaque-Id)."""


def echo_engine(es: Engine, settings: Settings) -> tuple[Engine, Seen]:
    """An engine for ``settings`` whose HTTP layer records each request's headers and the
    X-Opaque-Id the cluster answered with."""
    seen: Seen = []
    if es.flavor == "opensearch":
        from opensearchpy import Urllib3HttpConnection

        class Recording(Urllib3HttpConnection):  # type: ignore[misc]
            def perform_request(self, method, url, params=None, body=None, *a, **kw):  # type: ignore[no-untyped-def]
                status, answered, data = super().perform_request(
                    method, url, params, body, *a, **kw
                )
                headers = kw.get("headers") or (a[2] if len(a) > 2 else None) or {}
                sent = {k.lower(): v for k, v in {**self.headers, **headers}.items()}
                echoed = {k.lower(): v for k, v in answered.items()}.get("x-opaque-id")
                seen.append({"path": url, "sent": sent, "echoed": echoed})
                return status, answered, data

        raw = _opensearch_client(settings, connection_class=Recording)
        return OpenSearchEngine(raw, url=es.url, version=es.version), seen

    from elastic_transport import Urllib3HttpNode

    class RecordingNode(Urllib3HttpNode):
        def perform_request(self, method, target, body=None, headers=None, **kw):  # type: ignore[no-untyped-def]
            resp = super().perform_request(method, target, body=body, headers=headers, **kw)
            sent = {k.lower(): v for k, v in {**self._headers, **(headers or {})}.items()}
            echoed = resp.meta.headers.get("x-opaque-id")
            seen.append({"path": target, "sent": sent, "echoed": echoed})
            return resp

    raw = make_client(settings, node_class=RecordingNode)
    return ElasticsearchEngine(raw, url=es.url, version=es.version), seen


class _Docs:
    """Stands in for the trace writer (not for the cluster): keeps what the hooks hand it."""

    def __init__(self) -> None:
        self.docs: list[dict[str, Any]] = []

    def submit(self, doc: dict[str, Any]) -> None:
        self.docs.append(doc)

    def record_error(self, exc: BaseException) -> None:
        raise AssertionError(f"the hook failed to build a trace: {exc}")

    def count_refused(self, kind: str) -> None:
        raise AssertionError(kind)


def _trace_id(doc: dict[str, Any]) -> str:
    return str(doc.get("trace", {}).get("id") or doc.get("trace_id"))


@pytest.fixture
def corpus(es, fresh_indices):  # type: ignore[no-untyped-def]
    ing = Ingestor(
        es,
        HashEmbedder(),
        index=fresh_indices["chunks"],
        corpus_state=CorpusState(es, fresh_indices["corpus_state"]),
    )
    ingest_as_owners(ing, travel_documents("D1-current-contract", "D2-accessibility-note"), now=NOW)
    return fresh_indices


def test_a_search_sends_its_trace_id_as_x_opaque_id(es, settings, corpus):
    engine, seen = echo_engine(es, settings)
    written = _Docs()
    tracer = search_hook(written)  # type: ignore[arg-type]
    searcher = HybridSearcher(
        engine,
        HashEmbedder(),
        index=corpus["chunks"],
        corpus_state_index=corpus["corpus_state"],
        on_response=tracer,
        on_error=tracer.on_error,
    )
    first = searcher.search("KYO-H12 April rate", AGENT, STAY, now=NOW)
    second = searcher.search("KYO-H12 April rate", AGENT, STAY, now=NOW)

    assert len(first.trace_id) == 32 and first.trace_id != second.trace_id
    msearch = [s for s in seen if s["path"].startswith("/_msearch")]
    assert len(msearch) == 4  # per search: the legs, then the read of the head's records
    # The cluster echoes what it received: the id arrived, on each of the search's requests.
    assert [s["echoed"] for s in msearch] == [first.trace_id] * 2 + [second.trace_id] * 2
    # The trace document is the same trace: one id from the request to the trace.
    assert [_trace_id(d) for d in written.docs] == [first.trace_id, second.trace_id]
    assert all(s["sent"]["user-agent"] == user_agent(_client(es)) for s in seen)


def test_a_failed_search_keeps_the_trace_id_it_sent(es, settings, corpus):
    engine, seen = echo_engine(es, settings)
    written = _Docs()
    tracer = search_hook(written)  # type: ignore[arg-type]
    searcher = HybridSearcher(
        engine,
        HashEmbedder(),
        index=corpus["chunks"],
        corpus_state_index=corpus["corpus_state"],
        on_error=tracer.on_error,
    )
    searcher.search("rate", AGENT, now=NOW)  # checks the model once
    es.delete_index(corpus["chunks"])  # the next search's _msearch fails on the cluster
    with pytest.raises(IndexMissingError) as info:
        searcher.search("rate", AGENT, now=NOW)
    failed = info.value.trace_id
    assert failed and len(failed) == 32
    assert [s["echoed"] for s in seen if s["path"].startswith("/_msearch")][-1] == failed
    (doc,) = written.docs
    assert _trace_id(doc) == failed


@pytest.mark.engine("elasticsearch", reason="OpenSearch keeps no HTTP client stats")
def test_the_cluster_sees_the_user_agent_and_the_opaque_id(es, settings):
    tag = f"hybrid-es-test-{uuid.uuid4().hex}"
    fresh = ElasticsearchEngine(make_client(settings), url=es.url)  # a connection of its own
    fresh.request("GET", "/_cluster/health", opaque_id=tag)
    stats = es.request("GET", "/_nodes/stats/http", params={"filter_path": "nodes.*.http.clients"})
    clients = [c for n in stats["nodes"].values() for c in n["http"]["clients"]]
    (ours,) = [c for c in clients if c.get("x_opaque_id") == tag]
    assert ours["agent"] == user_agent("elasticsearch")
    assert ours["agent"].startswith("hybrid-es/")


def test_every_request_sends_the_user_agent(es, settings):
    # Both engines: what goes on the wire, read at the HTTP layer (OpenSearch shows no client
    # stats to check it on the server side).
    engine, seen = echo_engine(es, settings)
    engine.request("GET", "/_cluster/health", opaque_id="ua-check")
    (request,) = seen
    assert request["sent"]["user-agent"].startswith("hybrid-es/")
    assert request["echoed"] == "ua-check"


def test_no_credentials_is_one_error_naming_the_variables(es, settings):
    bare = settings.model_copy(
        update={"username": None, "password": None, "api_key": None, "bearer_auth": None}
    )
    with pytest.raises(ConfigurationError) as info:
        connect(bare)
    text = str(info.value)
    assert "demands credentials" in text
    for name in ("HYBRID_ES_API_KEY", "HYBRID_ES_USERNAME", "HYBRID_ES_PASSWORD"):
        assert name in text
    assert "HYBRID_ES_BEARER_AUTH" in text and "HYBRID_ES_CLOUD_ID" in text


def test_a_user_without_a_password_is_named(es, settings):
    half = settings.model_copy(update={"password": None, "api_key": None, "bearer_auth": None})
    with pytest.raises(HybridEsError) as info:
        connect(half)
    assert "HYBRID_ES_PASSWORD is not" in str(info.value)


def _client(es: Engine) -> str:
    return "opensearch-py" if es.flavor == "opensearch" else "elasticsearch"


@pytest.mark.engine("opensearch", reason="opensearch-py's TLS options, on the OpenSearch node")
def test_opensearch_pins_the_node_certificate_and_names_a_wrong_ca(es, settings, tmp_path):
    parts = urlsplit(settings.url)
    leaf = ssl.get_server_certificate((parts.hostname, parts.port))
    fingerprint = hashlib.sha256(ssl.PEM_cert_to_DER_cert(leaf)).hexdigest()
    pinned = settings.model_copy(update={"ca_certs": None, "ssl_assert_fingerprint": fingerprint})
    engine = OpenSearchEngine(_opensearch_client(pinned), url=es.url)
    assert engine.request("GET", "/")["version"]["distribution"] == "opensearch"

    wrong_pin = settings.model_copy(update={"ca_certs": None, "ssl_assert_fingerprint": "ab" * 32})
    with pytest.raises(ConfigurationError) as info:
        OpenSearchEngine(_opensearch_client(wrong_pin), url=es.url).request("GET", "/")
    assert "HYBRID_ES_SSL_ASSERT_FINGERPRINT" in info.value.message

    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    wrong_ca = settings.model_copy(update={"ca_certs": other})
    with pytest.raises(ConfigurationError) as info:
        OpenSearchEngine(_opensearch_client(wrong_ca), url=es.url).request("GET", "/")
    assert "HYBRID_ES_CA_CERTS" in str(info.value)
