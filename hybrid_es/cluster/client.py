"""Building the clients from settings: the keyword arguments of elasticsearch-py and of
opensearch-py (pure functions: the same settings mean the same thing on both), and the
elasticsearch-py client itself. Connects lazily: nothing here does I/O beyond checking that a
CA file exists.

What each setting becomes::

    HYBRID_ES_*               elasticsearch-py           opensearch-py
    URL                       hosts                      hosts (each node URL of a list)
    CLOUD_ID                  cloud_id                   (refused: Elastic Cloud only)
    API_KEY                   api_key                    Authorization: ApiKey ...
    BEARER_AUTH               bearer_auth                Authorization: Bearer ...
    USERNAME, PASSWORD        basic_auth                 http_auth
    CA_CERTS                  ca_certs                   ca_certs
    SSL_ASSERT_FINGERPRINT    ssl_assert_fingerprint     ssl_assert_fingerprint (the leaf's)
    VERIFY_CERTS=false        verify_certs (+ WARNING)   verify_certs (+ WARNING)
    REQUEST_TIMEOUT           request_timeout            timeout
    CLIENT_OPTIONS            merged last                merged last

Credentials in that order: an API key wins over a bearer token, which wins over a user and
password. TLS options apply to ``https://`` only (an Elastic Cloud id is HTTPS).

Every request carries the user-agent ``hybrid-es/<version> (<client>/<version>)``.

The elasticsearch-py clients built here leave request bodies out of OpenTelemetry spans even
where ``OTEL_PYTHON_INSTRUMENTATION_ELASTICSEARCH_CAPTURE_SEARCH_QUERY=raw`` asks for them
(:class:`SpanSafeElasticsearch`): a search body holds the query text and the caller's policy
filter (user id, groups, tenant). opensearch-py makes no spans of its own.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

from elasticsearch import AsyncElasticsearch, Elasticsearch

from hybrid_es.errors import ConfigurationError
from hybrid_es.settings import Settings

log = logging.getLogger(__name__)

BODY_CAPTURE_VARIABLE = "OTEL_PYTHON_INSTRUMENTATION_ELASTICSEARCH_CAPTURE_SEARCH_QUERY"
"""elasticsearch-py's switch (``raw``) that puts search bodies in its spans (``db.query.text``);
read by every client it builds, ``.options()`` copies included. Overridden by the clients made
here."""


def _omit_bodies(client: Any) -> None:
    # elasticsearch-py reads the variable into its OpenTelemetry helper when a client is built,
    # and has no argument for it; the helper's own strategy is set instead. A span keeps the
    # endpoint, index and status; the body (query text, user id, groups) stays out.
    otel = getattr(client, "_otel", None)
    if otel is not None and getattr(otel, "body_strategy", "omit") != "omit":
        otel.body_strategy = "omit"
        _warn_body_capture_ignored()


@cache
def _warn_body_capture_ignored() -> None:
    log.warning(
        "%s=raw is ignored by hybrid-es's Elasticsearch clients: their search bodies hold the "
        "query text and the caller's user id and groups, which spans must not carry",
        BODY_CAPTURE_VARIABLE,
    )


class SpanSafeElasticsearch(Elasticsearch):
    """elasticsearch-py's client, whose OpenTelemetry spans never hold a request body
    (:data:`BODY_CAPTURE_VARIABLE` notwithstanding); so are its ``.options()`` copies, which
    the client builds as instances of its own class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _omit_bodies(self)


class SpanSafeAsyncElasticsearch(AsyncElasticsearch):
    """:class:`SpanSafeElasticsearch`, async."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _omit_bodies(self)


@cache
def package_version() -> str:
    """hybrid-es's installed version (``0+unknown`` when it runs from an uninstalled tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hybrid-es")
    except PackageNotFoundError:
        return "0+unknown"


