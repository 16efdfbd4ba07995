"""The fields the policy filter reads, and the types every chunks index must map them with.

The engine applies the policy filter (``retrieval.policy``) to what an index maps, not to what
the chunks template says. In an index that no hybrid-es template shaped (a name the template's
patterns miss, so dynamic mappings), ``tenant`` and ``acl_groups`` are ``text``: ``terms`` then
matches one token of a value, and a caller of group ``managers`` has the records of
``finance-managers`` scored. The Python re-check refuses the whole answer, so nothing leaks, but
the engine ranked records outside the caller's scope and every search of that caller fails. So
each chunks index is checked once per process before it is written (``ingest.write_checks``) or
served (``retrieval.index_checks``), and at bootstrap: each of :data:`POLICY_FIELDS` must have
the type that the chunks template gives it, and a chunks index is created only under a name
that an installed template maps so (:func:`check_new_index`).

Pure, but for reading the template file and :func:`check_new_index`, which asks the engine.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import CHUNKS_TEMPLATE, load_templates
from hybrid_es.errors import AuthenticationError, ConfigurationError
from hybrid_es.namespace import in_namespace

POLICY_FIELDS: tuple[str, ...] = (
    "tenant",
    "acl_users",
    "acl_groups",
    "valid_from",
    "valid_to",
    "version",
    "superseded_by",
    "deleted",
    "retention_until",
    "embargo_until",
    "booking_ids",
    "property_ids",
    "source_type",
    "jurisdiction",
)
"""Every field a clause of the policy filter (``retrieval.policy.policy_filter``, any scope) or
the tenant policy of an owner's reads names, and ``version``, which supersession compares.
``tests/unit/test_policy_fields.py`` fails when a policy clause names a field missing here."""

CHUNKS_SETTING = "HYBRID_ES_CHUNKS_INDEX"
"""The setting that names the chunks indices (in the index-per-tenant layout, their base)."""

FieldTypes = dict[str, str | None]
"""Field -> its mapped type (None: not mapped)."""


@functools.cache
def _chunks_template() -> dict[str, Any]:
    (body,) = [t.body for t in load_templates() if t.kind == "index" and t.key == CHUNKS_TEMPLATE]
    return body


def required_types() -> dict[str, str]:
    """Each of :data:`POLICY_FIELDS` with its type in the shipped chunks template
    (``es_templates/index/hybrid-es-chunks.json``: the same on both engines)."""
    props = _chunks_template()["template"]["mappings"]["properties"]
    return {f: str(props[f]["type"]) for f in POLICY_FIELDS}


def chunks_patterns() -> tuple[str, ...]:
    """The index patterns of the shipped chunks template (``hybrid-es-chunks*``)."""
    return tuple(_chunks_template().get("index_patterns", ()))


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether an index template pattern (``*`` its only wildcard) matches ``name``."""
    return any(
        re.fullmatch(".*".join(re.escape(part) for part in p.split("*")), name) for p in patterns
    )


def field_types(properties: Mapping[str, Any]) -> FieldTypes:
    """Each of :data:`POLICY_FIELDS` with its type in a mapping's ``properties``."""
    out: FieldTypes = {}
    for f in POLICY_FIELDS:
        spec = properties.get(f)
        kind = spec.get("type", "object" if "properties" in spec else None) if spec else None
        out[f] = None if kind is None else str(kind)
    return out


def field_types_by_index(mappings: Mapping[str, Any]) -> dict[str, FieldTypes]:
    """:func:`field_types` of each index of a ``get_mapping`` answer (index -> ``mappings``)."""
    return {name: field_types(m.get("properties", {})) for name, m in mappings.items()}


def field_types_from_caps(caps: Mapping[str, Any]) -> dict[str, FieldTypes]:
    """:func:`field_types` of each index of a ``_field_caps`` answer (asked with
    ``include_unmapped``): what a caller who may read an index but not its mapping (a
    document-level-security reader) learns of its types. A field with one type in every index
    lists no ``indices``; ``unmapped`` is None."""
    indices = list(caps.get("indices", []))
    out: dict[str, FieldTypes] = {i: dict.fromkeys(POLICY_FIELDS) for i in indices}
    for f in POLICY_FIELDS:
        for kind, spec in (caps.get("fields", {}).get(f) or {}).items():
            for i in spec.get("indices") or indices:
                out.setdefault(i, dict.fromkeys(POLICY_FIELDS))[f] = (
                    None if kind == "unmapped" else str(kind)
                )
    return out


