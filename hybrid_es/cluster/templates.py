"""The JSON under ``es_templates/`` as data: loading, choosing, fingerprinting and diffing.

Pure: reads files, never the network. ``bootstrap.py`` installs what this module describes.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hybrid_es.errors import ConfigurationError

Kind = Literal["component", "index", "role"]
AnalysisProfile = Literal["standard", "full"]

ANALYSIS_TEMPLATE = "hybrid-es-analysis"
HASH_KEY = "hybrid_es_hash"
TENANT_PLACEHOLDER = "{{tenant}}"


def templates_dir(override: Path | None = None) -> Path:
    """Where the template files live: an override, the wheel's copy, or the source tree's."""
    candidates = [override] if override else []
    package = Path(__file__).resolve().parents[1]  # hybrid_es/
    candidates += [package / "_es_templates", package.parent / "es_templates"]
    for c in candidates:
        if c is not None and (c / "index").is_dir():
            return c
    raise ConfigurationError(
        f"no es_templates directory found (looked at {', '.join(str(c) for c in candidates)})",
        hint="reinstall hybrid-es or set HYBRID_ES_TEMPLATES_DIR",
    )


@dataclass(frozen=True)
class Template:
    """One installable object: its kind, the name it is installed under, and its body."""

    kind: Kind
    name: str
    body: dict[str, Any]
    source: Path

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.body)


def fingerprint(body: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a body, ignoring the fingerprint itself."""
    clean = copy.deepcopy(body)
    meta = clean.get("_meta")
    if isinstance(meta, dict):
        meta.pop(HASH_KEY, None)
    canon = json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"template {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"template {path} must hold a JSON object")
    return data


def load_templates(
    profile: AnalysisProfile = "standard", directory: Path | None = None
) -> list[Template]:
    """Component and index templates to install, in dependency order (components first).

    The two analysis files are alternatives: the one matching ``profile`` is installed under the
    single name ``hybrid-es-analysis`` that the index templates compose.
    """
    root = templates_dir(directory)
    out: list[Template] = []
    for path in sorted((root / "component").glob("*.json")):
        name = path.stem
        if name.startswith(ANALYSIS_TEMPLATE + "-"):
            if name != f"{ANALYSIS_TEMPLATE}-{profile}":
                continue
            name = ANALYSIS_TEMPLATE
        out.append(Template("component", name, _read(path), path))
    for path in sorted((root / "index").glob("*.json")):
        out.append(Template("index", path.stem, _read(path), path))
    _check_composition(out)
    return out


def _check_composition(templates: list[Template]) -> None:
    components = {t.name for t in templates if t.kind == "component"}
    for t in templates:
        if t.kind == "index":
            missing = [c for c in t.body.get("composed_of", []) if c not in components]
            if missing:
                raise ConfigurationError(
                    f"index template {t.name} composes unknown component templates {missing}"
                )


def render_role(tenant: str, *, directory: Path | None = None) -> tuple[str, dict[str, Any]]:
    """The tenant reader role for ``tenant``: its name and body with the tenant filled in."""
    if not tenant or any(ch in tenant for ch in '"\\{}') or tenant != tenant.strip():
        raise ConfigurationError(f"invalid tenant id {tenant!r} for a role")
    path = templates_dir(directory) / "roles" / "hybrid-es-tenant-reader.json"
    body = _fill(_read(path), tenant)
    body.pop("description", None)
    return f"hybrid-es-tenant-reader-{tenant}", body


def _fill(node: Any, tenant: str) -> Any:
    if isinstance(node, dict):
        return {k: _fill(v, tenant) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, tenant) for v in node]
    if isinstance(node, str):
        return node.replace(TENANT_PLACEHOLDER, tenant)
    return node


def with_fingerprint(t: Template) -> dict[str, Any]:
    """The body as installed: a copy whose ``_meta`` records the file's fingerprint."""
    body = copy.deepcopy(t.body)
    body.setdefault("_meta", {})[HASH_KEY] = t.fingerprint
    return body


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
