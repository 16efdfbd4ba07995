"""Installing the templates, indices and roles into a cluster, idempotently.

Everything is the deployment's namespace's (``HYBRID_ES_NAMESPACE``, ``hybrid_es.namespace``):
the templates, pipelines and roles are named for it, and only indices its templates match are
read or brought up, so a bootstrap, forced or not, changes nothing of another namespace.

Nothing is written when any installed template differs from its file, unless ``force`` is set:
the caller sees every difference first. Every check that can fail runs before the first write
(:func:`preflight`: the credentials' privileges, the tenant ids, the licence; then the index
names (``cluster.names``), the template conflicts, and the existing indices' vector fields and
policy fields), so that a refused bootstrap leaves nothing half-installed.

Each index it creates is generation 1 behind an alias of its name (``cluster.generations``), so
that it can be rebuilt beside itself later. Each existing index is reported by the name its
readers use, with what it needs to be what the installed templates would make of it now
(``cluster.index_status``): nothing, the fields it lacks (added in place), or a rebuild, with
the command that does it (``hybrid-es reindex --tenant T``); the refusals above name that
command too.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from hybrid_es.cluster.access import access_of
from hybrid_es.cluster.capabilities import Capabilities
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.cluster.generations import create, current
from hybrid_es.cluster.index_status import IndexStatus, Wanted, missing_properties, rebuild_command
from hybrid_es.cluster.index_survey import served_indices, survey
from hybrid_es.cluster.names import check_names
from hybrid_es.cluster.policy_fields import (
    CHUNKS_SETTING,
    field_types,
    mapping_error,
    matches,
    name_hint,
    wrong_types,
)
from hybrid_es.cluster.security import install_deployment_roles, install_tenant_reader
from hybrid_es.cluster.templates import (
    CHUNKS_TEMPLATE,
    HASH_KEY,
    READER_HINT,
    Flavor,
    Template,
    adapt_pipeline,
    deployment_role_names,
    diff,
    filter_field_conflicts,
    load_pipelines,
    load_templates,
    role_name,
    vector_field_problem,
    with_filterable_fields,
    with_fingerprint,
    with_index_settings,
)
from hybrid_es.cluster.trace_storage import trace_storage_actions, trace_templates
from hybrid_es.errors import (
    AuthenticationError,
    ConfigurationError,
    EngineError,
    TemplateConflictError,
)
from hybrid_es.models import check_tenant
from hybrid_es.namespace import in_namespace
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout

Status = Literal[
    "create",
    "unchanged",
    "conflict",
    "update",
    "missing",
    "legacy",
    "skipped",
    "new-fields",
    "rebuild",
]
"""What bootstrap did or would do to one object. Of an existing index
(``cluster.index_status``): ``unchanged`` (current), ``update`` (fields added in place),
``new-fields`` (fields to add: a check), ``rebuild`` (``command`` rebuilds it) or ``conflict``
(the settings contradict its mapping)."""


@dataclass
class Action:
    kind: str
    name: str
    status: Status
    diff: str = ""
    template: Template | None = field(default=None, repr=False)
    command: str = ""
    """The command that brings an index to what it should be (``rebuild``, ``new-fields``,
    ``conflict``)."""


_PENDING = ("rebuild", "conflict")


@dataclass
class BootstrapReport:
    actions: list[Action] = field(default_factory=list)
    applied: bool = False

    @property
    def changed(self) -> bool:
        return any(a.status in ("create", "update") for a in self.actions)

    @property
    def conflicts(self) -> list[Action]:
        """The templates that differ from their files (the indices' conflicts are in
        :attr:`pending`)."""
        return [a for a in self.actions if a.status == "conflict" and a.kind != "index"]

    @property
    def pending(self) -> list[Action]:
        """The existing indices that need more than bootstrap does: a rebuild, or a change of
        the settings (each with its command)."""
        return [a for a in self.actions if a.kind == "index" and a.status in _PENDING]


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
    """What bootstrap installs on this cluster: the templates in its engine's variant, named for
    the deployment's namespace, with the
    shards and replicas of the settings (:func:`~hybrid_es.cluster.templates.with_index_settings`
    says what to choose on a cluster) and the declared filterable metadata fields in the chunks
    template (``HYBRID_ES_FILTERABLE_FIELDS``:
    :func:`~hybrid_es.cluster.templates.with_filterable_fields`), and on OpenSearch with native
    fusion, the fusion's search pipelines."""
    flavor: Flavor = "opensearch" if caps.flavor == "opensearch" else "elasticsearch"
    templates = load_templates(
        caps.analysis_profile, settings.templates_dir, flavor, settings.namespace
    )
    templates = trace_templates(templates, caps.trace_storage, settings.trace_retention_days)
    templates = with_index_settings(
        templates,
        shards=settings.shards,
        replicas=settings.replicas,
        chunks_shards=settings.chunks_shards,
    )
    templates = with_filterable_fields(templates, settings.filterable_fields)
    if flavor == "opensearch" and (caps.native_rrf or caps.linear_retriever):
        templates += [
            replace(p, body=adapt_pipeline(p.body, caps.rrf_rank_constant_at))
            for p in load_pipelines(settings.templates_dir, settings.namespace)
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
    roles: bool = False,
    create_indices: bool = True,
    models: frozenset[str] | None = None,
) -> BootstrapReport:
    """Install templates (and indices, and tenant roles where the cluster stores roles).

    ``check`` only compares and reports. Every existing index is reported with what it needs
    (:func:`_plan_indices`): nothing, its new fields (added), or a rebuild with the command that
    does it; ``models``: the model ids the configured embedder serves
    (``encoders.embedder_choice.models_served``), against which each index's recorded model is
    checked (None: none is). Where the cluster cannot hold the tenant reader roles
    (security off, a licence without document-level security, no role store) the templates and
    indices are installed and each role is reported ``skipped``, with the reason.

    Raises (each before anything is written): AuthenticationError (403) when the credentials
    lack a privilege that bootstrap, or installing roles, needs (:func:`preflight`);
    ConfigurationError for an invalid tenant id, chunks index names that the chunks template
    does not match (:func:`check_chunks_names`), a packets, traces or corpus state name that
    its template does not shape (``cluster.names.check_names``), or an existing index whose
    vector field cannot be used or whose policy fields have other types than the template's;
    TemplateConflictError when an installed template differs and ``force`` is not set.
    """
    engine = as_engine(client, url=settings.redacted_url())
    skip_roles = "" if check else preflight(caps, tenants, settings.layout(), roles=roles)
    templates = templates_for(caps, settings)
    check_chunks_names(settings.layout(), templates)
    check_names(settings.layout(), templates)
    actions = plan(engine, templates, force=force)
    report = BootstrapReport(actions)
    if check:
        for a in actions:
            if a.status == "create":
                a.status = "missing"
        _plan_indices(
            engine, settings, report, apply=False, traces=caps.trace_storage, models=models
        )
        return report
    if report.conflicts:
        raise TemplateConflictError(
            f"{len(report.conflicts)} installed template(s) differ from es_templates/: "
            + ", ".join(a.name for a in report.conflicts),
            diffs={a.name: a.diff for a in report.conflicts},
            hint="nothing was changed; review the diff and rerun with --force to overwrite",
        )
    if create_indices:
        _check_indices(engine, settings)
    for a in actions:
        if a.status in ("create", "update") and a.template is not None:
            _install(engine, a.template)
    if create_indices:
        _plan_indices(
            engine, settings, report, apply=True, traces=caps.trace_storage, models=models
        )
    if roles:
        if skip_roles:
            report.actions += [
                Action("role", n, "skipped", skip_roles)
                for n in deployment_role_names(settings.namespace)
            ]
        else:
            for kind, name in install_deployment_roles(
                engine, settings.layout(), settings.templates_dir
            ):
                report.actions.append(Action(kind, name, "update"))
    for tenant in tenants:
        if skip_roles:
            report.actions.append(
                Action("role", role_name(tenant, settings.namespace), "skipped", skip_roles)
            )
            continue
        for kind, name in install_tenant_reader(
            engine, tenant, settings.layout(), settings.templates_dir
        ):
            report.actions.append(Action(kind, name, "update"))
    report.applied = True
    return report


