"""The JSON under ``es_templates/`` as data: loading, choosing, and shaping it by the settings.

Pure: reads files, never the network. ``bootstrap.py`` installs what this module describes.
What is done to a body once it is read (the OpenSearch merge patch, the fingerprint, the diff
against what is installed) is ``template_bodies.py``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from hybrid_es.cluster.template_bodies import HASH_KEY as HASH_KEY  # re-exported: bootstrap
from hybrid_es.cluster.template_bodies import diff as diff  # re-exported: bootstrap
from hybrid_es.cluster.template_bodies import fingerprint, merge_patch
from hybrid_es.errors import ConfigurationError
from hybrid_es.metadata_fields import FILTER_OBJECT, MAPPED_AS, FilterableField
from hybrid_es.models import check_tenant
from hybrid_es.namespace import in_namespace
from hybrid_es.tenancy import IndexLayout

Kind = Literal["component", "index", "role", "pipeline"]
AnalysisProfile = Literal["standard", "full"]
Flavor = Literal["elasticsearch", "opensearch"]

ANALYSIS_TEMPLATE = "hybrid-es-analysis"
SETTINGS_TEMPLATE = "hybrid-es-settings"
"""The component template of the settings every hybrid-es index shares (shards, replicas)."""
CHUNKS_TEMPLATE = "hybrid-es-chunks"
PACKETS_TEMPLATE = "hybrid-es-packets"
CORPUS_STATE_TEMPLATE = "hybrid-es-corpus-state"
TRACES_TEMPLATE = "hybrid-es-traces"
"""The index template of the dated traces indices (``<traces>-YYYY.MM.DD``); the data stream's
is ``trace_storage.STREAM_TEMPLATE``."""
TENANT_PLACEHOLDER = "{{tenant}}"
READER_HINT = (
    "set HYBRID_ES_TENANCY=index-per-tenant (the default) and re-ingest each tenant into its "
    "own index (docs/tenancy.md); the library's policy filter still confines every search "
    "made with the hybrid-es-app credential"
)


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
    """One installable object: its kind, the name it is installed under, and its body. ``key``
    is its name in the default namespace (what this module's constants name: the same in
    every namespace); empty, the name."""

    kind: Kind
    name: str
    body: dict[str, Any]
    source: Path
    key: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", self.name)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.body)


def in_namespace_template(t: Template, namespace: str) -> Template:
    """``t`` as ``namespace`` installs it (pure): its name, its index patterns and the component
    templates it composes renamed (``hybrid-es-chunks*`` -> ``hybrid-es.<ns>-chunks*``:
    ``hybrid_es.namespace``); the mappings and settings as the file has them. Unchanged in the
    default namespace."""
    if not namespace:
        return t
    body = copy.deepcopy(t.body)
    if "index_patterns" in body:
        body["index_patterns"] = [in_namespace(p, namespace) for p in body["index_patterns"]]
    if "composed_of" in body:
        body["composed_of"] = [in_namespace(c, namespace) for c in body["composed_of"]]
    return replace(t, name=in_namespace(t.key, namespace), body=body)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"template {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"template {path} must hold a JSON object")
    return data


def load_templates(
    profile: AnalysisProfile = "standard",
    directory: Path | None = None,
    flavor: Flavor = "elasticsearch",
    namespace: str = "",
) -> list[Template]:
    """Component and index templates to install, in dependency order (components first).

    The two analysis files are alternatives: the one matching ``profile`` is installed under the
    single name ``hybrid-es-analysis`` that the index templates compose. On OpenSearch, a file of
    the same name under ``opensearch/`` is a JSON merge patch (RFC 7386) over each body. In a
    ``namespace`` each is renamed for it (:func:`in_namespace_template`).
    """
    root = templates_dir(directory)
    out: list[Template] = []
    for kind, folder in (("component", "component"), ("index", "index")):
        for path in sorted((root / folder).glob("*.json")):
            name = path.stem
            if name.startswith(ANALYSIS_TEMPLATE + "-"):
                if name != f"{ANALYSIS_TEMPLATE}-{profile}":
                    continue
                name = ANALYSIS_TEMPLATE
            body = _read(path)
            patch = root / "opensearch" / folder / path.name
            if flavor == "opensearch" and patch.is_file():
                body = merge_patch(body, _read(patch))
            t = Template(kind, name, body, path)  # type: ignore[arg-type]
            out.append(in_namespace_template(t, namespace))
    _check_composition(out)
    return out


def with_index_settings(
    templates: list[Template],
    *,
    shards: int = 1,
    replicas: str = "0-1",
    chunks_shards: int | None = None,
) -> list[Template]:
    """The templates with the shard and replica counts of the settings (pure): ``shards`` and
    ``replicas`` in the component that every index composes (``hybrid-es-settings``), and
    ``chunks_shards``, when set, in the chunks index template, which wins over the component for
    the chunks indices. ``replicas`` is a number (``number_of_replicas``, no auto-expansion) or a
    range (``auto_expand_replicas``: ``0-1``, ``1-all``). The values replace those of the files.

    The defaults (1 primary; replicas ``0-1``: none on one node, one from two nodes up) suit a
    single node, where a replica could never be allocated and the cluster would stay yellow.

    **On a cluster** (``HYBRID_ES_SHARDS``, ``HYBRID_ES_CHUNKS_SHARDS``, ``HYBRID_ES_REPLICAS``):

    - Replicas: 1 from two data nodes up (the default range gives it; or set ``1``). Every index
      then survives the loss of a node with no acknowledged write lost, and searches spread over
      both copies. 2 only to survive two nodes lost at once or for more search throughput, and
      never more than the data nodes minus one (a copy is never put on its primary's node).
    - Chunks shards: 1 primary until a shard would outgrow Elastic's sizing guide (10-50 GB and
      under 200M documents per shard: "Size your shards" in the Elasticsearch docs); beyond, as
      many as keep each within it, rounded to a multiple of the data nodes so that they share
      the work. Every shard runs its own kNN graph search with the full ``num_candidates``, so
      shards beyond what the size needs cost latency. The primaries are fixed at creation: more
      means a new index and a re-ingest (or the split API).
    - ``shards`` (packets, traces, corpus state): keep 1. They stay small, and the traces data
      stream rolls over.
    - With ``index-per-tenant`` tenancy every tenant's chunks index gets ``chunks_shards``
      primaries and the replicas: keep 1 primary there (docs/tenancy.md: shards per node are
      that mode's limit).

    Bootstrap writes these into the templates, which shape indices created afterwards; the
    replicas of an existing index change with ``PUT <index>/_settings``.
    """
    out = []
    for t in templates:
        if t.kind == "component" and t.key == SETTINGS_TEMPLATE:
            body = copy.deepcopy(t.body)
            index = _index_settings(body)
            index["number_of_shards"] = int(shards)
            if replicas.isdigit():
                index.pop("auto_expand_replicas", None)
                index["number_of_replicas"] = int(replicas)
            else:
                index.pop("number_of_replicas", None)
                index["auto_expand_replicas"] = replicas
            t = replace(t, body=body)
        elif t.kind == "index" and t.key == CHUNKS_TEMPLATE and chunks_shards is not None:
            body = copy.deepcopy(t.body)
            _index_settings(body)["number_of_shards"] = int(chunks_shards)
            t = replace(t, body=body)
        out.append(t)
    return out


def filter_mapping(fields: Sequence[FilterableField]) -> dict[str, Any]:
    """The chunks mapping's ``meta_filter`` field for the declared filterable ``fields``: an
    object that indexes exactly these typed sub-fields (``dynamic: false``: anything else
    written under it would be stored, never indexed). Pure."""
    return {
        "type": "object",
        "dynamic": False,
        "properties": {f.name: {"type": MAPPED_AS[f.type]} for f in fields},
    }


def with_filterable_fields(
    templates: list[Template], fields: Sequence[FilterableField]
) -> list[Template]:
    """The templates with the declared filterable metadata fields mapped in the chunks index
    template (:func:`filter_mapping` as its ``meta_filter`` field), the fixed part staying as
    the file has it. No fields: the templates unchanged (no ``meta_filter`` at all). Pure.

    The fields change the template's fingerprint, so a changed declaration shows as a
    difference to install (``bootstrap --force``), and bootstrap then adds the new sub-fields
    to the existing chunks indices; a sub-field an index maps with another type is refused
    (:func:`filter_field_conflicts`)."""
    if not fields:
        return templates
    out = []
    for t in templates:
        if t.kind == "index" and t.key == CHUNKS_TEMPLATE:
            body = copy.deepcopy(t.body)
            mappings = body.setdefault("template", {}).setdefault("mappings", {})
            mappings.setdefault("properties", {})[FILTER_OBJECT] = filter_mapping(fields)
            t = replace(t, body=body)
        out.append(t)
    return out


def filter_field_conflicts(
    fields: Sequence[FilterableField], properties: dict[str, Any]
) -> list[str]:
    """Each declared field that an existing index's mapping ``properties`` already holds under
    ``meta_filter`` with another type (a mapped type cannot change in place), as
    ``name (mapped as X, declared Y)``. Pure."""
    mapped = (properties.get(FILTER_OBJECT) or {}).get("properties") or {}
    out = []
    for f in fields:
        have = (mapped.get(f.name) or {}).get("type")
        if have is not None and have != MAPPED_AS[f.type]:
            out.append(f"{f.name} (mapped as {have}, declared {f.type})")
    return out


def _index_settings(body: dict[str, Any]) -> dict[str, Any]:
    settings = body.setdefault("template", {}).setdefault("settings", {})
    index: dict[str, Any] = settings.setdefault("index", {})
    return index


def load_pipelines(directory: Path | None = None, namespace: str = "") -> list[Template]:
    """OpenSearch's search pipelines of the native fusion (``opensearch/pipelines/``), named
    for ``namespace``."""
    root = templates_dir(directory) / "opensearch" / "pipelines"
    return [
        in_namespace_template(Template("pipeline", p.stem, _read(p), p), namespace)
        for p in sorted(root.glob("*.json"))
    ]


PIPELINES = {"rrf": "hybrid-es-rrf", "linear": "hybrid-es-linear"}
"""The search pipeline of each native fusion method on OpenSearch (``opensearch/pipelines/``)."""


RankConstantAt = Literal["parameters", "combination"]
"""Where the RRF processor reads its rank constant: ``combination.parameters.rank_constant``
(neural-search 2.19) or ``combination.rank_constant`` (3.x, whose ``parameters`` take only
``weights``; 2.19 ignores a rank constant there, silently). The capability probe finds out."""


def pipeline_definition(
    method: str,
    *,
    rank_constant: int,
    alpha: float,
    rank_constant_at: RankConstantAt = "parameters",
    directory: Path | None = None,
) -> dict[str, Any]:
    """The search pipeline of ``method`` with these parameters: the installed file's processors,
    with its rank constant (RRF) or weights (``1 - alpha`` for BM25, ``alpha`` for kNN) replaced.
    The searcher sends this inline, so a request always fuses with its own parameters."""
    if method not in PIPELINES:
        raise ConfigurationError(
            f"unknown fusion method {method!r}; use one of {sorted(PIPELINES)}"
        )
    path = templates_dir(directory) / "opensearch" / "pipelines" / f"{PIPELINES[method]}.json"
    body = _read(path)
    (processor,) = body["phase_results_processors"]
    ((_, spec),) = processor.items()
    params = spec["combination"].setdefault("parameters", {})
    if method == "rrf":
        params["rank_constant"] = int(rank_constant)
    else:
        params["weights"] = [round(1.0 - alpha, 12), float(alpha)]
    return adapt_pipeline(
        {"phase_results_processors": body["phase_results_processors"]}, rank_constant_at
    )


def adapt_pipeline(body: dict[str, Any], rank_constant_at: RankConstantAt) -> dict[str, Any]:
    """A pipeline body (as the files spell it: the 2.19 form) in the form this engine reads."""
    body = copy.deepcopy(body)
    if rank_constant_at == "combination":
        for processor in body.get("phase_results_processors", []):
            for spec in processor.values():
                combination = spec.get("combination", {})
                params = combination.get("parameters", {})
                if "rank_constant" in params:
                    combination["rank_constant"] = params.pop("rank_constant")
                    if not params:
                        combination.pop("parameters")
    return body


def vector_field_problem(flavor: str, field: dict[str, Any]) -> str | None:
    """Why an index's vector field mapping cannot serve hybrid-es on this engine (None: it can).

    On OpenSearch only the lucene k-NN engine will do: faiss (2.19's default) and nmslib need a
    native library that the Maven distribution lacks, and the first document indexed into such a
    field stops the node.
    """
    if flavor != "opensearch":
        return None
    if field.get("type") != "knn_vector":
        return f"its embedding field is {field.get('type')!r}, not knn_vector"
    engine = (field.get("method") or {}).get("engine")
    if engine != "lucene":
        return (
            f"its embedding field uses the k-NN engine {engine or 'faiss (the default)'!r}; "
            "hybrid-es needs the lucene engine (faiss and nmslib need native libraries that "
            "the Maven distribution lacks, and indexing into such a field stops the node)"
        )
    return None


def vector_dims(field: dict[str, Any]) -> int | None:
    """The dimension of a vector field's mapping, as either engine spells it."""
    dims = field.get("dims", field.get("dimension"))
    return None if dims is None else int(dims)


def _check_composition(templates: list[Template]) -> None:
    components = {t.name for t in templates if t.kind == "component"}
    for t in templates:
        if t.kind == "index":
            missing = [c for c in t.body.get("composed_of", []) if c not in components]
            if missing:
                raise ConfigurationError(
                    f"index template {t.name} composes unknown component templates {missing}"
                )


def render_role(
    tenant: str,
    layout: IndexLayout | None = None,
    *,
    directory: Path | None = None,
    flavor: Flavor = "elasticsearch",
) -> tuple[str, dict[str, Any]]:
    """The tenant reader role for ``tenant``, in the engine's format: its name and body with the
    tenant and its own index names filled in (on OpenSearch, inside the ``dls`` query string as
    well). The role names exactly ``tenant``'s chunks index in ``layout`` (default: the default
    index names, one index per tenant) and its corpus state, never a pattern.

    Raises ConfigurationError for an invalid tenant id, and for a layout in which a reader
    cannot be confined to one tenant (:meth:`IndexLayout.reader_refused_because`)."""
    layout = layout or IndexLayout()
    try:
        check_tenant(tenant)
    except ValueError as exc:
        raise ConfigurationError(
            f"invalid tenant id for a role: {exc}", hint="pass a valid tenant id to --tenant"
        ) from exc
    why = layout.reader_refused_because()
    if why:
        raise ConfigurationError(f"no reader role for tenant {tenant!r}: {why}", hint=READER_HINT)
    root = templates_dir(directory)
    path = root / "roles" / "hybrid-es-tenant-reader.json"
    if flavor == "opensearch":
        path = root / "opensearch" / "roles" / "hybrid-es-tenant-reader.json"
    fills = {
        TENANT_PLACEHOLDER: tenant,
        "{{chunks_index}}": layout.chunks_for(tenant),
        "{{corpus_state_index}}": layout.corpus_state,
    }
    body = _fill(_read(path), fills)
    if flavor == "elasticsearch":
        body.pop("description", None)
    return role_name(tenant, layout.namespace), body


DEPLOYMENT_ROLES = (
    "hybrid-es-admin",
    "hybrid-es-ingest",
    "hybrid-es-app",
    "hybrid-es-trace-reader",
)
"""The least-privilege roles of a deployment, one per process kind (README "Deploy with least
privilege"), and one for the people who read the traces in Kibana (read-only, the traces alone:
docs/deploying.md); ``bootstrap --roles`` installs them, named for the deployment's namespace
(:func:`deployment_role_names`)."""


def deployment_role_names(namespace: str = "") -> tuple[str, ...]:
    """:data:`DEPLOYMENT_ROLES` as ``namespace`` names them (``hybrid-es.<ns>-admin``, ...)."""
    return tuple(in_namespace(name, namespace) for name in DEPLOYMENT_ROLES)


_DEFAULT_PREFIXES = (
    ("hybrid-es-corpus-state", "corpus_state"),
    ("hybrid-es-chunks", "chunks"),
    ("hybrid-es-packets", "packets"),
    ("hybrid-es-traces", "traces"),
)


def render_deployment_role(
    name: str,
    layout: IndexLayout | None = None,
    *,
    directory: Path | None = None,
    flavor: Flavor = "elasticsearch",
) -> dict[str, Any]:
    """The body of one of :data:`DEPLOYMENT_ROLES` in the engine's format, its index patterns
    moved onto ``layout``'s index names (``hybrid-es-chunks*`` -> ``<chunks>*``). Raises
    ConfigurationError for a name that is not one of them."""
    if name not in DEPLOYMENT_ROLES:
        raise ConfigurationError(
            f"{name!r} is not a hybrid-es role", hint=f"one of {', '.join(DEPLOYMENT_ROLES)}"
        )
    layout = layout or IndexLayout()
    root = templates_dir(directory)
    path = root / ("opensearch/roles" if flavor == "opensearch" else "roles") / f"{name}.json"
    body = _read(path)
    key = "index_permissions" if flavor == "opensearch" else "indices"
    names = "index_patterns" if flavor == "opensearch" else "names"
    for entry in body.get(key, []):
        entry[names] = [_on_layout(pattern, layout) for pattern in entry[names]]
    if flavor == "elasticsearch":
        body.pop("description", None)
    return body


def _on_layout(pattern: str, layout: IndexLayout) -> str:
    for prefix, attr in _DEFAULT_PREFIXES:
        if pattern.startswith(prefix):
            return str(getattr(layout, attr)) + pattern[len(prefix) :]
    return pattern


def role_name(tenant: str, namespace: str = "") -> str:
    """The name of ``tenant``'s reader role in ``namespace``."""
    return in_namespace(f"hybrid-es-tenant-reader-{tenant}", namespace)


def backend_role(tenant: str, namespace: str = "") -> str:
    """The backend role an OpenSearch user carries to be mapped to a tenant's reader role (of
    ``namespace``)."""
    return in_namespace(f"hybrid-es-tenant-{tenant}", namespace)


def _fill(node: Any, fills: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {k: _fill(v, fills) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, fills) for v in node]
    if isinstance(node, str):
        for placeholder, value in fills.items():
            node = node.replace(placeholder, value)
        return node
    return node


def with_fingerprint(t: Template) -> dict[str, Any]:
    """The body as installed: a copy whose ``_meta`` records the file's fingerprint."""
    body = copy.deepcopy(t.body)
    body.setdefault("_meta", {})[HASH_KEY] = t.fingerprint
    return body
