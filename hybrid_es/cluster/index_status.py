"""What an existing index needs to be what the installed templates would make of it now: nothing
(``current``), only the fields it lacks (``new-fields``: added in place, as bootstrap does), or a
rebuild (``rebuild``: the next generation built from the records already stored, ``hybrid-es
reindex``), with the command that does it. Pure: the reads are ``index_survey``'s.

A mapped type, a vector field, an analysis or an embedding model cannot change in place: each
is a rebuild. A chunks index needs one when

- its vector field cannot serve on this engine (OpenSearch: a k-NN engine other than lucene), or
  holds vectors of another dimension than a new index's field;
- it maps a field of the policy filter, or a filterable metadata field, otherwise than a new
  index would;
- its analysis settings differ from a new index's (another analysis profile installed since);
- it records an embedding model that the model the deployment fixes (``HYBRID_ES_EMBEDDER``,
  not ``auto``) does not serve as it is: ``Wanted.models``, which the caller takes from
  ``encoders.embedder_choice.models_served`` (a fixed MiniLM serves the records of both MiniLM
  runtimes: an index written by float32 MiniLM is searched and written on float32).

A filterable field that ``HYBRID_ES_FILTERABLE_FIELDS`` declares with another type than the
index maps it is a ``conflict``: the settings contradict the data, and no rebuild from the
installed templates changes it (their type is the index's until bootstrap installs the
declared one, which it refuses to do over such an index).

The vector field and policy field problems are ``refused``: bootstrap refuses to write
anything while an index has one (the index cannot be searched safely as it is).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hybrid_es.cluster.generations import Generation
from hybrid_es.cluster.policy_fields import (
    CHUNKS_SETTING,
    describe,
    field_types,
    matches,
    wrong_types,
)
from hybrid_es.cluster.templates import filter_field_conflicts, vector_dims, vector_field_problem
from hybrid_es.metadata_fields import FILTER_OBJECT, FilterableField
from hybrid_es.tenancy import TENANT_INDEX_INFIX, IndexLayout, tenant_of_part

State = Literal["current", "new-fields", "rebuild", "conflict"]
AUTO = "auto"
"""``HYBRID_ES_EMBEDDER``'s value that fixes no model (``encoders.embedder_choice.AUTO``)."""
ANALYSIS_PARTS = ("analyzer", "tokenizer", "filter", "char_filter", "normalizer")
"""The sections of an index's analysis settings, compared name by name."""
SHARED_REBUILD = (
    "set {setting} to a new name, run `hybrid-es bootstrap` and ingest every tenant again into "
    "it (`hybrid-es reindex` rebuilds a tenant's own index, in the index-per-tenant layout; "
    "this index is no one tenant's: the shared layout's, or another)"
)
"""What rebuilds an index of no tenant (``hybrid-es reindex`` refuses the shared layout)."""


@dataclass(frozen=True)
class Wanted:
    """What the deployment wants of its indices, beyond what the installed templates give a new
    one: its ``layout`` (the names in a command), its engine's ``flavor``, the ``filterable``
    fields it declares, its ``embedder`` setting (``auto``, or the name of the model it
    fixes), the model ids an index may record for that embedder to serve it (``models``; None:
    any, as ``auto`` takes each index's own) and the chunks template's index patterns
    (``chunks_patterns``: which indices are chunks indices, besides those of the layout)."""

    layout: IndexLayout
    flavor: str = "elasticsearch"
    filterable: tuple[FilterableField, ...] = ()
    embedder: str = AUTO
    models: frozenset[str] | None = None
    chunks_patterns: tuple[str, ...] = ()

    def is_chunks(self, name: str) -> bool:
        return matches(name, [*self.chunks_patterns, self.layout.chunks_pattern()])