def preflight(
    caps: Capabilities,
    tenants: tuple[str, ...] = (),
    layout: IndexLayout | None = None,
    *,
    roles: bool = False,
) -> str:
    """The checks of a bootstrap that need no request beyond the probe, run before its first
    write. Returns why the tenant reader roles will be skipped ("" when they will be installed,
    or none were asked for).

    Raises:
        AuthenticationError (status 403): the probe found the credentials lacking a privilege
            that bootstrap (or, with ``tenants``, installing roles) needs. Unknown privileges
            (OpenSearch without a known role) do not stop it: the cluster will decide.
        ConfigurationError: an invalid tenant id, or reader roles asked for in a layout where
            a reader cannot be confined to one tenant (the shared layout).
    """
    who = caps.user or "these credentials"
    access = access_of(caps.privileges, "bootstrap")
    if access.allowed is False:
        raise AuthenticationError(
            f"{who} may not bootstrap: lacks {'; '.join(access.missing)}; nothing was written",
            hint="bootstrap with a credential that has the hybrid-es-admin role "
            "(es_templates/roles/hybrid-es-admin.json); `hybrid-es capabilities` lists what "
            "each command needs",
            status=403,
        )
    for tenant in tenants:
        try:
            check_tenant(tenant)
        except ValueError as exc:
            raise ConfigurationError(
                f"{exc}; nothing was written", hint="pass a valid tenant id to --tenant"
            ) from exc
    if not tenants and not roles:
        return ""
    why = (layout or IndexLayout()).reader_refused_because()
    if tenants and why:
        raise ConfigurationError(
            f"no tenant reader credentials: {why}; nothing was written", hint=READER_HINT
        )
    skip = roles_skipped_because(caps)
    if skip:
        return skip
    may = access_of(caps.privileges, "bootstrap --tenant")
    if may.allowed is False:
        raise AuthenticationError(
            f"{who} may not install the {'tenant reader ' if tenants else ''}roles: lacks "
            f"{'; '.join(may.missing)}; nothing was written",
            hint="rerun with a security administrator's credential, or bootstrap without "
            "--tenant/--roles and install the roles (es_templates/roles) another way",
            status=403,
        )
    return ""


