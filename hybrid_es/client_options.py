"""``HYBRID_ES_CLIENT_OPTIONS``: extra client options, by allowlist. Pure.

Credentials come only from the credential settings (``HYBRID_ES_API_KEY``, ``..._BEARER_AUTH``,
``..._USERNAME``/``..._PASSWORD``, ``..._CLIENT_CERT``), and where to connect only from
``HYBRID_ES_URL``/``..._CLOUD_ID``. The options are merged last into the client's keyword
arguments, so an option outside this list could silently change who is calling or where: a
``headers`` entry such as ``es-security-runas-user`` (Elasticsearch's run-as),
``opendistro_security_impersonate_as`` or a proxy-authentication header (OpenSearch, whose
header names are configurable), a client certificate (PKI realms authenticate by it), a
transport class that honours ``HTTP_PROXY``, or sniffing, which sends requests to whatever
addresses the nodes publish. A list of refused names cannot hold against that (every engine
and proxy adds its own), so the options are an allowlist: only what changes how requests are
sent (timeouts, retries, compression, pool sizes, node selection), never by whom or to whom.

Extra headers are allowed in one namespace only, ``X-Hybrid-Es-*``, which no engine or proxy
reads as identity (for a gateway's routing or accounting, e.g. ``X-Hybrid-Es-Team``).
"""

from __future__ import annotations

import json
import re
from json import JSONDecodeError
from typing import Any

from hybrid_es.errors import ConfigurationError

_NUMBER = (int, float)
ALLOWED_CLIENT_OPTIONS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "request_timeout": (_NUMBER, "seconds per request (elasticsearch-py)"),
    "timeout": (_NUMBER, "seconds per request (opensearch-py)"),
    "max_retries": (int, "connection-level retries"),
    "retry_on_status": (list, "HTTP statuses retried on the next node"),
    "retry_on_timeout": (bool, "retry a timed-out request on the next node"),
    "http_compress": (bool, "gzip request bodies"),
    "connections_per_node": (int, "connection pool size per node (elasticsearch-py)"),
    "pool_maxsize": (int, "connection pool size per node (opensearch-py)"),
    "node_selector_class": (str, "'round_robin' or 'random' (elasticsearch-py)"),
    "randomize_nodes_in_pool": (bool, "shuffle the nodes of HYBRID_ES_URL at start"),
    "dead_node_backoff_factor": (_NUMBER, "seconds a failed node is set aside, doubling"),
    "max_dead_node_backoff": (_NUMBER, "the most seconds a failed node is set aside"),
    "headers": (dict, "extra headers named X-Hybrid-Es-*"),
}
"""The options ``HYBRID_ES_CLIENT_OPTIONS`` may hold: name -> (JSON type, what it does)."""
NODE_SELECTORS = ("round_robin", "random")
# ASCII: case-folded, [a-z] would also match the Kelvin sign and the long s (U+212A, U+017F).
HEADER_NAMESPACE = re.compile(r"x-hybrid-es-[a-z0-9][a-z0-9-]{0,63}", re.IGNORECASE | re.ASCII)
HTTP_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", re.ASCII)
"""A header name as HTTP allows it (RFC 9110's ``token``)."""

_TLS = "HYBRID_ES_CA_CERTS, HYBRID_ES_SSL_ASSERT_FINGERPRINT or HYBRID_ES_VERIFY_CERTS"
INSTEAD: dict[str, str] = {
    "hosts": "HYBRID_ES_URL",
    "cloud_id": "HYBRID_ES_CLOUD_ID",
    "basic_auth": "HYBRID_ES_USERNAME and HYBRID_ES_PASSWORD",
    "http_auth": "HYBRID_ES_USERNAME and HYBRID_ES_PASSWORD",
    "api_key": "HYBRID_ES_API_KEY",
    "bearer_auth": "HYBRID_ES_BEARER_AUTH",
    "client_cert": "HYBRID_ES_CLIENT_CERT and HYBRID_ES_CLIENT_KEY",
    "client_key": "HYBRID_ES_CLIENT_CERT and HYBRID_ES_CLIENT_KEY",
    "ca_certs": "HYBRID_ES_CA_CERTS",
    "verify_certs": "HYBRID_ES_VERIFY_CERTS",
    "ssl_show_warn": "HYBRID_ES_VERIFY_CERTS",
    "ssl_assert_fingerprint": "HYBRID_ES_SSL_ASSERT_FINGERPRINT",
    "ssl_context": _TLS,
    "ssl_assert_hostname": _TLS,
    "use_ssl": "HYBRID_ES_URL (https://)",
    "sniff_on_start": "HYBRID_ES_URL (list every node, comma-separated)",
    "sniff_before_requests": "HYBRID_ES_URL (list every node, comma-separated)",
    "sniff_on_node_failure": "HYBRID_ES_URL (list every node, comma-separated)",
    "sniff_on_connection_fail": "HYBRID_ES_URL (list every node, comma-separated)",
    "opaque_id": "nothing: hybrid-es sends each search's trace id as X-Opaque-Id",
}
"""Refused options that have a setting of their own: the setting to use instead."""
HEADERS_INSTEAD: dict[str, str] = {
    "authorization": "HYBRID_ES_API_KEY or HYBRID_ES_BEARER_AUTH",
    "es-security-runas-user": "a credential of the user itself (run-as is not configurable)",
    "x-opaque-id": "nothing: hybrid-es sends each search's trace id as X-Opaque-Id",
    "user-agent": "nothing: hybrid-es names itself and its client",
}
_EXAMPLE = """e.g. HYBRID_ES_CLIENT_OPTIONS='{"http_compress": true, "request_timeout": 10}'"""
_VARIABLE = "HYBRID_ES_CLIENT_OPTIONS"