def wrong_types(types: Mapping[str, str | None], *, unmapped: bool = True) -> FieldTypes:
    """The fields of ``types`` whose type is not the chunks template's: field -> the type they
    have (None: not mapped; left out with ``unmapped=False``, where the caller adds them)."""
    want = required_types()
    return {
        f: have
        for f, have in types.items()
        if f in want and have != want[f] and (unmapped or have is not None)
    }


def describe(wrong: Mapping[str, str | None]) -> str:
    """``acl_groups is text (needs keyword), deleted is not mapped (needs boolean)``."""
    want = required_types()
    return ", ".join(
        f"{f} is {'not mapped' if have is None else have} (needs {want[f]})"
        for f, have in sorted(wrong.items())
    )


def mapping_error(
    index: str, wrong: Mapping[str, str | None], *, writing: bool, command: str | None = None
) -> ConfigurationError:
    """The refusal of a chunks index that maps policy fields with other types than the chunks
    template (``writing``: the caller was about to write, and wrote nothing). ``command``: the
    one that rebuilds it (``cluster.index_status.rebuild_command``), where the caller knows the
    layout that names it."""
    done = "; nothing was written" if writing else ""
    patterns = ", ".join(chunks_patterns())
    rebuild = command or (
        "`hybrid-es bootstrap` (it installs the templates), then `hybrid-es reindex --tenant "
        "<tenant>` for a tenant's own index (first `hybrid-es reindex --adopt --tenant <tenant>` "
        f"for an index of an earlier release, not behind an alias); for any other, set "
        f"{CHUNKS_SETTING} to a new name the {CHUNKS_TEMPLATE} template matches ({patterns}) "
        "and ingest again into it"
    )
    return ConfigurationError(
        f"chunks index {index} does not map the policy fields as the {CHUNKS_TEMPLATE} template "
        f"does: {describe(wrong)}; the engine's policy filter would compare them wrongly (a "
        f"text field matches one word of a group or tenant){done}",
        hint="a mapped type cannot change in place: rebuild the index from its records with "
        f"the installed templates' mapping: {rebuild}",
    )


def check_mapped(index: str, types: Mapping[str, FieldTypes], *, writing: bool = False) -> None:
    """Refuse (ConfigurationError, :func:`mapping_error`) the first index of ``types`` (index ->
    :func:`field_types`) that maps a policy field otherwise than the chunks template, or not
    at all. ``index`` is the name the caller used (an alias or pattern may stand for several)."""
    for name, fields in sorted(types.items()):
        wrong = wrong_types(fields)
        if wrong:
            raise mapping_error(
                name if name == index else f"{name} (behind {index})", wrong, writing=writing
            )


def name_hint(namespace: str = "") -> str:
    """What to do about a chunks index name that no template (of ``namespace``: the
    deployment's, ``HYBRID_ES_NAMESPACE``) maps as a chunks index."""
    template = in_namespace(CHUNKS_TEMPLATE, namespace)
    patterns = ", ".join(in_namespace(p, namespace) for p in chunks_patterns())
    return (
        f"set {CHUNKS_SETTING} to a name that the {template} template matches "
        f"({patterns}; the default is {template}; in the "
        f"index-per-tenant layout each tenant's index is <{CHUNKS_SETTING}>-t-<tenant>), and "
        "run `hybrid-es bootstrap` where its templates are not installed"
    )


def unmatched_name_error(index: str, why: str) -> ConfigurationError:
    """The refusal of a new chunks index whose name no installed template maps as one."""
    return ConfigurationError(
        f"chunks index {index} was not created: {why}, and the engine's policy filter compares "
        "the tenant, ACL and validity fields exactly only where they are mapped as the "
        f"{CHUNKS_TEMPLATE} template maps them (a text field matches one word of a group); "
        "nothing was written",
        hint=name_hint(),
    )


def check_new_index(engine: Engine, index: str) -> bool:
    """Refuse (ConfigurationError, :func:`unmatched_name_error`), before ``index`` is created, a
    name whose new index no installed template would give the policy fields' types: no template
    matches it, or the one that wins maps them otherwise. Asks the engine which template applies
    (``_index_template/_simulate_index``, on both engines). Returns False when the credentials
    may not ask (the simulation needs ``manage_index_templates``, which an ingest credential
    lacks): then only the created index's mapping can be checked."""
    try:
        simulated = engine.simulate_index_template(index)
    except AuthenticationError as exc:
        if exc.status == 403:
            return False
        raise
    template = simulated.get("template")
    if not template:
        raise unmatched_name_error(
            index,
            "no installed index template matches that name (a new index of it would map "
            "tenant and acl_groups as text, dynamically)",
        )
    wrong = wrong_types(field_types(template.get("mappings", {}).get("properties", {})))
    if wrong:
        raise unmatched_name_error(
            index, f"under the index template that applies to it, {describe(wrong)}"
        )
    return True