@dataclass(frozen=True)
class IndexStatus:
    """One existing index: ``name`` (what readers name: an alias, or an earlier release's index
    itself), ``index`` (the physical one), its ``state``, the ``missing`` properties (at any
    depth) that a new index would have, why it needs a rebuild (``reasons``, of which
    ``refused`` are those bootstrap refuses to write over) or has a ``conflicts`` with the
    settings, and the ``command`` that brings it to what it should be ("" when current)."""

    name: str
    index: str
    aliased: bool
    state: State
    missing: dict[str, Any] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    command: str = ""

    @property
    def note(self) -> str:
        """The status in one line, with its command: what a table or a report shows."""
        parts = []
        if self.conflicts:
            parts.append("conflicts with the settings: " + "; ".join(self.conflicts))
        if self.reasons:
            parts.append("needs a rebuild: " + "; ".join(self.reasons))
        if self.missing:
            parts.append("missing fields: " + ", ".join(sorted(self.missing)))
        if self.command:
            parts.append(f"run: {self.command}")
        return "; ".join(parts)


def classify(
    live: Generation,
    mapping: Mapping[str, Any],
    analysis: Mapping[str, Any],
    template: Mapping[str, Any],
    wanted: Wanted,
) -> IndexStatus:
    """The status of the index serving ``live``: its ``mapping`` (``properties`` and
    ``_meta``), its ``analysis`` settings (``index.analysis``), against ``template``, what the
    installed templates give a new index of its name (the ``template`` of a simulate answer:
    ``mappings`` and ``settings``), and what the deployment wants (``wanted``)."""
    have = dict(mapping.get("properties") or {})
    want = dict((template.get("mappings") or {}).get("properties") or {})
    missing = missing_properties(want, have)
    refused: list[str] = []
    reasons: list[str] = []
    conflicts: list[str] = []
    embedder = None
    if wanted.is_chunks(live.name):
        refused += _vector_problems(wanted.flavor, have)
        wrong = wrong_types(field_types(have), unmapped=False)
        if wrong:
            refused.append(f"it maps the policy fields otherwise than the chunks template: "
                           f"{describe(wrong)}")  # fmt: skip
        reasons += _dims_differ(have, want)
        reasons += _filter_types_differ(have, want)
        analysis_now = ((template.get("settings") or {}).get("index") or {}).get("analysis")
        reasons += analysis_differs(analysis, analysis_now or {})
        model = model_needs((mapping.get("_meta") or {}).get("embedding_model"), wanted)
        if model:
            reasons.append(model)
            embedder = wanted.embedder
        conflicts = [f"it maps {c}" for c in filter_field_conflicts(wanted.filterable, have)]
    reasons = [*refused, *reasons]
    if conflicts:
        state: State = "conflict"
    elif reasons:
        state = "rebuild"
    elif missing:
        state = "new-fields"
    else:
        state = "current"
    commands = []
    if conflicts:
        commands.append(
            "declare the field with the type it has in HYBRID_ES_FILTERABLE_FIELDS, or give it "
            "a new name (a mapped type cannot change in place)"
        )
    if reasons:
        commands.append(rebuild_command(live, wanted.layout, embedder=embedder))
    elif missing:
        commands.append("hybrid-es bootstrap")
    return IndexStatus(
        live.name,
        live.index,
        live.aliased,
        state,
        missing,
        tuple(reasons),
        tuple(refused),
        tuple(conflicts),
        "; then ".join(commands),
    )


def tenant_index(name: str, layout: IndexLayout) -> tuple[str, str] | None:
    """``(chunks setting, tenant)`` of a tenant's chunks index ``name`` (``<chunks>-t-<tenant>``),
    by the layout's chunks name where it is that layout's, else by the last ``-t-`` in it; None
    for a name of no tenant (a shared index, packets, ...)."""
    per_tenant = IndexLayout(chunks=layout.chunks, namespace=layout.namespace)
    tenant = per_tenant.tenant_of(name)
    if tenant is not None:
        return layout.chunks, tenant
    base, infix, part = name.rpartition(TENANT_INDEX_INFIX)
    tenant = tenant_of_part(part) if infix and base else None
    return (base, tenant) if tenant is not None else None


