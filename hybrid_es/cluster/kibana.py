"""Importing the Kibana saved objects shipped under ``es_templates/kibana``."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
import uuid
from urllib.parse import unquote, urlsplit, urlunsplit

from hybrid_es.cluster.templates import templates_dir
from hybrid_es.errors import EngineError, EngineUnavailableError
from hybrid_es.settings import Settings


def _split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without any user:password part, and that part (urllib cannot send it itself)."""
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


def import_saved_objects(kibana_url: str, settings: Settings) -> int:
    """POST every ndjson file to Kibana's saved-objects import API; return the objects imported.

    Credentials in ``kibana_url`` (``http://user:password@kibana:5601``) are sent as basic auth
    and never shown in messages; without them the Elasticsearch user and password are used.
    """
    kibana_url, url_auth = _split_credentials(kibana_url)
    files = sorted((templates_dir(settings.templates_dir) / "kibana").glob("*.ndjson"))
    total = 0
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
        req = urllib.request.Request(
            kibana_url.rstrip("/") + "/api/saved_objects/_import?overwrite=true",
            data=body,
            method="POST",
            headers={
                "kbn-xsrf": "hybrid-es",
                "Content-Type": f"multipart/form-data; boundary={boundary}",
            },
        )
        user, password = url_auth or (
            settings.username or "",
            settings.password.get_secret_value() if settings.password else "",
        )
        if user and password:
            token = f"{user}:{password}"
            req.add_header("Authorization", "Basic " + base64.b64encode(token.encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                result = json.loads(resp.read())
        except (urllib.error.URLError, OSError) as exc:
            raise EngineUnavailableError(
                f"cannot import saved objects into Kibana at {kibana_url}: {exc}",
                hint="check the Kibana URL and that Kibana is up",
            ) from exc
        total += int(result.get("successCount", 0))
        if result.get("success") is False:
            # Kibana answers 200 with per-object errors (missing references, unknown types).
            failed = ", ".join(
                f"{e.get('type')} {e.get('id')}: {(e.get('error') or {}).get('type')}"
                for e in result.get("errors", [])
            )
            raise EngineError(
                f"Kibana refused saved objects from {f.name}: {failed}",
                hint="check the Kibana version (8.x or 9.x) and the file under es_templates/kibana",
            )
    return total
