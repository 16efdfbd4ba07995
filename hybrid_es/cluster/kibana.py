"""Importing the Kibana saved objects shipped under ``es_templates/kibana``.

Kibana is reached over elastic-transport, the HTTP layer under elasticsearch-py, so the cluster's
connection settings mean the same thing here: HYBRID_ES_CA_CERTS, HYBRID_ES_SSL_ASSERT_FINGERPRINT
and HYBRID_ES_VERIFY_CERTS for TLS (Kibana's certificate is checked against them), and
HYBRID_ES_API_KEY, HYBRID_ES_BEARER_AUTH or the user and password for credentials (Kibana accepts
Elasticsearch API keys). A TLS failure is the same one clear error as for the cluster.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import re
import uuid
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from hybrid_es.cluster.client import tls_options, unverified_warning, user_agent
from hybrid_es.cluster.templates import templates_dir
from hybrid_es.errors import (
    AuthenticationError,
    ConfigurationError,
    EngineError,
    EngineUnavailableError,
    tls_error,
)
from hybrid_es.settings import Settings

log = logging.getLogger(__name__)

SPACE_PATTERN = re.compile(r"[a-z0-9_-]+")
"""Kibana's rule for a space id: lowercase letters, digits, ``_`` and ``-``."""


def _split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without any user:password part, and that part."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if parts.port:
        host = f"{host}:{parts.port}"
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return clean, (unquote(parts.username or ""), unquote(parts.password or ""))


def import_path(space: str | None = None) -> str:
    """The saved-objects import API's path, in ``space`` (None: the default space)."""
    if space is not None and not SPACE_PATTERN.fullmatch(space):
        raise ConfigurationError(
            f"{space!r} is not a Kibana space id (lowercase letters, digits, '_' and '-')",
            hint="give the space's id, as in its URL (/s/<id>/app/...), not its display name",
        )
    prefix = f"/s/{quote(space)}" if space and space != "default" else ""
    return f"{prefix}/api/saved_objects/_import"


def kibana_headers(settings: Settings, url_auth: tuple[str, str] | None) -> dict[str, str]:
    """Headers for Kibana: credentials from the Kibana URL, else the cluster's (API key, bearer
    token, user and password, in that order); the user-agent; Kibana's XSRF header."""
    headers = {"kbn-xsrf": "hybrid-es", "user-agent": user_agent("elastic-transport")}
    if url_auth and url_auth[0] and url_auth[1]:
        token = base64.b64encode(f"{url_auth[0]}:{url_auth[1]}".encode()).decode()
        headers["authorization"] = f"Basic {token}"
    elif settings.api_key:
        headers["authorization"] = f"ApiKey {settings.api_key.get_secret_value()}"
    elif settings.bearer_auth:
        headers["authorization"] = f"Bearer {settings.bearer_auth.get_secret_value()}"
    elif settings.username and settings.password:
        token = f"{settings.username}:{settings.password.get_secret_value()}"
        headers["authorization"] = "Basic " + base64.b64encode(token.encode()).decode()
    return headers


def _transport(kibana_url: str, settings: Settings, headers: dict[str, str]) -> Any:
    from elastic_transport import TextSerializer, Transport
    from elastic_transport.client_utils import url_to_node_config

    try:
        node = url_to_node_config(kibana_url, use_default_ports_for_scheme=True)
    except ValueError:
        raise ConfigurationError(
            f"{kibana_url!r} is not a Kibana URL",
            hint="give --kibana as scheme://host:port, e.g. https://kibana.example.com:5601",
        ) from None
    warning = unverified_warning(settings, kibana_url)
    if warning:
        log.warning(warning)
    node = dataclasses.replace(
        node,
        request_timeout=settings.request_timeout,
        headers=headers,
        **tls_options(settings, https=node.scheme == "https"),
    )
    return Transport(
        [node],
        serializers={"multipart/form-data": TextSerializer()},  # the body goes out as bytes
        max_retries=settings.max_retries,
        meta_header=False,
    )


