"""Importing the Kibana saved objects shipped under ``es_templates/kibana``."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
import uuid

from hybrid_es.errors import EngineUnavailableError
from hybrid_es.settings import Settings
from hybrid_es.templates import templates_dir


def import_saved_objects(kibana_url: str, settings: Settings) -> int:
    """POST every ndjson file to Kibana's saved-objects import API; return the objects imported."""
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
        if settings.username and settings.password:
            token = f"{settings.username}:{settings.password.get_secret_value()}"
            req.add_header("Authorization", "Basic " + base64.b64encode(token.encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                total += int(json.loads(resp.read()).get("successCount", 0))
        except (urllib.error.URLError, OSError) as exc:
            raise EngineUnavailableError(
                f"cannot import saved objects into Kibana at {kibana_url}: {exc}",
                hint="check the Kibana URL and that Kibana is up",
            ) from exc
    return total
