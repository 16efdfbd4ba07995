"""Installing the templates, indices and roles into a cluster, idempotently.

Nothing is written when any installed template differs from its file, unless ``force`` is set:
the caller sees every difference first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from hybrid_es.cluster.capabilities import Capabilities
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.cluster.security import install_tenant_reader
from hybrid_es.cluster.templates import (
    HASH_KEY,
    Flavor,
    Template,
    adapt_pipeline,
    diff,
    load_pipelines,
    load_templates,
    vector_field_problem,
    with_fingerprint,
)
from hybrid_es.errors import ConfigurationError, IndexMissingError, TemplateConflictError
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


def installed_template(client: Engine | Any, t: Template) -> dict[str, Any] | None:
    """The body of ``t`` as installed, or None when it is not installed."""
    engine = as_engine(client)
    if t.kind == "component":
        return engine.get_component_template(t.name)
    if t.kind == "pipeline":
        return engine.get_search_pipeline(t.name)
    return engine.get_index_template(t.name)


def _kind(t: Template) -> str:
    return "search pipeline" if t.kind == "pipeline" else f"{t.kind} template"


def plan(client: Engine | Any, templates: list[Template], *, force: bool = False) -> list[Action]:
    """Compare each template with what is installed; no writes. A template carries its file's
    fingerprint in ``_meta``; a search pipeline (which has none) is compared whole."""
    actions = []
    for t in templates:
        current = installed_template(client, t)
        if current is None:
            actions.append(Action(_kind(t), t.name, "create", template=t))
            continue
        same = (
            current == t.body
            if t.kind == "pipeline"
            else (current.get("_meta") or {}).get(HASH_KEY) == t.fingerprint
        )
        if same:
            actions.append(Action(_kind(t), t.name, "unchanged", template=t))
            continue
        status: Status = "update" if force else "conflict"
        actions.append(Action(_kind(t), t.name, status, diff(current, t.body, t.name), template=t))
    return actions


def templates_for(caps: Capabilities, settings: Settings) -> list[Template]:
    """What bootstrap installs on this cluster: the templates in its engine's variant, and on
    OpenSearch with native fusion, the fusion's search pipelines."""
    flavor: Flavor = "opensearch" if caps.flavor == "opensearch" else "elasticsearch"
    templates = load_templates(caps.analysis_profile, settings.templates_dir, flavor)
    if flavor == "opensearch" and (caps.native_rrf or caps.linear_retriever):
        templates += [
            replace(p, body=adapt_pipeline(p.body, caps.rrf_rank_constant_at))
            for p in load_pipelines(settings.templates_dir)
        ]
    return templates


def bootstrap(
    client: Engine | Any,
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
    engine = as_engine(client, url=settings.redacted_url())
    if tenants and not caps.native_security_store and not check:
        raise ConfigurationError(
            "this cluster cannot store roles with document-level security, so the tenant reader "
            "roles cannot be installed; nothing was changed",
            hint="see `hybrid-es capabilities`: Elasticsearch needs its native security index, "
            "OpenSearch the security plugin and an admin user; or bootstrap without --tenant",
        )
    templates = templates_for(caps, settings)
    actions = plan(engine, templates, force=force)
    report = BootstrapReport(actions)
    if check:
        for a in actions:
            if a.status == "create":
                a.status = "missing"
        _plan_indices(engine, settings, report, apply=False)
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
            _install(engine, a.template)
    if create_indices:
        _plan_indices(engine, settings, report, apply=True)
    for tenant in tenants:
        for kind, name in install_tenant_reader(engine, tenant, settings.templates_dir):
            report.actions.append(Action(kind, name, "update"))
    report.applied = True
    return report


def _install(engine: Engine, t: Template) -> None:
    if t.kind == "component":
        engine.put_component_template(t.name, with_fingerprint(t))
    elif t.kind == "pipeline":
        engine.put_search_pipeline(t.name, t.body)
    else:
        engine.put_index_template(t.name, with_fingerprint(t))


def _plan_indices(
    engine: Engine, settings: Settings, report: BootstrapReport, *, apply: bool
) -> None:
    """Create the shared indices, and bring every existing index our templates cover (each
    tenant's chunks index included) up to the templates' fields."""
    layout = settings.layout()
    shared = [layout.packets, layout.traces, layout.corpus_state]
    if layout.mode == "shared":
        shared.insert(0, layout.chunks)
    existing = _existing_indices(engine, settings)
    for index in sorted(set(existing) | set(shared)):
        if index in existing:
            try:
                problem = _vector_problem(engine, index)
                missing = _missing_fields(engine, index)
            except IndexMissingError:  # deleted since it was listed: nothing to bring up
                continue
            if problem:
                raise ConfigurationError(f"index {index}: {problem}", hint=_REBUILD_HINT)
            if not missing:
                report.actions.append(Action("index", index, "unchanged"))
            elif apply:
                # Templates only shape new indices; additive field changes reach existing ones here.
                engine.put_mapping(index, {"properties": missing})
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
            engine.create_index(index)
            report.actions.append(Action("index", index, "create"))
        else:
            report.actions.append(Action("index", index, "missing"))


_REBUILD_HINT = (
    "nothing was changed; re-create the index with the hybrid-es template (delete it and "
    "re-ingest), or point HYBRID_ES_INDEX_PREFIX elsewhere"
)


def _existing_indices(engine: Engine, settings: Settings) -> list[str]:
    """Every open index matching one of the installed index templates' patterns."""
    patterns = [
        p
        for t in load_templates("standard", settings.templates_dir)
        if t.kind == "index"
        for p in t.body.get("index_patterns", [])
    ]
    return engine.indices(",".join(patterns))


def _vector_problem(engine: Engine, index: str) -> str | None:
    """Why an existing index's vector field cannot be used on this engine, if it cannot."""
    (mapping,) = engine.get_mapping(index).values()
    field = mapping.get("properties", {}).get("embedding")
    return vector_field_problem(engine.flavor, field) if field else None


def _missing_fields(engine: Engine, index: str) -> dict[str, Any]:
    """Fields (at any depth) that the current templates define and the existing index lacks."""
    simulated = engine.simulate_index_template(index)
    want = simulated["template"].get("mappings", {}).get("properties", {})
    (current,) = engine.get_mapping(index).values()
    return _props_missing(want, current.get("properties", {}))


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