def import_saved_objects(kibana_url: str, settings: Settings, *, space: str | None = None) -> int:
    """POST every ndjson file to Kibana's saved-objects import API (in ``space``, default: the
    default space); return the objects imported.

    Credentials in ``kibana_url`` (``http://user:password@kibana:5601``) are sent as basic auth
    and never shown in messages; without them the cluster's credentials are used. Raises
    EngineUnavailableError when Kibana cannot be reached, AuthenticationError when it refuses
    the credentials, ConfigurationError for a TLS failure (naming the setting to fix) or a space
    that does not exist, EngineError for objects Kibana refuses.
    """
    kibana_url, url_auth = _split_credentials(kibana_url)
    path = import_path(space) + "?overwrite=true"
    transport = _transport(kibana_url, settings, kibana_headers(settings, url_auth))
    files = sorted((templates_dir(settings.templates_dir) / "kibana").glob("*.ndjson"))
    total = 0
    try:
        for f in files:
            boundary = uuid.uuid4().hex
            body = (
                (
                    f"--{boundary}\r\n"
                    f'Content-Disposition: form-data; name="file"; filename="{f.name}"\r\n'
                    f"Content-Type: application/ndjson\r\n\r\n"
                ).encode()
                + f.read_bytes()
                + f"\r\n--{boundary}--\r\n".encode()
            )
            result = _post(transport, kibana_url, path, body, boundary, space)
            total += int(result.get("successCount", 0))
            if result.get("success") is False:
                # Kibana answers 200 with per-object errors (missing references, unknown types).
                failed = ", ".join(
                    f"{e.get('type')} {e.get('id')}: {(e.get('error') or {}).get('type')}"
                    for e in result.get("errors", [])
                )
                raise EngineError(
                    f"Kibana refused saved objects from {f.name}: {failed}",
                    hint="check the Kibana version (8.9 or later, or 9.x) and the file under "
                    "es_templates/kibana",
                )
    finally:
        transport.close()
    return total


def _post(
    transport: Any, url: str, path: str, body: bytes, boundary: str, space: str | None
) -> dict[str, Any]:
    """One import request; Kibana's JSON answer, or the package's error for a failure."""
    import elastic_transport

    try:
        resp = transport.perform_request(
            "POST",
            path,
            headers={
                "content-type": f"multipart/form-data; boundary={boundary}",
                "accept": "application/json",
            },
            body=body,
        )
    except elastic_transport.TransportError as exc:
        tls = tls_error("Kibana", url, exc)
        if tls is not None:
            raise tls from None
        raise EngineUnavailableError(
            f"cannot import saved objects into Kibana at {url} ({type(exc).__name__})",
            hint="check the Kibana URL and that Kibana is up",
        ) from None
    status, answer = resp.meta.status, resp.body
    if status == 401:
        raise AuthenticationError(
            f"Kibana at {url} rejected the credentials",
            hint="give them in the --kibana URL (https://user:password@host:5601), or check "
            "HYBRID_ES_API_KEY, HYBRID_ES_BEARER_AUTH or HYBRID_ES_USERNAME/HYBRID_ES_PASSWORD",
            status=status,
        )
    if status == 403:
        raise AuthenticationError(
            f"Kibana at {url} refused the import: the user may not manage saved objects"
            + (f" in space {space!r}" if space else ""),
            hint="grant the user's role the Saved Objects Management feature (all) in that space",
            status=status,
        )
    if status == 404 and space:
        raise ConfigurationError(
            f"Kibana at {url} has no space {space!r}",
            hint="create it (Stack Management > Spaces), or leave --space out for the "
            "default space",
        )
    if not 200 <= status < 300 or not isinstance(answer, dict):
        raise EngineError(
            f"Kibana at {url} answered the import with HTTP {status}: {str(answer)[:200]}",
            hint="check that the URL is Kibana's (8.9 or later), not Elasticsearch's",
            status=status,
        )
    return answer