def parse_client_options(value: Any) -> dict[str, Any]:
    """``HYBRID_ES_CLIENT_OPTIONS`` (a JSON object, or a dict given in code) as a dict.

    Raises ConfigurationError naming the variable and the option for bad JSON, a value that is
    not an object, an option outside :data:`ALLOWED_CLIENT_OPTIONS` (with the setting to use
    where it has one: :data:`INSTEAD`), a value of the wrong type, a header outside the
    ``X-Hybrid-Es-*`` namespace, or a header name or value that HTTP cannot carry (a name that
    is not a token; a value with a control character or a character outside Latin-1). A
    refusal never repeats the option's value (it may be a secret put in the wrong place).
    """
    if value is None:
        return {}
    if isinstance(value, str | bytes):
        try:
            value = json.loads(value)
        except ValueError as exc:
            where = (
                f" ({exc.msg} at character {exc.pos})" if isinstance(exc, JSONDecodeError) else ""
            )
            raise ConfigurationError(
                f"{_VARIABLE} is not valid JSON{where}", hint=_EXAMPLE
            ) from None
    if not isinstance(value, dict):
        raise ConfigurationError(
            f"{_VARIABLE} must be a JSON object, not {type(value).__name__}", hint=_EXAMPLE
        )
    for key, option in value.items():
        _check_option(str(key), option)
    return dict(value)


def _check_option(key: str, option: Any) -> None:
    if key not in ALLOWED_CLIENT_OPTIONS:
        if key in INSTEAD:
            raise ConfigurationError(
                f"{_VARIABLE} may not set {key!r}: it would change where requests go, who "
                "makes them or how the cluster's certificate is checked",
                hint=f"set {INSTEAD[key]} instead",
            )
        raise ConfigurationError(
            f"{_VARIABLE} may not set {key!r}: only options that change how requests are sent "
            "(not by whom or to whom) are accepted",
            hint="allowed: " + ", ".join(sorted(ALLOWED_CLIENT_OPTIONS)),
        )
    kind, what = ALLOWED_CLIENT_OPTIONS[key]
    if (isinstance(option, bool) and kind is not bool) or not isinstance(option, kind):
        raise ConfigurationError(
            f"{_VARIABLE}: {key!r} must be {_kind_name(kind)} ({what})", hint=_EXAMPLE
        )
    if key == "node_selector_class" and option not in NODE_SELECTORS:
        raise ConfigurationError(
            f"{_VARIABLE}: 'node_selector_class' must be one of {', '.join(NODE_SELECTORS)}",
            hint=_EXAMPLE,
        )
    if key == "headers" and isinstance(option, dict):
        for name, header in option.items():
            _check_header(str(name), header)


def _check_header(name: str, value: Any) -> None:
    """One extra header: a name in the namespace and a value that HTTP can carry. The client
    encodes a header as Latin-1 only when it sends it, so anything else would fail there, as an
    encoding error out of the connection rather than a setting named here."""
    lowered = name.lower()
    if lowered in HEADERS_INSTEAD:
        raise ConfigurationError(
            f"{_VARIABLE} may not set the {name} header",
            hint=f"set {HEADERS_INSTEAD[lowered]} instead",
        )
    if not HTTP_TOKEN.fullmatch(name):
        raise ConfigurationError(
            f"{_VARIABLE}: {name} is not a header name HTTP allows (ASCII letters, digits "
            "and !#$%&'*+-.^_`|~ only; no spaces, colons or line breaks)",
            hint='e.g. {"headers": {"X-Hybrid-Es-Team": "search"}}',
        )
    if not HEADER_NAMESPACE.fullmatch(name):
        raise ConfigurationError(
            f"{_VARIABLE} may not set the {name} header: extra headers must be named "
            "X-Hybrid-Es-* (a header outside that namespace may be read as identity by the "
            "engine or a proxy in front of it)",
            hint='e.g. {"headers": {"X-Hybrid-Es-Team": "search"}}',
        )
    if not isinstance(value, str) or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ConfigurationError(
            f"{_VARIABLE}: the {name} header must be a string without control characters",
            hint='e.g. {"headers": {"X-Hybrid-Es-Team": "search"}}',
        )
    if any(ord(c) > 255 for c in value):
        raise ConfigurationError(
            f"{_VARIABLE}: the {name} header holds a character outside Latin-1, which an HTTP "
            "header cannot carry",
            hint="spell its value in Latin-1 (ASCII is safest); percent-encode or base64 "
            "anything else",
        )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
    names.update({list: "a list", dict: "an object"})
    if isinstance(kind, tuple):
        return "a number"
    return names.get(kind, kind.__name__)
