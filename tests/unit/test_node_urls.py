"""Several node URLs in HYBRID_ES_URL: each checked, passed to both clients as a pool, and a node
that cannot be reached costs a retry on the next one, not an error. One URL behaves as before."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hybrid_es.cluster.client import es_client_kwargs, make_client, opensearch_client_kwargs
from hybrid_es.cluster.engine import connect
from hybrid_es.errors import ConfigurationError, EngineUnavailableError
from hybrid_es.settings import Settings

THREE = "http://127.0.0.1:9271,http://127.0.0.1:9272,http://127.0.0.1:9273"


def test_one_url_is_passed_on_as_before():
    s = Settings(url="http://h:9200")
    assert s.node_urls() == ("http://h:9200",) and s.endpoint() == s.redacted_url() == s.url
    assert es_client_kwargs(s)["hosts"] == "http://h:9200"  # a string, as it always was
    assert opensearch_client_kwargs(s)["hosts"] == ["http://h:9200"]


def test_one_bad_url_is_refused_by_the_client_in_the_same_words_as_before():
    s = Settings(url="localhost:9200")  # no scheme: not checked by the settings, as before
    with pytest.raises(ConfigurationError) as info:
        make_client(s)
    assert info.value.message.startswith("the Elasticsearch client refused its options: URL must")


def test_several_urls_become_a_pool_of_nodes_on_both_clients(monkeypatch):
    monkeypatch.setenv(
        "HYBRID_ES_URL", " http://127.0.0.1:9271 , http://127.0.0.1:9272,http://127.0.0.1:9273 "
    )
    s = Settings()
    assert s.url == THREE
    assert s.node_urls() == tuple(THREE.split(","))
    assert s.endpoint() == "http://127.0.0.1:9271"
    assert s.redacted_url() == THREE.replace(",", ", ")
    kwargs = es_client_kwargs(s)
    assert kwargs["hosts"] == THREE.split(",")
    assert (kwargs["max_retries"], kwargs["retry_on_timeout"]) == (3, False)
    assert opensearch_client_kwargs(s)["hosts"] == THREE.split(",")
    pool = make_client(s).transport.node_pool.all()
    assert sorted(n.base_url for n in pool) == THREE.split(",")


def test_a_list_in_code_means_the_same():
    assert Settings(url=THREE.split(",")).url == THREE
    assert Settings(url=("http://a:9200",)).node_urls() == ("http://a:9200",)


def test_https_nodes_all_get_the_tls_options():
    s = Settings(url="https://a:9200,https://b:9200", verify_certs=False)
    assert s.uses_tls()
    assert es_client_kwargs(s)["verify_certs"] is False


def test_credentials_in_every_url_are_never_shown():
    s = Settings(url="http://u:hunter2@a:9200,http://u:hunter2@b:9200")
    assert s.has_credentials()
    assert "hunter2" not in s.redacted_url() and "hunter2" not in repr(s)
    assert s.redacted_url() == "http://a:9200, http://b:9200"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://a:9200,", "node URL 2 of 2 is empty"),
        ("http://a:9200,,http://b:9200", "node URL 2 of 3 is empty"),
        ("http://a:9200,ftp://b:21", "node URL 2 ftp://b:21 is not an http:// or https:// URL"),
        ("http://a:9200,b:9200", "node URL 2 (not a URL) is not an http:// or https://"),
        ("http://a:9200,http://:9200", "node URL 2 http://:9200 is not an http://"),
        ("http://a:9200,http://b:99999", "node URL 2 (http://b) has a port that is not a number"),
        ("http://a:9200,http://b:port", "node URL 2 (http://b) has a port that is not a number"),
        ("http://a:9200,https://b:9200", "mixes http:// and https:// nodes"),
        ("http://a:9200,http://A:9200/", "names http://a:9200/ twice (node URLs 1 and 2)"),
        ("http://u:hunter2@a:9200,http://b:9200", "node URL 2 carries another user:password"),
        ("http://u:hunter2@a:9200,http://u:other@b:9200", "node URL 2 carries another"),
    ],
)
def test_each_node_url_is_checked_and_named_by_its_number(url, says, monkeypatch):
    monkeypatch.setenv("HYBRID_ES_URL", url)
    with pytest.raises(ConfigurationError) as info:
        Settings()
    assert "HYBRID_ES_URL" in info.value.message and says in info.value.message, info.value
    assert "hunter2" not in str(info.value)


# -- failover, against a stand-in node on loopback ---------------------------------------------


class _Node(BaseHTTPRequestHandler):
    """Answers every GET as an Elasticsearch 9 node would answer ``GET /``."""

    def do_GET(self) -> None:
        body = json.dumps({"version": {"number": "9.5.4"}, "tagline": "You Know, for Search"})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("x-elastic-product", "Elasticsearch")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def live_node() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Node)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def dead_node() -> str:
    """A loopback port where nothing listens (a node killed: connections refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_node_that_cannot_be_reached_costs_a_retry_on_the_next_not_an_error(live_node, dead_node):
    engine = connect(Settings(url=f"{dead_node},{live_node}", request_timeout=5))
    assert engine.version == "9.5.4"
    for _ in range(6):  # round robin over the pool: the dead node is tried, then set aside
        assert engine.request("GET", "/", what="probing")["version"]["number"] == "9.5.4"
    dead = [n for n in engine.raw.transport.node_pool.all() if n.base_url == dead_node]
    assert dead and engine.raw.transport.node_pool._dead_consecutive_failures.get(dead[0].config)


def test_one_unreachable_url_is_the_same_error_as_before(dead_node):
    with pytest.raises(EngineUnavailableError) as info:
        connect(Settings(url=dead_node, request_timeout=5, max_retries=0))
    assert info.value.message == f"cannot reach Elasticsearch at {dead_node}"


def test_every_node_unreachable_names_them_all(dead_node):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        other = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(EngineUnavailableError) as info:
        connect(Settings(url=f"{dead_node},{other}", request_timeout=5, max_retries=1))
    assert info.value.message == f"cannot reach Elasticsearch at {dead_node}, {other}"
