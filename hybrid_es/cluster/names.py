"""Which of a deployment's index templates shapes each index its settings name, and the refusal,
before anything is written, of a name that none of them does. Pure.

A new index that no hybrid-es template matches is created with dynamic mappings: a packets
index whose owner and tenant are text, a corpus state whose watermark is whatever the first
document made it, traces that Kibana's panels and the trace reader cannot aggregate. Nothing
fails at that moment; things misbehave later, quietly. A name of another namespace is worse: it
is shaped by that deployment's templates and writes into its indices. So bootstrap checks every
name of the layout against the templates it installs, and an ingest against its namespace's
(:func:`check_names`), and each refusal names the setting to change.

The template that applies to a new index is the one whose pattern matches its name with the
highest priority (:func:`template_for`: the engine's rule). The chunks names that an ingest
writes are also checked against what is installed (``policy_fields.check_new_index``), which
takes a template of the user's own as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from hybrid_es.cluster.policy_fields import matches
from hybrid_es.cluster.templates import (
    CHUNKS_TEMPLATE,
    CORPUS_STATE_TEMPLATE,
    PACKETS_TEMPLATE,
    TRACES_TEMPLATE,
    Template,
)
from hybrid_es.cluster.trace_storage import STREAM_TEMPLATE
from hybrid_es.errors import ConfigurationError
from hybrid_es.namespace import NAMESPACE_SETTING, in_namespace, namespace_of
from hybrid_es.tenancy import IndexLayout

KINDS = ("chunks", "packets", "corpus_state", "traces")
"""The names a layout gives, by the setting of each (:data:`SETTINGS`)."""
SETTINGS = {
    "chunks": "HYBRID_ES_CHUNKS_INDEX",
    "packets": "HYBRID_ES_PACKETS_INDEX",
    "corpus_state": "HYBRID_ES_CORPUS_STATE_INDEX",
    "traces": "HYBRID_ES_TRACES_INDEX",
}
_A_DAY = date(2000, 1, 1)


@dataclass(frozen=True)
class Name:
    """One index a layout's setting leads to, and the template (by its default name) that must
    shape it."""

    kind: str
    value: str
    """The setting's value (``IndexLayout.chunks``, ...)."""
    index: str
    """The index it names: a tenant's chunks index, a day's traces index, the traces stream."""
    template: str


def names_of(layout: IndexLayout, *, stream: bool = True) -> list[Name]:
    """Every kind of index ``layout`` names, each with the template that must shape it; the
    traces as a day's index, and (``stream``: where the cluster has data streams) as the data
    stream."""
    chunks = layout.chunks if layout.mode == "shared" else layout.chunks_for("tenant")
    out = [
        Name("chunks", layout.chunks, chunks, CHUNKS_TEMPLATE),
        Name("packets", layout.packets, layout.packets, PACKETS_TEMPLATE),
        Name("corpus_state", layout.corpus_state, layout.corpus_state, CORPUS_STATE_TEMPLATE),
        Name("traces", layout.traces, layout.traces_on(_A_DAY), TRACES_TEMPLATE),
    ]
    if stream:
        out.append(Name("traces", layout.traces, layout.traces_stream(), STREAM_TEMPLATE))
    return out


def template_for(index: str, templates: Sequence[Template]) -> Template | None:
    """The index template among ``templates`` that the engine would apply to a new index
    ``index``: of those whose patterns match it, the one of the highest priority (None: none
    matches)."""
    matching = [
        t
        for t in templates
        if t.kind == "index" and matches(index, t.body.get("index_patterns", []))
    ]
    return max(matching, key=lambda t: int(t.body.get("priority", 0)), default=None)


def name_problems(
    layout: IndexLayout, templates: Sequence[Template], kinds: Sequence[str] = KINDS
) -> list[tuple[str, str]]:
    """Each name of ``layout`` (of ``kinds``) that its own template among ``templates`` (the
    deployment's, in its namespace) would not shape, as (kind, why); empty when all are. The
    traces stream is checked where ``templates`` hold the stream template."""
    stream = any(t.key == STREAM_TEMPLATE for t in templates)
    out = []
    for name in names_of(layout, stream=stream):
        if name.kind not in kinds:
            continue
        wanted = in_namespace(name.template, layout.namespace)
        applied = template_for(name.index, templates)
        if applied is not None and applied.key == name.template:
            continue
        setting = f"{SETTINGS[name.kind]}={name.value}"
        shown = f"{name.index} ({setting})" if name.index == name.value else (
            f"{name.index} (from {setting})"
        )  # fmt: skip
        if applied is None:
            why = f"no template of this deployment matches {shown}"
        else:
            why = f"{shown} is matched by the {applied.name} template, not {wanted}"
        owner = namespace_of(name.index)
        if owner is not None and owner != layout.namespace:
            why += f": a name of {_namespace(owner)}"
        out.append((name.kind, why))
    return out


def check_names(
    layout: IndexLayout, templates: Sequence[Template], kinds: Sequence[str] = KINDS
) -> None:
    """Refuse (ConfigurationError, naming the settings to change; nothing was written) a layout
    with a name of ``kinds`` that its own template among ``templates`` would not shape
    (:func:`name_problems`): a new index of it would get dynamic mappings, or another kind's,
    or another namespace's."""
    problems = name_problems(layout, templates, kinds)
    if not problems:
        return
    bad = list(dict.fromkeys(kind for kind, _ in problems))
    defaults = ", ".join(
        f"{SETTINGS[kind]}={in_namespace(_DEFAULTS[kind], layout.namespace)}" for kind in bad
    )
    raise ConfigurationError(
        f"index names that the templates of {_namespace(layout.namespace)} do not shape: "
        + "; ".join(why for _, why in problems)
        + "; a new index of such a name would get dynamic mappings (or another kind's, or "
        "another deployment's), and nothing would fail until its documents were misread; "
        "nothing was written",
        hint=f"set {' and '.join(SETTINGS[k] for k in bad)} to a name of this deployment, or "
        f"unset {'it' if len(bad) == 1 else 'them'} for the namespace's default ({defaults}); "
        f"or set {NAMESPACE_SETTING} to the namespace whose names they are",
    )


_DEFAULTS = {
    "chunks": CHUNKS_TEMPLATE,
    "packets": PACKETS_TEMPLATE,
    "corpus_state": CORPUS_STATE_TEMPLATE,
    "traces": TRACES_TEMPLATE,
}
"""Each kind's default index name (in the default namespace: the same as its template's)."""


def _namespace(namespace: str) -> str:
    return f"namespace {namespace!r}" if namespace else "the default namespace"
