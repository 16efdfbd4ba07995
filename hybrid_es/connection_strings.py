"""Connection strings, parsed and checked: node URLs, a Cloud id, a certificate fingerprint.

Pure functions over the text a user gives (``HYBRID_ES_URL``, ``HYBRID_ES_CLOUD_ID``,
``HYBRID_ES_SSL_ASSERT_FINGERPRINT``), apart from the settings model that calls them, so that
the cluster layer and the messages can use them too. Each raises a ConfigurationError that names
the variable, and none ever echoes a password: :func:`redact_url` is the one way a URL is shown.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from hybrid_es.errors import ConfigurationError


def redact_url(url: str) -> str:
    """``url`` without any user:password part, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def parse_node_urls(value: str) -> list[str]:
    """The node URLs of a comma-separated HYBRID_ES_URL, each checked: ``http://`` or
    ``https://`` (the same for all: the TLS settings apply to every node), a host, a port that
    is a number, no node twice, and the same user:password part in each or in none. Raises
    ConfigurationError naming HYBRID_ES_URL and the node by its number (never a password)."""
    urls = [u.strip() for u in value.split(",")]
    hint = "give the URLs of one cluster's nodes, comma-separated: http://a:9200,http://b:9200"
    seen: dict[str, int] = {}
    for n, url in enumerate(urls, 1):
        if not url:
            raise ConfigurationError(
                f"HYBRID_ES_URL: node URL {n} of {len(urls)} is empty", hint=hint
            )
        parts = urlsplit(url)
        try:
            parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
        except ValueError:
            raise ConfigurationError(
                f"HYBRID_ES_URL: node URL {n} ({parts.scheme}://{parts.hostname}) has a port "
                "that is not a number from 0 to 65535",
                hint=hint,
            ) from None
        shown = redact_url(url) if parts.scheme and parts.netloc else "(not a URL)"
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                f"HYBRID_ES_URL: node URL {n} {shown} is not an http:// or https:// URL with a "
                "host",
                hint=hint,
            )
        key = redact_url(url).lower().rstrip("/")
        if key in seen:
            raise ConfigurationError(
                f"HYBRID_ES_URL names {shown} twice (node URLs {seen[key]} and {n})", hint=hint
            )
        seen[key] = n
    first = urlsplit(urls[0])
    if len({urlsplit(u).scheme.lower() for u in urls}) > 1:
        raise ConfigurationError(
            "HYBRID_ES_URL mixes http:// and https:// nodes: the TLS settings "
            "(HYBRID_ES_CA_CERTS, HYBRID_ES_SSL_ASSERT_FINGERPRINT) apply to every node",
            hint="use one scheme for every node of the cluster",
        )
    for n, url in enumerate(urls[1:], 2):
        parts = urlsplit(url)
        if (parts.username, parts.password) != (first.username, first.password):
            raise ConfigurationError(
                f"HYBRID_ES_URL: node URL {n} carries another user:password part than node URL "
                "1: the credentials are the cluster's, the same for every node",
                hint="give them once, in HYBRID_ES_USERNAME and HYBRID_ES_PASSWORD, and none in "
                "the URLs",
            )
    return urls


def decode_cloud_id(cloud_id: str) -> tuple[str, str | None]:
    """The Elasticsearch URL and the Kibana URL (None when the id names none) of an Elastic
    Cloud id (``name:base64(host[:port]$es-uuid$kibana-uuid)``), decoded as elasticsearch-py
    decodes it. Raises ConfigurationError naming HYBRID_ES_CLOUD_ID when it does not decode."""
    from elastic_transport.client_utils import parse_cloud_id

    try:
        parsed = parse_cloud_id(cloud_id)
    except ValueError:
        parsed = None
    if parsed is None or parsed.es_address is None:
        raise ConfigurationError(
            "HYBRID_ES_CLOUD_ID does not decode to an Elastic Cloud deployment (expected "
            "<name>:<base64 of host$elasticsearch-id$kibana-id>)",
            hint="copy the Cloud ID again, whole, from the deployment's page in the Elastic "
            "Cloud console",
        )
    (host, port), kibana = parsed.es_address, parsed.kibana_address
    return f"https://{host}:{port}", (f"https://{kibana[0]}:{kibana[1]}" if kibana else None)


def normalize_fingerprint(value: str) -> str:
    """A SHA-256 fingerprint as 64 lowercase hex digits (colons and spaces dropped, as
    Elasticsearch and ``openssl x509 -fingerprint -sha256`` print it). Raises
    ConfigurationError naming HYBRID_ES_SSL_ASSERT_FINGERPRINT otherwise."""
    digits = re.sub(r"[\s:]", "", value.strip()).lower()
    digits = digits.removeprefix("sha256fingerprint=")  # openssl's own prefix
    if not re.fullmatch(r"[0-9a-f]{64}", digits):
        raise ConfigurationError(
            f"HYBRID_ES_SSL_ASSERT_FINGERPRINT is not a SHA-256 fingerprint ({len(digits)} "
            "characters; expected 64 hex digits, colons allowed)",
            hint="print it with `openssl x509 -in http_ca.crt -noout -fingerprint -sha256` "
            "(Elasticsearch also prints it at its first start)",
        )
    return digits
