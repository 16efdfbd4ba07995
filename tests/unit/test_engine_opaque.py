"""``engine.with_opaque_id``: a search's trace id goes out as ``X-Opaque-Id`` without building a
whole elasticsearch-py client per request (``tests/integration/test_connection.py`` checks that
the cluster sees it)."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from hybrid_es.cluster.engine import with_opaque_id


def client() -> Elasticsearch:
    return Elasticsearch("http://127.0.0.1:9", headers={"user-agent": "hybrid-es/test"})


def test_a_top_level_call_gets_a_copy_with_the_header() -> None:
    raw = client()
    tagged = with_opaque_id(raw, "trace-1", "msearch")
    assert type(tagged) is type(raw) and tagged is not raw
    assert tagged._headers["x-opaque-id"] == "trace-1"
    assert "x-opaque-id" not in raw._headers  # the shared client is left as it was
    assert tagged.transport is raw.transport  # the same connections
    # As ``options`` would give it, less the namespaces built again.
    assert dict(tagged._headers) == dict(raw.options(opaque_id="trace-1")._headers)


def test_a_namespaced_call_goes_through_options() -> None:
    raw = client()
    tagged = with_opaque_id(raw, "trace-2", "indices.refresh")
    assert tagged.indices._client is tagged  # the namespace sends through the tagged client
    assert tagged._headers["x-opaque-id"] == "trace-2"


def test_a_client_without_headers_gets_options() -> None:
    class Plain:
        def options(self, *, opaque_id: str) -> str:
            return f"options({opaque_id})"

    assert with_opaque_id(Plain(), "t", "search") == "options(t)"
