"""Connecting, before there is an engine: which server answers ``GET /`` (Elasticsearch or
OpenSearch, and its version), the missing-credentials error when it wants some and none are
configured, and the opensearch-py client built from the same settings (elasticsearch-py refuses
OpenSearch servers), with the elasticsearch-py option names it is given spelled its way.
``cluster.engine.connect`` puts these together into an engine.
"""

from __future__ import annotations

import logging
from typing import Any

from hybrid_es.cluster.calls import Flavor
from hybrid_es.cluster.client import build_client, opensearch_client_kwargs
from hybrid_es.cluster.versions import client_mismatch, server_version_plain
from hybrid_es.errors import (
    AuthenticationError,
    ConfigurationError,
    EngineError,
    missing_credentials,
    translate_es_error,
)
from hybrid_es.settings import Settings


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
    from elasticsearch import ApiError, UnsupportedProductError

    try:
        resp = es.perform_request("GET", "/", headers={"accept": "application/json"})
        return "elasticsearch", str(resp.body.get("version", {}).get("number", "unknown"))
    except UnsupportedProductError as exc:  # a 2xx without the product header
        status, body = 200, exc.body
    except ApiError as exc:
        if exc.meta.status == 401:  # no or wrong credentials, whoever answered
            raise translate_es_error(exc, url=url, what="connecting") from exc
        if exc.meta.headers.get("x-elastic-product") == "Elasticsearch":
            if exc.meta.status == 400 and "media_type_header_exception" in str(exc):
                # elasticsearch-py N sends "compatible-with=N", which a server older than N
                # refuses on every request: say so now, with both versions and the fix.
                raise client_mismatch(server_version_plain(es), url) from exc
            return "elasticsearch", "unknown"  # refused, but by Elasticsearch
        status, body = exc.meta.status, exc.body
    except Exception as exc:
        raise translate_es_error(exc, url=url, what="connecting") from exc
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
