"""Connecting, before there is an engine: which server answers ``GET /`` (Elasticsearch or
OpenSearch, and its version), the missing-credentials error when it wants some and none are
configured, and the opensearch-py client built from the same settings (elasticsearch-py refuses
OpenSearch servers), with the elasticsearch-py option names it is given spelled its way.
``cluster.engine.connect`` puts these together into an engine.

``GET /`` is sent through the client's transport, below elasticsearch-py's API layer, and its
answer is read as data, whatever its status: through the API, a healthy cluster's answer would
be an exception inside the client's OpenTelemetry span, so an error span on every connect (an
OpenSearch node's 200 lacks Elasticsearch's product header; Elasticsearch's integration-test
distribution serves no ``GET /`` and answers 405; a user without ``monitor`` gets 403, which
still names the product). The probe makes no span.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from hybrid_es.cluster.client import build_client, opensearch_client_kwargs
from hybrid_es.cluster.versions import client_mismatch, client_version, server_version_plain
from hybrid_es.errors import (
    AuthenticationError,
    ConfigurationError,
    EngineError,
    from_error_body,
    missing_credentials,
    translate_es_error,
)
from hybrid_es.settings import Settings

Flavor = Literal["elasticsearch", "opensearch"]
"""Which engine a cluster is: the two the product speaks to."""


def identify(es: Any, settings: Settings, overrides: dict[str, Any]) -> tuple[Flavor, str]:
    """The flavour and version of the server behind ``es`` (an elasticsearch-py client built
    from ``settings`` and ``overrides``). A 401 when no credentials are configured or given is
    ConfigurationError naming the variables; see ``cluster.engine.connect`` for the rest."""
    url = settings.redacted_url()
    try:
        return _identify(es, url)
    except AuthenticationError as exc:
        given = any(overrides.get(k) for k in ("api_key", "basic_auth", "bearer_auth"))
        if exc.status == 401 and not (settings.has_credentials() or given):
            raise missing_credentials(url, username=settings.username) from None
        raise


def _identify(es: Any, url: str) -> tuple[Flavor, str]:
    try:
        status, headers, body = _ask_root(es)
    except Exception as exc:  # no answer: unreachable, TLS, timeout, a body that is not JSON
        raise translate_es_error(exc, url=url, what="connecting") from exc
    if status == 401:  # no or wrong credentials, whoever answered
        raise from_error_body(status, body, url=url, what="connecting")
    if headers.get("x-elastic-product") == "Elasticsearch":
        if 200 <= status < 300:
            number = body.get("version", {}).get("number") if isinstance(body, dict) else None
            return "elasticsearch", str(number or "unknown")
        if status == 400 and "media_type_header_exception" in str(body):
            # elasticsearch-py N sends "compatible-with=N", which a server older than N
            # refuses on every request: say so now, with both versions and the fix.
            raise client_mismatch(server_version_plain(es), url)
        return "elasticsearch", "unknown"  # refused (403, or 405 where no GET / is served)
    version = body.get("version", {}) if isinstance(body, dict) else {}
    if isinstance(version, dict) and version.get("distribution") == "opensearch":
        return "opensearch", str(version.get("number", "unknown"))
    if status == 403 and "no permissions for [" in str(body):  # the security plugin's refusal
        return "opensearch", "unknown"
    raise EngineError(
        f"the server at {url} is neither Elasticsearch nor OpenSearch (GET / answered HTTP "
        f"{status}: {str(body)[:120]})",
        hint="check HYBRID_ES_URL",
        status=status,
    )


def _ask_root(es: Any) -> tuple[int, Mapping[str, str], Any]:
    """``GET /`` through ``es``'s transport, as elasticsearch-py's API would send it (the
    client's headers, its ``compatible-with`` accept header, timeout and retries): the status,
    headers and body of the answer, whatever the status. Raises the transport's error when
    there is no answer."""
    from elastic_transport import HttpHeaders

    headers = HttpHeaders(es._headers)  # auth, user-agent and any configured header
    major = client_version().split(".")[0]
    headers["accept"] = f"application/vnd.elasticsearch+json; compatible-with={major}"
    # The client's per-request options (DEFAULT where it was given none: the transport's).
    options = {
        name: getattr(es, f"_{name}")
        for name in ("request_timeout", "max_retries", "retry_on_timeout", "retry_on_status")
        if hasattr(es, f"_{name}")
    }
    resp = es.transport.perform_request("GET", "/", headers=headers, **options)
    return resp.meta.status, resp.meta.headers, resp.body


class _QuietNotFound(logging.Filter):
    """opensearch-py logs a WARNING for every 4xx. A GET or HEAD that finds nothing is an answer
    here (an absent packet, corpus state or template), and so is a reader's refused mapping read
    (the searcher then checks the model on a chunk): neither is a problem to log."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if not msg.startswith(("GET ", "HEAD ")):
            return True
        return "[status:404 " not in msg and not ("/_mapping " in msg and "[status:403 " in msg)


def opensearch_client(settings: Settings, **overrides: Any) -> Any:
    """The opensearch-py client for ``settings`` (``overrides`` in opensearch-py's spelling: see
    :func:`os_overrides`); ConfigurationError when opensearch-py is not installed."""
    try:
        from opensearchpy import OpenSearch
    except ImportError as exc:
        raise ConfigurationError(
            f"the cluster at {settings.redacted_url()} is OpenSearch, and talking to it needs "
            "opensearch-py",
            hint="pip install '.[opensearch]'",
        ) from exc
    kwargs = {**opensearch_client_kwargs(settings), **overrides}
    client = build_client(OpenSearch, kwargs, settings, "OpenSearch")
    client._hybrid_es_kwargs = kwargs
    logger = logging.getLogger("opensearch")
    if not any(isinstance(f, _QuietNotFound) for f in logger.filters):
        logger.addFilter(_QuietNotFound())
    return client


def os_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """elasticsearch-py option names as opensearch-py spells them."""
    out = dict(overrides)
    if "request_timeout" in out:
        out["timeout"] = out.pop("request_timeout")
    if "basic_auth" in out:
        out["http_auth"] = out.pop("basic_auth")
    return out
