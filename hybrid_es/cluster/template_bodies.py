"""Template bodies compared and combined: the per-flavour merge patch, the fingerprint, the diff.

Pure functions over JSON bodies, apart from ``templates.py``, which reads and chooses the files.
An OpenSearch file under ``es_templates/opensearch/`` is a merge patch over the shared body; the
fingerprint of a body, recorded in its ``_meta`` when installed, tells bootstrap whether what a
cluster holds is what the files say; and the diff shows what differs, in the files' own form.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from typing import Any

HASH_KEY = "hybrid_es_hash"
"""The ``_meta`` key under which an installed body records the fingerprint of its file."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, ``null`` removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def fingerprint(body: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a body, ignoring the fingerprint itself."""
    clean = copy.deepcopy(body)
    meta = clean.get("_meta")
    if isinstance(meta, dict):
        meta.pop(HASH_KEY, None)
    canon = json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


def normalize_installed(body: dict[str, Any]) -> dict[str, Any]:
    """Bring a body as Elasticsearch returns it closer to the file's form, for a readable diff.

    Elasticsearch flattens settings under ``index.`` and turns scalars into strings.
    """
    body = copy.deepcopy(body)
    tmpl = body.get("template")
    if isinstance(tmpl, dict) and isinstance(tmpl.get("settings"), dict):
        settings = tmpl["settings"]
        if set(settings) == {"index"} and isinstance(settings["index"], dict):
            tmpl["settings"] = settings["index"]
    out: dict[str, Any] = _stringify(body)
    return out


def _stringify(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _stringify(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_stringify(v) for v in node]
    if isinstance(node, bool):
        return str(node).lower()
    if isinstance(node, int | float):
        return str(node)
    return node


def diff(installed: dict[str, Any], desired: dict[str, Any], name: str) -> str:
    """A unified diff between what is installed and what the file says."""

    def lines(body: dict[str, Any]) -> list[str]:
        clean = copy.deepcopy(body)
        if isinstance(clean.get("_meta"), dict):
            clean["_meta"].pop(HASH_KEY, None)
        text = json.dumps(normalize_installed(clean), indent=2, sort_keys=True, ensure_ascii=False)
        return text.splitlines(keepends=True)

    return "".join(
        difflib.unified_diff(
            lines(installed), lines(desired), f"{name} (installed)", f"{name} (file)"
        )
    )