def rebuild_command(live: Generation, layout: IndexLayout, *, embedder: str | None = None) -> str:
    """The command that rebuilds the index serving ``live`` (``hybrid-es reindex --tenant T``,
    with ``--embedder`` where the model must change, the settings that name the index where
    they are not the deployment's, and ``--adopt`` first for an index not yet behind an alias);
    for an index of no tenant, what to do instead. Pure."""
    found = tenant_index(live.name, layout)
    if found is None:
        return SHARED_REBUILD.format(setting=CHUNKS_SETTING)
    chunks, tenant = found
    env = ""
    if chunks != layout.chunks:
        env += f"{CHUNKS_SETTING}={shlex.quote(chunks)} "
    if layout.mode == "shared":
        env += "HYBRID_ES_TENANCY=index-per-tenant "
    tenant_arg = f"--tenant {shlex.quote(tenant)}"
    rebuild = f"{env}hybrid-es reindex {tenant_arg}"
    if embedder:
        rebuild += f" --embedder {shlex.quote(embedder)}"
    if live.aliased:
        return rebuild
    return f"{env}hybrid-es reindex --adopt {tenant_arg} && {rebuild}"


def model_needs(recorded: Any, wanted: Wanted) -> str | None:
    """Why an index that records the model ``recorded`` (None: none yet) needs a rebuild with
    the deployment's embedder (``wanted.embedder``); None when it needs none. Pure."""
    if not recorded or wanted.models is None or recorded in wanted.models:
        return None
    return f"it records the model {recorded}, HYBRID_ES_EMBEDDER is {wanted.embedder}"


def analysis_differs(have: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    """Why an index whose analysis settings are ``have`` is not analysed as a new index with
    ``want`` would be (nothing when alike): the analyzers, tokenizers, filters, char filters
    and normalizers defined otherwise, by name. Pure."""
    changed = []
    for part in ANALYSIS_PARTS:
        mine, theirs = _canon(have.get(part) or {}), _canon(want.get(part) or {})
        names = sorted(n for n in {*mine, *theirs} if mine.get(n) != theirs.get(n))
        changed += [f"{part} {n}" for n in names]
    if not changed:
        return []
    return [
        "its analysis differs from what the installed templates give a new index "
        f"({', '.join(changed)})"
    ]


def missing_properties(want: Mapping[str, Any], have: Mapping[str, Any]) -> dict[str, Any]:
    """The mapping properties (at any depth) in ``want`` and not in ``have``. Pure."""
    out: dict[str, Any] = {}
    for name, spec in want.items():
        if name not in have:
            out[name] = spec
        elif "properties" in spec:
            sub = missing_properties(spec["properties"], have[name].get("properties") or {})
            if sub:
                out[name] = {
                    **{k: v for k, v in spec.items() if k != "properties"},
                    "properties": sub,
                }
    return out


def _vector_problems(flavor: str, have: Mapping[str, Any]) -> list[str]:
    vector = have.get("embedding")
    problem = vector_field_problem(flavor, vector) if vector else None
    return [problem] if problem else []


def _dims_differ(have: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    mine = vector_dims(have.get("embedding") or {})
    theirs = vector_dims(want.get("embedding") or {})
    if mine is None or theirs is None or mine == theirs:
        return []
    return [f"its vector field holds {mine} dimensions, a new index's {theirs}"]


def _filter_types_differ(have: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    """The filterable fields (``meta_filter``) that a new index would map with another type."""
    mine = ((have.get(FILTER_OBJECT) or {}).get("properties")) or {}
    theirs = ((want.get(FILTER_OBJECT) or {}).get("properties")) or {}
    return [
        f"it maps {FILTER_OBJECT}.{n} as {mine[n].get('type')}, a new index as "
        f"{theirs[n].get('type')}"
        for n in sorted(set(mine) & set(theirs))
        if mine[n].get("type") != theirs[n].get("type")
    ]


def _canon(node: Any) -> Any:
    """Settings as the engines answer them: every scalar a string (``2`` and ``"2"`` alike)."""
    if isinstance(node, Mapping):
        return {str(k): _canon(v) for k, v in node.items()}
    if isinstance(node, Sequence) and not isinstance(node, str):
        return [_canon(v) for v in node]
    if isinstance(node, bool):
        return str(node).lower()
    return str(node)


__all__ = [
    "IndexStatus",
    "State",
    "Wanted",
    "analysis_differs",
    "classify",
    "missing_properties",
    "model_needs",
    "rebuild_command",
    "tenant_index",
]
