"""Importing the Kibana saved objects shipped under ``es_templates/kibana``, named for the
deployment, without overwriting what a user edited (``kibana_objects``).

Kibana is reached over elastic-transport, the HTTP layer under elasticsearch-py, so the cluster's
connection settings mean the same thing here: HYBRID_ES_CA_CERTS, HYBRID_ES_SSL_ASSERT_FINGERPRINT
and HYBRID_ES_VERIFY_CERTS for TLS (Kibana's certificate is checked against them), and
HYBRID_ES_API_KEY, HYBRID_ES_BEARER_AUTH or the user and password for credentials (Kibana accepts
Elasticsearch API keys). A TLS failure is the same one clear error as for the cluster.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import re
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from hybrid_es.cluster.client import tls_options, unverified_warning, user_agent
from hybrid_es.cluster.kibana_objects import key, ndjson, plan_import, saved_objects
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
FILE_NAME = "hybrid-es.ndjson"
"""The name the import's one file goes under (Kibana reads only its extension)."""


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
        # The import's body goes out as bytes; an export answers ndjson, read as text.
        serializers={
            "multipart/form-data": TextSerializer(),
            "application/ndjson": TextSerializer(),
        },
        max_retries=settings.max_retries,
        meta_header=False,
    )


@dataclass(frozen=True)
class KibanaImport:
    """What :func:`import_saved_objects` did, by saved object id: ``created`` (missing in
    Kibana), ``unchanged`` (Kibana's copy says what this version's does), ``kept`` (Kibana's
    copy differs, edited there or written by an earlier version: left alone), ``replaced``
    (differed, overwritten as asked)."""

    created: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()

    @property
    def imported(self) -> int:
        """How many objects were written."""
        return len(self.created) + len(self.replaced)


def import_saved_objects(
    kibana_url: str, settings: Settings, *, space: str | None = None, overwrite: bool = False
) -> KibanaImport:
    """Import the deployment's saved objects (``kibana_objects.saved_objects``: the data view
    over its traces and the dashboards, named for its namespace) into Kibana (in ``space``,
    default: the default space), leaving alone every object Kibana holds with other content
    than this version's, a user's edits included, unless ``overwrite``
    (``kibana_objects.plan_import``).

    Three requests at most: an import that creates nothing when any object exists (Kibana
    reports each existing one as a conflict and writes none), an export of the existing ones,
    then an import of those to write. Credentials in ``kibana_url``
    (``http://user:password@kibana:5601``) are sent as basic auth and never shown in messages;
    without them the cluster's credentials are used. Raises EngineUnavailableError when Kibana
    cannot be reached, AuthenticationError when it refuses the credentials, ConfigurationError
    for a TLS failure (naming the setting to fix) or a space that does not exist, EngineError
    for objects Kibana refuses.
    """
    kibana_url, url_auth = _split_credentials(kibana_url)
    ours = saved_objects(settings.layout(), settings.templates_dir)
    by_key = {key(o): o for o in ours}
    transport = _transport(kibana_url, settings, kibana_headers(settings, url_auth))
    try:
        answer = _import(transport, kibana_url, space, ours, overwrite=False)
        conflicts = _refused(answer, allow_conflicts=True)
        if not conflicts:
            return KibanaImport(created=tuple(o["id"] for o in ours))
        existing = _export(transport, kibana_url, space, [by_key[k] for k in conflicts])
        plan = plan_import(ours, existing, overwrite=overwrite)
        writes = set(plan.writes)
        if writes:
            sent = [o for o in ours if key(o) in writes]
            _refused(_import(transport, kibana_url, space, sent, overwrite=True))
    finally:
        transport.close()
    return KibanaImport(
        created=tuple(i for _, i in plan.create),
        unchanged=tuple(i for _, i in plan.unchanged),
        kept=tuple(i for _, i in plan.kept),
        replaced=tuple(i for _, i in plan.replace),
    )


def _import(
    transport: Any,
    url: str,
    space: str | None,
    objects: list[dict[str, Any]],
    *,
    overwrite: bool,
) -> dict[str, Any]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f"--{boundary}\r\n"
            f'Content-Disposition: form-data; name="file"; filename="{FILE_NAME}"\r\n'
            f"Content-Type: application/ndjson\r\n\r\n"
        ).encode()
        + ndjson(objects)
        + f"\r\n--{boundary}--\r\n".encode()
    )
    path = import_path(space) + f"?overwrite={'true' if overwrite else 'false'}"
    content_type = f"multipart/form-data; boundary={boundary}"
    answer = _post(transport, url, path, body, content_type, space)
    if not isinstance(answer, dict):
        raise _unexpected(url, 200, answer)
    return answer


def _refused(answer: dict[str, Any], *, allow_conflicts: bool = False) -> list[tuple[str, str]]:
    """The (type, id) of each object an import answer reports as existing (a conflict, when
    ``allow_conflicts``); EngineError for any other refusal. Kibana answers 200 with
    per-object errors (missing references, unknown types, conflicts)."""
    if answer.get("success") is not False:
        return []
    errors = list(answer.get("errors", []))
    conflicts = [
        (str(e.get("type")), str(e.get("id")))
        for e in errors
        if (e.get("error") or {}).get("type") == "conflict"
    ]
    others = [e for e in errors if (e.get("error") or {}).get("type") != "conflict"]
    if others or not allow_conflicts or not conflicts:
        failed = ", ".join(
            f"{e.get('type')} {e.get('id')}: {(e.get('error') or {}).get('type')}"
            for e in (others or errors)
        )
        raise EngineError(
            f"Kibana refused saved objects: {failed or 'no reason given'}",
            hint="check the Kibana version (8.9 or later, or 9.x) and the files under "
            "es_templates/kibana",
        )
    return conflicts


def _export(
    transport: Any, url: str, space: str | None, objects: list[dict[str, Any]]
) -> dict[tuple[str, str], dict[str, Any]]:
    """Kibana's copies of ``objects`` (all of which exist), by (type, id)."""
    body = {
        "objects": [{"type": o["type"], "id": o["id"]} for o in objects],
        "includeReferencesDeep": False,
        "excludeExportDetails": True,
    }
    path = import_path(space).removesuffix("_import") + "_export"
    answer = _post(transport, url, path, body, "application/json", space)
    text = answer.decode() if isinstance(answer, bytes) else answer
    if not isinstance(text, str):
        raise _unexpected(url, 200, answer)
    out = {}
    for line in text.splitlines():
        if line.strip():
            obj = json.loads(line)
            if isinstance(obj, dict) and "id" in obj and "type" in obj:
                out[key(obj)] = obj
    return out


def _post(
    transport: Any, url: str, path: str, body: Any, content_type: str, space: str | None
) -> Any:
    """One request to the saved-objects API; Kibana's answer (JSON, or an export's ndjson as
    text), or the package's error for a failure."""
    import elastic_transport

    try:
        resp = transport.perform_request(
            "POST",
            path,
            headers={
                "content-type": content_type,
                "accept": "application/json, application/ndjson",
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
    if not 200 <= status < 300:
        raise _unexpected(url, status, answer)
    return answer


def _unexpected(url: str, status: int, answer: Any) -> EngineError:
    return EngineError(
        f"Kibana at {url} answered the import with HTTP {status}: {str(answer)[:200]}",
        hint="check that the URL is Kibana's (8.9 or later), not Elasticsearch's",
        status=status,
    )
