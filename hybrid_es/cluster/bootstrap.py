"""Installing the templates, indices and roles into a cluster, idempotently.

Nothing is written when any installed template differs from its file, unless ``force`` is set:
the caller sees every difference first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from elasticsearch import ApiError, Elasticsearch, NotFoundError

from hybrid_es.cluster.capabilities import Capabilities
from hybrid_es.cluster.templates import (
    HASH_KEY,
    Template,
    diff,
    load_templates,
    render_role,
    with_fingerprint,
)
from hybrid_es.errors import TemplateConflictError, translate_es_error
from hybrid_es.settings import Settings

Status = Literal["create", "unchanged", "conflict", "update", "missing"]


@dataclass
class Action:
    kind: str
    name: str
    status: Status
    diff: str = ""
    template: Template | None = field(default=None, repr=False)


@dataclass
class BootstrapReport:
    actions: list[Action] = field(default_factory=list)
    applied: bool = False

    @property
    def changed(self) -> bool:
        return any(a.status in ("create", "update") for a in self.actions)

    @property
    def conflicts(self) -> list[Action]:
        return [a for a in self.actions if a.status == "conflict"]


def installed_template(client: Elasticsearch, t: Template) -> dict[str, Any] | None:
    """The body of ``t`` as installed, or None when it is not installed."""
    try:
        if t.kind == "component":
            resp = client.cluster.get_component_template(name=t.name)
            return dict(resp.body["component_templates"][0]["component_template"])
        resp = client.indices.get_index_template(name=t.name)
        return dict(resp.body["index_templates"][0]["index_template"])
    except NotFoundError:
        return None


def plan(client: Elasticsearch, templates: list[Template], *, force: bool = False) -> list[Action]:
    """Compare each template with what is installed; no writes."""
    actions = []
    for t in templates:
        current = installed_template(client, t)
        if current is None:
            actions.append(Action(f"{t.kind} template", t.name, "create", template=t))
            continue
        if (current.get("_meta") or {}).get(HASH_KEY) == t.fingerprint:
            actions.append(Action(f"{t.kind} template", t.name, "unchanged", template=t))
            continue
        status: Status = "update" if force else "conflict"
        actions.append(
            Action(f"{t.kind} template", t.name, status, diff(current, t.body, t.name), template=t)
        )
    return actions


def bootstrap(
    client: Elasticsearch,
    caps: Capabilities,
    settings: Settings,
    *,
    force: bool = False,
    check: bool = False,
    tenants: tuple[str, ...] = (),
    create_indices: bool = True,
) -> BootstrapReport:
    """Install templates (and indices, and tenant roles where the cluster stores roles).

    ``check`` only compares and reports. Raises TemplateConflictError (nothing written) when an
    installed template differs and ``force`` is not set.
    """
    url = settings.redacted_url()
    try:
        templates = load_templates(caps.analysis_profile, settings.templates_dir)
        actions = plan(client, templates, force=force)
        report = BootstrapReport(actions)
        if check:
            for a in actions:
                if a.status == "create":
                    a.status = "missing"
            _plan_indices(client, settings, report, apply=False)
            return report
        if report.conflicts:
            raise TemplateConflictError(
                f"{len(report.conflicts)} installed template(s) differ from es_templates/: "
                + ", ".join(a.name for a in report.conflicts),
                diffs={a.name: a.diff for a in report.conflicts},
                hint="nothing was changed; review the diff and rerun with --force to overwrite",
            )
        for a in actions:
            if a.status in ("create", "update") and a.template is not None:
                t = a.template
                body = with_fingerprint(t)
                if t.kind == "component":
                    client.cluster.put_component_template(name=t.name, body=body)
                else:
                    client.indices.put_index_template(name=t.name, body=body)
        if create_indices:
            _plan_indices(client, settings, report, apply=True)
        if tenants and caps.native_security_store:
            for tenant in tenants:
                name, role = render_role(tenant, directory=settings.templates_dir)
                client.security.put_role(name=name, body=role)
                report.actions.append(Action("role", name, "update"))
        report.applied = True
        return report
    except TemplateConflictError:
        raise
    except ApiError as exc:
        raise translate_es_error(exc, url=url, what="bootstrap") from exc


def _plan_indices(
    client: Elasticsearch, settings: Settings, report: BootstrapReport, *, apply: bool
) -> None:
    """Create the shared indices, and bring every existing index our templates cover (each
    tenant's chunks index included) up to the templates' fields."""
    layout = settings.layout()
    shared = [layout.packets, layout.traces, layout.corpus_state]
    if layout.mode == "shared":
        shared.insert(0, layout.chunks)
    existing = _existing_indices(client, settings)
    for index in sorted(set(existing) | set(shared)):
        if index in existing:
            missing = _missing_fields(client, index)
            if not missing:
                report.actions.append(Action("index", index, "unchanged"))
            elif apply:
                # Templates only shape new indices; additive field changes reach existing ones here.
                client.indices.put_mapping(index=index, properties=missing)
                report.actions.append(
                    Action(
                        "index", index, "update", diff="added fields: " + ", ".join(sorted(missing))
                    )
                )
            else:
                report.actions.append(
                    Action(
                        "index",
                        index,
                        "conflict",
                        diff="missing fields: " + ", ".join(sorted(missing)),
                    )
                )
        elif apply:
            client.indices.create(index=index)
            report.actions.append(Action("index", index, "create"))
        else:
            report.actions.append(Action("index", index, "missing"))


def _existing_indices(client: Elasticsearch, settings: Settings) -> list[str]:
    """Every open index matching one of the installed index templates' patterns."""
    patterns = [
        p
        for t in load_templates("standard", settings.templates_dir)
        if t.kind == "index"
        for p in t.body.get("index_patterns", [])
    ]
    found = client.indices.get(
        index=",".join(patterns),
        expand_wildcards="open",
        allow_no_indices=True,
        ignore_unavailable=True,
        filter_path="*.settings.index.provided_name",
    )
    return sorted(found.body or {})


def _missing_fields(client: Elasticsearch, index: str) -> dict[str, Any]:
    """Fields (at any depth) that the current templates define and the existing index lacks."""
    simulated = client.indices.simulate_index_template(name=index)
    want = simulated["template"].get("mappings", {}).get("properties", {})
    (current,) = client.indices.get_mapping(index=index).body.values()
    return _props_missing(want, current["mappings"].get("properties", {}))


def _props_missing(want: dict[str, Any], have: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in want.items():
        if name not in have:
            out[name] = spec
        elif "properties" in spec:
            sub = _props_missing(spec["properties"], have[name].get("properties", {}))
            if sub:
                out[name] = {
                    **{k: v for k, v in spec.items() if k != "properties"},
                    "properties": sub,
                }
    return out
