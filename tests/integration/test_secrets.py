"""Secrets never appear in logs, traces or error messages (issue 7, item 12).

Each case drives a real failure (wrong password, wrong API key, credentials inside the URL of an
unreachable or a reachable cluster) through the library and through the CLI with ``--debug`` off,
captures everything a person or a log shipper could see (the exception's text, hint and repr, the
whole chained traceback, every log record down to DEBUG from elasticsearch, elastic_transport,
opensearch-py and urllib3, the trace document of the failure, the trace writer's counters), and
looks for the secret. The live cluster is the engine under test (Elasticsearch or OpenSearch), with
the environment's scheme, user and CA.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import traceback
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.client import make_client
from hybrid_es.cluster.engine import (
    Engine,
    OpenSearchEngine,
    _opensearch_client,
    as_engine,
    connect,
)
from hybrid_es.errors import (
    AuthenticationError,
    EngineUnavailableError,
    HybridEsError,
)
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.traces.documents import search_error_trace
from hybrid_es.traces.hooks import search_hook
from hybrid_es.traces.writer import TraceWriter
from tests.constants import AGENT, NOW

pytestmark = pytest.mark.integration

SECRET = f"S3cret-{uuid.uuid4().hex[:12]}"
"""A fresh value per run, so nothing can match it by accident."""
_ENV_URL = urlsplit(Settings().url)
SCHEME = _ENV_URL.scheme
LIVE = _ENV_URL.netloc.rpartition("@")[2]
USER = Settings().username or "elastic"
DEAD = "127.0.0.1:1"

CASES = {
    "wrong password": {"password": SECRET},
    "wrong api key": {"api_key": SECRET, "username": None, "password": None},
    "wrong bearer token": {"bearer_auth": SECRET, "username": None, "password": None},
    "password in the url of a live cluster": {
        "url": f"{SCHEME}://{USER}:{SECRET}@{LIVE}",
        "username": None,
        "password": None,
    },
    "password in the url of an unreachable cluster": {"url": f"{SCHEME}://{USER}:{SECRET}@{DEAD}"},
}


@pytest.fixture
def all_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG)
    loggers = ("elasticsearch", "elastic_transport", "opensearch", "opensearchpy.trace", "urllib3")
    for name in (*loggers, "hybrid_es"):
        caplog.set_level(logging.DEBUG, logger=name)
    yield caplog


def _everything(exc: BaseException) -> str:
    parts = [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
    if isinstance(exc, HybridEsError):
        parts += [exc.message, exc.hint or ""]
    return "\n".join(parts)


def _unconnected(s: Settings, flavor: str) -> Engine:
    """An engine of the flavour under test for ``s``, built without a request (``connect`` asks
    the cluster first, and these credentials fail there)."""
    if flavor == "opensearch":
        return OpenSearchEngine(_opensearch_client(s), url=s.redacted_url())
    return as_engine(make_client(s), url=s.redacted_url())


@pytest.mark.parametrize("case", list(CASES))
def test_library_failures_never_show_the_secret(case, es, embedder, all_logs):
    s = Settings(**CASES[case], max_retries=1)
    engine = _unconnected(s, es.flavor)
    searcher = HybridSearcher(engine, embedder)
    writer = TraceWriter(engine, "hybrid-es-traces", flush_interval=0.05)
    tracer = search_hook(writer, query_text=True)
    seen: list[str] = []
    attempts = (
        lambda: probe(connect(s)),  # what a user's first call does
        lambda: probe(engine),
        lambda: searcher.search("KYO-H12 April rate", AGENT, now=NOW),
    )
    for attempt in attempts:
        with pytest.raises((AuthenticationError, EngineUnavailableError)) as info:
            attempt()
        seen.append(_everything(info.value))
        trace = search_error_trace(AGENT, query_hash="h", error=info.value, now=NOW)
        seen.append(json.dumps(trace))
        tracer.on_error(AGENT, "KYO-H12 April rate", info.value)  # written with the bad client
    stats = writer.close()
    # Refused by the cluster: counted, never traced; anything else cannot be written either.
    assert stats.written == 0 and stats.dropped + sum(stats.refused.values()) == len(attempts)
    seen += [repr(stats), all_logs.text]
    seen += [r.getMessage() for r in all_logs.records]
    assert all_logs.records  # the capture worked: the transport logged its requests
    leaks = [text for text in seen if SECRET in text]
    assert not leaks, leaks[0][:2000]


KEPT = ("HYBRID_ES_URL", "HYBRID_ES_USERNAME", "HYBRID_ES_CA_CERTS", "HYBRID_ES_VERIFY_CERTS")
"""Which cluster, as whom, trusting which CA: the engine under test; no other setting."""


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HYBRID_ES_") or k in KEPT}
    base.update({"COLUMNS": "200", "HYBRID_ES_MAX_RETRIES": "0"})
    return subprocess.run(
        [sys.executable, "-c", "from hybrid_es.cli import main; main()", *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


CLI_ENV = {
    "wrong password": {"HYBRID_ES_PASSWORD": SECRET},
    "wrong api key": {"HYBRID_ES_API_KEY": SECRET},
    "wrong bearer token": {"HYBRID_ES_BEARER_AUTH": SECRET},
    "password in the url of an unreachable cluster": {
        "HYBRID_ES_URL": f"{SCHEME}://{USER}:{SECRET}@{DEAD}"
    },
    "password in the url of a live cluster": {
        "HYBRID_ES_URL": f"{SCHEME}://{USER}:{SECRET}@{LIVE}",
        "HYBRID_ES_USERNAME": "",
        "HYBRID_ES_PASSWORD": "",
    },
}
EXIT = {
    "wrong password": 77,
    "wrong api key": 77,
    "wrong bearer token": 77,
    "password in the url of an unreachable cluster": 69,
    "password in the url of a live cluster": 77,
}
"""Each case's exit status (Elasticsearch's CLI codes: 77 permission denied, 69 unavailable)."""


@pytest.mark.parametrize("case", list(CLI_ENV))
@pytest.mark.parametrize("command", [["capabilities"], ["bootstrap", "--check"]])
def test_cli_errors_never_show_the_secret(case, command):
    out = _cli(*command, **CLI_ENV[case])
    assert out.returncode == EXIT[case], out.stdout + out.stderr  # a handled HybridEsError
    assert "error:" in out.stderr and "hint:" in out.stderr
    assert SECRET not in out.stdout + out.stderr
    assert "Traceback" not in out.stderr  # --debug is off


def test_cli_search_with_a_wrong_password_never_shows_it():
    # The full search path: settings, model load, client, first request.
    out = _cli("search", "KYO-H12 April rate", "--tenant", "demo-A", HYBRID_ES_PASSWORD=SECRET)
    assert out.returncode == 77, out.stdout + out.stderr  # permission denied
    assert "rejected the credentials" in out.stderr
    assert SECRET not in out.stdout + out.stderr


def test_a_trace_never_keeps_a_secret_from_a_foreign_exception():
    # An exception from outside the package may quote a URL or a header; the trace scrubs it.
    foreign = RuntimeError(
        f"POST http://elastic:{SECRET}@{LIVE}/_bulk failed; headers: "
        f"Authorization: ApiKey {SECRET}; config password={SECRET}"
    )
    doc = search_error_trace(AGENT, query_hash="h", error=foreign, now=NOW)
    assert SECRET not in json.dumps(doc)


# -- two leaks this suite found (kibana.py messages, Settings' repr), fixed since ----------------


def test_kibana_import_errors_never_show_the_secret(all_logs):
    from hybrid_es.cluster.kibana import import_saved_objects

    with pytest.raises(EngineUnavailableError) as info:
        import_saved_objects(f"http://kibana:{SECRET}@{DEAD}", Settings(password=SECRET))
    assert SECRET not in _everything(info.value) + all_logs.text


def test_settings_repr_never_shows_the_secret():
    s = Settings(url=f"http://elastic:{SECRET}@{LIVE}", password=SECRET, api_key=SECRET)
    assert SECRET not in repr(s) + str(s)


def test_a_secret_put_in_the_client_options_is_refused_without_showing_it():
    # HYBRID_ES_CLIENT_OPTIONS may not carry credentials; the refusal (and a JSON error) names
    # the variable and the option, never the value.
    for raw in (
        f'{{"api_key": "{SECRET}"}}',
        f'{{"headers": {{"Authorization": "{SECRET}"}}}}',
        f'{{"x": {SECRET}}}',
    ):
        out = _cli("capabilities", HYBRID_ES_CLIENT_OPTIONS=raw)
        assert out.returncode != 0 and "HYBRID_ES_CLIENT_OPTIONS" in out.stderr, out.stderr
        assert SECRET not in out.stdout + out.stderr
        assert "Traceback" not in out.stderr


def test_settings_repr_never_shows_a_bearer_token():
    s = Settings(bearer_auth=SECRET, url=f"http://{LIVE}")
    assert SECRET not in repr(s) + str(s)