def user_agent(client: str) -> str:
    """``hybrid-es/<version> (<client>/<version>)``: who is asking, in the cluster's HTTP client
    stats (``GET _nodes/stats/http``) and in any proxy's log."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        theirs = f" ({client}/{version(client)})"
    except PackageNotFoundError:
        theirs = ""
    return f"hybrid-es/{package_version()}{theirs}"


def es_client_kwargs(settings: Settings, *, api_key: str | None = None) -> dict[str, Any]:
    """The elasticsearch-py keyword arguments for ``settings``; ``api_key`` (a caller's key)
    wins over the configured credentials. Raises ConfigurationError for a CA file that does not
    exist or for both a CA file and a fingerprint.

    Retries here cover connection-level failures only (elasticsearch-py retries on connection
    errors and 502/503/504); bulk 429s are handled by the bulk helper's back-off. With several
    node URLs (``HYBRID_ES_URL=http://a:9200,http://b:9200``) a node that cannot be reached is
    set aside (for 1 s, doubling up to 30 s while it stays down) and the request retried on the
    next node, up to ``max_retries`` times: losing one node costs a retry, not an error. A
    timeout is not retried (``retry_on_timeout`` off): the node may still be carrying the
    request out, and a write sent again elsewhere could land twice.
    """
    kwargs: dict[str, Any] = {
        "request_timeout": settings.request_timeout,
        "max_retries": settings.max_retries,
        "retry_on_timeout": False,
        "headers": {"user-agent": user_agent("elasticsearch")},
    }
    if settings.cloud_id:
        kwargs["cloud_id"] = settings.cloud_id
    else:  # one URL as given (as it always was); several as a list, each a node of the pool
        urls = settings.node_urls()
        kwargs["hosts"] = list(urls) if len(urls) > 1 else settings.url
    kwargs.update(tls_options(settings, https=settings.uses_tls()))
    key = api_key or (settings.api_key.get_secret_value() if settings.api_key else None)
    if key:
        kwargs["api_key"] = key
    elif settings.bearer_auth:
        kwargs["bearer_auth"] = settings.bearer_auth.get_secret_value()
    elif settings.username and settings.password:
        kwargs["basic_auth"] = (settings.username, settings.password.get_secret_value())
    return _merge_options(kwargs, settings.client_options)


def opensearch_client_kwargs(settings: Settings) -> dict[str, Any]:
    """The opensearch-py keyword arguments for ``settings`` (its own names: ``timeout``,
    ``http_auth``; API key and bearer token as an Authorization header). Raises
    ConfigurationError for a cloud id (Elastic Cloud runs no OpenSearch), a CA file that does
    not exist, or both a CA file and a fingerprint."""
    if settings.cloud_id:
        raise ConfigurationError(
            "HYBRID_ES_CLOUD_ID names an Elastic Cloud deployment, and the cluster that answered "
            "is OpenSearch",
            hint="unset HYBRID_ES_CLOUD_ID and set HYBRID_ES_URL to the OpenSearch cluster",
        )
    headers = {"user-agent": user_agent("opensearch-py")}
    kwargs: dict[str, Any] = {
        "hosts": list(settings.node_urls()),  # several: retried on the next (as above)
        "timeout": settings.request_timeout,
        "max_retries": settings.max_retries,
        "retry_on_timeout": False,
        "headers": headers,
    }
    tls = tls_options(settings, https=settings.uses_tls())
    if "ssl_assert_fingerprint" in tls:
        # urllib3 checks the pin on the node's own certificate; the chain is not verified
        # (that is what the pin replaces). A context of our own, so that opensearch-py neither
        # warns nor turns urllib3's warnings off for the whole process.
        import ssl

        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        tls = {"ssl_context": context, "ssl_assert_fingerprint": tls["ssl_assert_fingerprint"]}
    kwargs.update(tls)
    if settings.api_key:
        headers["authorization"] = f"ApiKey {settings.api_key.get_secret_value()}"
    elif settings.bearer_auth:
        headers["authorization"] = f"Bearer {settings.bearer_auth.get_secret_value()}"
    elif settings.username and settings.password:
        kwargs["http_auth"] = (settings.username, settings.password.get_secret_value())
    return _merge_options(kwargs, settings.client_options)


def tls_options(settings: Settings, *, https: bool) -> dict[str, Any]:
    """The TLS options of ``settings`` as both clients (and elastic-transport, which the Kibana
    import uses) name them; none unless ``https``."""
    if not https:
        return {}
    if settings.ca_certs and settings.ssl_assert_fingerprint:
        raise ConfigurationError(
            "both HYBRID_ES_CA_CERTS and HYBRID_ES_SSL_ASSERT_FINGERPRINT are set: the "
            "certificate would be checked in two ways",
            hint="keep one: the CA file that signed the cluster's certificate, or its fingerprint",
        )
    if settings.ssl_assert_fingerprint:
        return {"ssl_assert_fingerprint": settings.ssl_assert_fingerprint}
    out: dict[str, Any] = {}
    if settings.ca_certs:
        if not settings.ca_certs.is_file():
            raise ConfigurationError(
                f"HYBRID_ES_CA_CERTS names {settings.ca_certs}, which is not a file",
                hint="point it at the PEM file of the CA that signed the cluster's certificate "
                "(a default Elasticsearch install writes config/certs/http_ca.crt)",
            )
        out["ca_certs"] = str(settings.ca_certs)
    out.update(client_certificate(settings))
    if not settings.verify_certs:
        # The clients' own warning would repeat on every client built (and fail under
        # warnings-as-errors); unverified_warning() says it once, where the client is built.
        out.update(verify_certs=False, ssl_show_warn=False)
    return out


def client_certificate(settings: Settings) -> dict[str, str]:
    """The client certificate and key of mutual TLS (both clients name them alike). Raises
    ConfigurationError for a file that does not exist or a key without a certificate."""
    out: dict[str, str] = {}
    for name, path in (("client_cert", settings.client_cert), ("client_key", settings.client_key)):
        if path is None:
            continue
        if not path.is_file():
            raise ConfigurationError(
                f"HYBRID_ES_{name.upper()} names {path}, which is not a file",
                hint="point it at the PEM file of the client certificate (or its key)",
            )
        out[name] = str(path)
    if "client_key" in out and "client_cert" not in out:
        raise ConfigurationError(
            "HYBRID_ES_CLIENT_KEY is set without HYBRID_ES_CLIENT_CERT",
            hint="set HYBRID_ES_CLIENT_CERT to the certificate the key belongs to",
        )
    return out


def unverified_warning(settings: Settings, url: str | None = None) -> str | None:
    """The warning for a TLS connection whose certificate is not checked (None when it is):
    to the cluster, or to ``url`` (redacted; Kibana's)."""
    target = url or settings.redacted_url()
    if not target.lower().startswith("https://"):
        return None
    if settings.verify_certs or settings.ssl_assert_fingerprint:
        return None
    return (
        f"TLS certificate verification is off for {target} "
        "(HYBRID_ES_VERIFY_CERTS=false): anyone on the network path can read and change what "
        "is sent, credentials included. Set HYBRID_ES_CA_CERTS or "
        "HYBRID_ES_SSL_ASSERT_FINGERPRINT instead."
    )


def _merge_options(kwargs: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """HYBRID_ES_CLIENT_OPTIONS merged last (headers merged, not replaced); only the allowed
    options got through when the settings were read (``hybrid_es.client_options``)."""
    out = {**kwargs, **{k: v for k, v in options.items() if k != "headers"}}
    if options.get("headers"):
        out["headers"] = {
            **kwargs["headers"],
            **{k.lower(): v for k, v in options["headers"].items()},
        }
    return out


def build_client(factory: Any, kwargs: dict[str, Any], settings: Settings, name: str) -> Any:
    """``factory(**kwargs)``, an option the client refuses (a misspelt HYBRID_ES_CLIENT_OPTIONS
    key) raised as a ConfigurationError; logs the unverified-TLS warning once per client."""
    warning = unverified_warning(settings)
    if warning:
        log.warning(warning)
    try:
        return factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"the {name} client refused its options: {exc}",
            hint="check HYBRID_ES_CLIENT_OPTIONS (merged last into the client's options)"
            if settings.client_options
            else "check the HYBRID_ES_* connection settings",
        ) from None


@cache
def orjson_serializers() -> dict[str, Any]:
    """elasticsearch-py's JSON and NDJSON serializers on orjson (the client's own
    ``OrjsonSerializer``, and the NDJSON one over it): a search's ``_msearch`` lines are written
    and its answers read about ten times faster than by the json module, the same bytes in
    meaning. The client applies them to its compatibility-mode mimetypes too."""
    from elasticsearch.serializer import NdjsonSerializer, OrjsonSerializer

    class OrjsonNdjsonSerializer(NdjsonSerializer, OrjsonSerializer):
        """NDJSON lines written and read by orjson."""

    return {
        OrjsonSerializer.mimetype: OrjsonSerializer(),
        NdjsonSerializer.mimetype: OrjsonNdjsonSerializer(),
    }


def make_client(
    settings: Settings, *, api_key: str | None = None, **overrides: Any
) -> Elasticsearch:
    """An Elasticsearch client for ``settings`` (see :func:`es_client_kwargs`), on orjson
    (:func:`orjson_serializers`), whose spans never hold a body (:class:`SpanSafeElasticsearch`);
    ``overrides`` (code's own, e.g. a node class) win over everything."""
    kwargs = {**es_client_kwargs(settings, api_key=api_key), **overrides}
    if "serializer" not in kwargs:  # code that names its own serializer keeps it
        kwargs.setdefault("serializers", orjson_serializers())
    client: Elasticsearch = build_client(SpanSafeElasticsearch, kwargs, settings, "Elasticsearch")
    return client