def check_chunks_names(layout: IndexLayout, templates: list[Template]) -> None:
    """Refuse (ConfigurationError naming ``HYBRID_ES_CHUNKS_INDEX``) a layout whose chunks
    indices the chunks template in ``templates`` would not match: created by ingest (or, in the
    shared layout, by bootstrap), they would get dynamic mappings, ``tenant`` and
    ``acl_groups`` as text, which the policy filter cannot compare exactly. In the
    index-per-tenant layout a tenant's name is derived from the setting (``<chunks>-t-<tenant>``,
    ``tenancy.IndexLayout``), so a derived name is what is matched. Pure."""
    patterns = [
        p
        for t in templates
        if t.kind == "index" and t.key == CHUNKS_TEMPLATE
        for p in t.body.get("index_patterns", [])
    ]
    name = layout.chunks if layout.mode == "shared" else layout.chunks_for("tenant")
    if not matches(name, patterns):
        template = in_namespace(CHUNKS_TEMPLATE, layout.namespace)
        raise ConfigurationError(
            f"the chunks indices {layout.chunks_pattern()} ({CHUNKS_SETTING}={layout.chunks}, "
            f"tenancy {layout.mode}) are not matched by the {template} template "
            f"({', '.join(patterns) or 'no patterns'}): they would get dynamic mappings, tenant "
            "and acl_groups as text, which the policy filter cannot compare exactly; nothing "
            "was written",
            hint=name_hint(layout.namespace),
        )


