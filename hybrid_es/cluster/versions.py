"""The client and server versions: which elasticsearch-py is installed, the error for a server
whose major it cannot talk to, the server's version asked without the client's compatibility
headers, and the warning for an older client that talks to a newer server through REST
compatibility. ``cluster.engine.connect`` runs these checks when it connects.
"""

from __future__ import annotations

import logging
from typing import Any

from hybrid_es.errors import ConfigurationError


def client_version() -> str:
    """The installed elasticsearch-py version."""
    from importlib.metadata import version

    return version("elasticsearch")


def client_mismatch(server_version: str, url: str) -> ConfigurationError:
    """The error for an Elasticsearch server whose major this elasticsearch-py cannot talk to."""
    server_major = server_version.split(".")[0]
    client = client_version()
    extra = f"es{server_major}" if server_major in ("8", "9") else None
    hint = (
        f"install the {server_major}.x client: pip install '.[{extra}]' "
        f"(the same as pip install 'elasticsearch>={server_major}.19,<{int(server_major) + 1}')"
        if extra == "es8"
        else f"install elasticsearch-py {server_major}.x: pip install '.[{extra}]'"
        if extra
        else "hybrid-es supports Elasticsearch 8.19 and 9.x"
    )
    return ConfigurationError(
        f"the cluster at {url} runs Elasticsearch {server_version}, and this install has "
        f"elasticsearch-py {client}: the client's major version must equal the server's "
        f"({client.split('.')[0]} != {server_major})",
        hint=hint,
    )


def warn_on_older_client(server_version: str, server_major: int, url: str) -> None:
    """A client older than the server talks to it through the server's REST compatibility
    (elasticsearch-py 8 sends plain JSON, which Elasticsearch 9 accepts): it works, but the suite
    does not run that pair, so say so once. A newer client cannot work: :func:`client_mismatch`.
    ``server_major`` is 0 when the version is unknown (no warning then)."""
    client_major = int(client_version().split(".")[0])
    if server_major and client_major < server_major:
        logging.getLogger("hybrid_es").warning(
            "elasticsearch-py %s talks to Elasticsearch %s at %s through REST compatibility; "
            "the tested pair is the client of the server's major: pip install '.[es%d]'",
            client_version(),
            server_version,
            url,
            server_major,
        )


def server_version_plain(es: Any) -> str:
    """The server's version, asked without the client's compatibility headers (which an older
    server refuses)."""
    from elastic_transport import HttpHeaders

    try:
        headers = HttpHeaders(es._headers)  # the client's auth and user-agent
        headers["accept"] = "application/json"
        # GET / first; the integ-test distribution serves no GET /, so node info next.
        for path in ("/", "/_nodes/_local?filter_path=nodes.*.version"):
            body = es.transport.perform_request("GET", path, headers=headers).body
            if not isinstance(body, dict):
                continue
            if isinstance(body.get("version"), dict):
                return str(body["version"].get("number", "unknown"))
            for node in (body.get("nodes") or {}).values():
                return str(node.get("version", "unknown"))
        return "unknown (older than the client)"
    except Exception:  # only the message's detail depends on it
        return "unknown (older than the client)"
