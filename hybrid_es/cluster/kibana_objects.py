"""The Kibana saved objects of one deployment, as data: what ``es_templates/kibana/*.ndjson``
holds, named for the deployment, and which of them an import may write. Pure: reads the files,
never Kibana (``kibana.py`` sends them).

**Named for the deployment** (:func:`saved_objects`): in a namespace (``HYBRID_ES_NAMESPACE``)
every object id and every reference to one is the namespace's (``hybrid-es-traces-dashboard`` ->
``hybrid-es.<ns>-traces-dashboard``) and the titles say the namespace (``hybrid-es <ns> traces``),
so two deployments' dashboards live side by side in one Kibana space. The data view's pattern is
the deployment's traces, ``<HYBRID_ES_TRACES_INDEX>-*``, in every namespace, the default one
included.

**A user's edits are left alone** (:func:`plan_import`). An object that Kibana holds under one of
these ids is compared with what this version writes: the same content (Kibana's own additions
on import, such as fields a migration fills in, do not count as a difference) is left as it is;
other content is a user's edit, or an earlier version's object, and is kept unless the import is
asked to overwrite. Only missing objects are created. A dashboard duplicated in Kibana and edited
there has an id of its own and is never touched.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_es.cluster.templates import templates_dir
from hybrid_es.errors import ConfigurationError
from hybrid_es.namespace import PRODUCT, in_namespace
from hybrid_es.tenancy import IndexLayout

DATA_VIEW = "index-pattern"
"""The saved object type of a data view."""
VOLATILE = (
    "version",
    "updated_at",
    "created_at",
    "created_by",
    "updated_by",
    "namespaces",
    "originId",
    "coreMigrationVersion",
    "typeMigrationVersion",
    "migrationVersion",
    "managed",
)
"""Fields Kibana sets on its own copy of an object (on import, export or migration): left out
when a copy's content is compared with ours."""


def saved_objects(
    layout: IndexLayout | None = None, directory: Path | None = None
) -> list[dict[str, Any]]:
    """Every saved object of ``es_templates/kibana/*.ndjson`` (``directory``: another templates
    folder), in file order, named for ``layout``'s namespace, the data view over its traces
    (module docstring). Raises ConfigurationError for a line that is not a saved object."""
    layout = layout or IndexLayout()
    out = []
    for path in sorted((templates_dir(directory) / "kibana").glob("*.ndjson")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            obj = json.loads(line)
            if not isinstance(obj, dict) or not {"id", "type", "attributes"} <= obj.keys():
                raise ConfigurationError(f"{path.name} line {n} is not a saved object")
            out.append(for_deployment(obj, layout))
    return out


def for_deployment(obj: Mapping[str, Any], layout: IndexLayout) -> dict[str, Any]:
    """One saved object as ``layout``'s deployment writes it (pure): its id and references in
    the namespace, its title naming the namespace, a data view's pattern over the traces."""
    ns = layout.namespace
    out = copy.deepcopy(dict(obj))
    out["id"] = _id(str(obj["id"]), ns)
    out["references"] = [{**r, "id": _id(str(r["id"]), ns)} for r in obj.get("references", [])]
    attributes = out["attributes"]
    for key in ("title", "name"):
        if isinstance(attributes.get(key), str):
            attributes[key] = _title(attributes[key], ns)
    if obj["type"] == DATA_VIEW:
        attributes["title"] = layout.traces_pattern()
    return out


def _id(value: str, namespace: str) -> str:
    return in_namespace(value, namespace) if value.startswith(f"{PRODUCT}-") else value


def _title(value: str, namespace: str) -> str:
    # "hybrid-es traces" -> "hybrid-es ns traces"; "hybrid-es: errors" -> "hybrid-es ns: errors"
    head = value[len(PRODUCT) : len(PRODUCT) + 1]
    if not namespace or not value.startswith(PRODUCT) or head not in (" ", ":"):
        return value
    return f"{PRODUCT} {namespace}{value[len(PRODUCT) :]}"


def ndjson(objects: Iterable[Mapping[str, Any]]) -> bytes:
    """Saved objects as the import API reads them: one compact JSON object a line."""
    return b"".join(
        json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for o in objects
    )


def key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """A saved object's identity in a space: (type, id)."""
    return str(obj["type"]), str(obj["id"])


def content(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a saved object says, without what Kibana sets on its copy (:data:`VOLATILE`):
    its attributes, JSON strings among them parsed (Kibana re-serializes them), and its
    references in a fixed order."""
    refs = sorted(
        obj.get("references", []), key=lambda r: (r.get("type"), r.get("id"), r.get("name"))
    )
    return {"attributes": _parsed(obj.get("attributes", {})), "references": refs}


def _parsed(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _parsed(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_parsed(v) for v in node]
    if isinstance(node, str) and node[:1] in ("{", "["):
        try:
            return _parsed(json.loads(node))
        except ValueError:
            return node
    return node


def holds(current: Any, ours: Any) -> bool:
    """Whether ``current`` says everything ``ours`` says (pure): every key of a mapping of ours
    is in current's with a value that holds ours, lists hold ours item by item (same length),
    anything else is equal. Keys only current has (what Kibana adds) do not matter."""
    if isinstance(ours, dict):
        return isinstance(current, dict) and all(
            k in current and holds(current[k], v) for k, v in ours.items()
        )
    if isinstance(ours, list):
        return (
            isinstance(current, list)
            and len(current) == len(ours)
            and all(holds(c, o) for c, o in zip(current, ours, strict=True))
        )
    return bool(current == ours)


@dataclass(frozen=True)
class ImportPlan:
    """What an import writes, by (type, id): ``create`` (missing in Kibana), ``unchanged``
    (Kibana's copy says what ours does), ``kept`` (Kibana's copy differs: a user's edit or an
    earlier version's object; left alone), ``replace`` (differs, and overwriting was asked)."""

    create: tuple[tuple[str, str], ...] = ()
    unchanged: tuple[tuple[str, str], ...] = ()
    kept: tuple[tuple[str, str], ...] = ()
    replace: tuple[tuple[str, str], ...] = ()

    @property
    def writes(self) -> tuple[tuple[str, str], ...]:
        """The objects to send, in the order of ours."""
        return self.create + self.replace


def plan_import(
    ours: Iterable[Mapping[str, Any]],
    existing: Mapping[tuple[str, str], Mapping[str, Any]],
    *,
    overwrite: bool = False,
) -> ImportPlan:
    """Which of ``ours`` to write, given Kibana's copies of those that exist (``existing``, by
    :func:`key`, as its export gives them): the module docstring's rule. Pure."""
    create: list[tuple[str, str]] = []
    unchanged: list[tuple[str, str]] = []
    kept: list[tuple[str, str]] = []
    replace: list[tuple[str, str]] = []
    for obj in ours:
        k = key(obj)
        if k not in existing:
            create.append(k)
        elif holds(content(existing[k]), content(obj)):
            unchanged.append(k)
        else:
            (replace if overwrite else kept).append(k)
    return ImportPlan(tuple(create), tuple(unchanged), tuple(kept), tuple(replace))