def roles_skipped_because(caps: Capabilities) -> str:
    """Why this cluster cannot hold the tenant reader roles ("" when it can): a property of the
    cluster (security, licence, role store), not of the credentials."""
    if not caps.security_enabled:
        return "security is off on this cluster: there are no roles to install"
    if caps.flavor == "opensearch":
        return ""
    dls = next((r for r in caps.licence if r.feature == "document-level security"), None)
    if dls is not None and dls.allowed is False:
        return (
            f"the {caps.license_type} licence does not include document-level security "
            f"(needs {dls.needs}); the roles would not be enforced"
        )
    if dls is not None and dls.allowed is None:
        return "the licence could not be read, so document-level security is not known to work"
    if not caps.native_security_store:
        return (
            "this cluster cannot store roles (no native role store: see the notes of "
            "`hybrid-es capabilities`); render them into the file realm instead"
        )
    return ""


def _install(engine: Engine, t: Template) -> None:
    if t.kind == "component":
        engine.put_component_template(t.name, with_fingerprint(t))
    elif t.kind == "pipeline":
        engine.put_search_pipeline(t.name, t.body)
    else:
        engine.put_index_template(t.name, with_fingerprint(t))


def _plan_indices(
    engine: Engine,
    settings: Settings,
    report: BootstrapReport,
    *,
    apply: bool,
    traces: str = "dated-indices",
    models: frozenset[str] | None = None,
) -> None:
    """Create the shared indices (each generation 1 behind its alias: ``cluster.generations``)
    and the traces data stream (``traces``: the trace storage), and report every existing index
    our templates cover (each tenant's chunks index included) by the name its readers use, with
    what it needs (``cluster.index_status``): ``unchanged``; the fields it lacks, added in place
    (``update``; ``new-fields`` without ``apply``); a ``rebuild``, with the command; or a
    ``conflict`` with the settings. ``models``: the model ids the configured embedder serves
    (None: no model is checked)."""
    layout = settings.layout()
    for kind, name, status, note in trace_storage_actions(engine, layout, traces, apply=apply):
        report.actions.append(Action(kind, name, status, note))  # type: ignore[arg-type]
    shared = [layout.packets, layout.corpus_state]
    if layout.mode == "shared":
        shared.insert(0, layout.chunks)
    patterns = ",".join(_template_patterns(settings))
    statuses = survey(engine, patterns, wanted(settings, engine.flavor, models))
    for name in sorted(set(statuses) | set(shared)):
        found = statuses.get(name)
        if found is not None:
            report.actions.append(_index_action(engine, found, apply=apply))
        elif current(engine, name) is not None:  # there, but not open: nothing to bring up
            report.actions.append(Action("index", name, "unchanged"))
        elif apply:
            made = create(engine, name)
            report.actions.append(Action("index", name, "create" if made else "unchanged"))
        else:
            report.actions.append(Action("index", name, "missing"))


def wanted(settings: Settings, flavor: str, models: frozenset[str] | None = None) -> Wanted:
    """What the deployment of ``settings`` wants of its existing indices on an engine of
    ``flavor`` (``cluster.index_status``); ``models``: the model ids its embedder serves."""
    return Wanted(
        layout=settings.layout(),
        flavor=flavor,
        filterable=tuple(settings.filterable_fields),
        embedder=settings.embedder,
        models=models,
        chunks_patterns=tuple(_template_patterns(settings, CHUNKS_TEMPLATE)),
    )


