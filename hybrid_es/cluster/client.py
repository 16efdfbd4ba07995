"""Building the elasticsearch-py client from settings. Connects lazily: nothing here does I/O."""

from __future__ import annotations

from typing import Any

from elasticsearch import Elasticsearch

from hybrid_es.settings import Settings


def make_client(
    settings: Settings, *, api_key: str | None = None, **overrides: Any
) -> Elasticsearch:
    """An Elasticsearch client for ``settings``; ``api_key`` (a caller's key) wins over basic auth.

    Retries here cover connection-level failures only (elasticsearch-py retries on connection
    errors and 502/503/504); bulk 429s are handled by the bulk helper's back-off.
    """
    kwargs: dict[str, Any] = {
        "request_timeout": settings.request_timeout,
        "max_retries": settings.max_retries,
        "retry_on_timeout": False,
    }
    if settings.url.lower().startswith("https://"):  # TLS options mean nothing over http
        if settings.ca_certs:
            kwargs["ca_certs"] = str(settings.ca_certs)
        if not settings.verify_certs:
            kwargs["verify_certs"] = False
    key = api_key or (settings.api_key.get_secret_value() if settings.api_key else None)
    if key:
        kwargs["api_key"] = key
    elif settings.username and settings.password is not None:
        kwargs["basic_auth"] = (settings.username, settings.password.get_secret_value())
    kwargs.update(overrides)
    return Elasticsearch(settings.url, **kwargs)