def _index_action(engine: Engine, status: IndexStatus, *, apply: bool) -> Action:
    """The action that reports one existing index, after adding the fields it lacks where
    ``apply`` (also to an index that needs a rebuild: it serves until then, and the writers of
    this version write those fields; where the engine refuses them, the note says so)."""
    added = ""
    if apply and status.missing and status.state in ("new-fields", "rebuild"):
        fields = ", ".join(sorted(status.missing))
        try:
            # Templates only shape new indices; additive field changes reach existing ones here.
            engine.put_mapping(status.index, {"properties": status.missing})
            added = f"added fields: {fields}"
        except EngineError as exc:
            if status.state == "new-fields":
                raise
            added = f"fields not added in place ({exc.message[:200]}): the rebuild adds them"
    if status.state == "current":
        return Action("index", status.name, "unchanged")
    if status.state == "new-fields":
        if apply:
            return Action("index", status.name, "update", diff=added)
        return Action("index", status.name, "new-fields", diff=status.note, command=status.command)
    if added:
        status = replace(status, missing={})  # added (or said why not) in ``added``
    note = "; ".join(p for p in (status.note, added) if p)
    state: Status = "conflict" if status.state == "conflict" else "rebuild"
    return Action("index", status.name, state, diff=note, command=status.command)


def _check_indices(engine: Engine, settings: Settings) -> None:
    """Refuse, before anything is written, an existing index (by the name its readers use: a
    generation that serves no alias is a rebuild's, left out) whose vector field this engine
    cannot use, or that maps a declared filterable field with another type, or a chunks index
    (the chunks template's or the layout's) that maps a policy field with another type than
    the template (one mapping read for all of them). The refusal names the command that
    rebuilds the index (``cluster.index_status.rebuild_command``). A policy field a chunks
    index lacks is not refused here: bootstrap adds it (:func:`_plan_indices`)."""
    layout = settings.layout()
    chunks = [*_template_patterns(settings, CHUNKS_TEMPLATE), layout.chunks_pattern()]
    patterns = ",".join(dict.fromkeys([*_template_patterns(settings), *chunks]))
    mappings = engine.request(
        "GET",
        f"/{patterns}/_mapping",
        params={"expand_wildcards": "open", "allow_no_indices": True, "ignore_unavailable": True},
        what="reading mappings",
    )
    served = served_indices(engine, patterns)
    for name, live in sorted(served.items()):
        body = dict(mappings or {}).get(live.index)
        if body is None:
            continue
        properties = body.get("mappings", {}).get("properties", {})
        command = rebuild_command(live, layout)
        wrong = wrong_types(field_types(properties), unmapped=False)
        if matches(name, chunks) and wrong:
            raise mapping_error(name, wrong, writing=True, command=command)
        field = properties.get("embedding")
        problem = vector_field_problem(engine.flavor, field) if field else None
        if problem:
            raise ConfigurationError(
                f"index {name}: {problem}; nothing was written",
                hint=f"rebuild it from its records with the installed templates' mapping: "
                f"{command}; or set {CHUNKS_SETTING} to a new name that the "
                f"{CHUNKS_TEMPLATE} template matches",
            )
        conflicts = filter_field_conflicts(settings.filterable_fields, properties)
        if conflicts:
            raise ConfigurationError(
                f"index {name} maps filterable fields with other types than "
                f"HYBRID_ES_FILTERABLE_FIELDS declares: {', '.join(conflicts)} (a mapped type "
                "cannot change in place)",
                hint="declare them with their mapped types, or give the field a new name; "
                "nothing was changed",
            )


def _template_patterns(settings: Settings, name: str | None = None) -> list[str]:
    """The index patterns of the deployment's index templates, in its namespace (``name``: of
    that template only, by its default name): they match no other namespace's indices."""
    return [
        p
        for t in load_templates("standard", settings.templates_dir, namespace=settings.namespace)
        if t.kind == "index" and name in (None, t.key)
        for p in t.body.get("index_patterns", [])
    ]


_props_missing = missing_properties
"""Fields (at any depth) that ``want`` defines and ``have`` lacks (``index_status``)."""
