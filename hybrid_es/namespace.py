"""The deployment namespace: the one name that every cluster-wide object hybrid-es creates
carries, so that several deployments share a cluster without touching each other. Pure.

``HYBRID_ES_NAMESPACE`` (``Settings.namespace``) is empty by default, and then every name is
today's: ``hybrid-es-chunks``, ``hybrid-es-admin``, ``hybrid-es-traces-*``. A namespace ``ns``
puts itself right after the product's name, behind a dot::

    hybrid-es-chunks          ->  hybrid-es.ns-chunks          (index, index template)
    hybrid-es-chunks*         ->  hybrid-es.ns-chunks*         (the template's pattern)
    hybrid-es-settings        ->  hybrid-es.ns-settings        (component template)
    hybrid-es-admin           ->  hybrid-es.ns-admin           (role)
    hybrid-es-rrf             ->  hybrid-es.ns-rrf             (OpenSearch search pipeline)
    hybrid-es-traces          ->  hybrid-es.ns-traces          (Kibana data view id)

A namespace is ``[a-z0-9_]{1,32}``: no ``-`` and no ``.``. That is what makes the names of two
namespaces disjoint, patterns included: every name and every pattern of namespace ``ns`` starts
with ``hybrid-es.ns-`` before its first ``*`` (the shipped patterns all start with
``hybrid-es-`` and a literal part), the default's start with ``hybrid-es-``, and since ``ns``
holds no ``-``, the text between ``hybrid-es.`` and the first ``-`` after it is ``ns`` itself.
So an index name determines its namespace (:func:`namespace_of`), no template pattern of one
namespace matches a name of another (whatever their priorities: a template can only win over
templates whose patterns match the same name), and Elasticsearch, which refuses two templates of
equal priority whose patterns overlap, takes every namespace's at the shipped priorities.
``tests/unit/test_namespace.py`` checks the property over generated namespaces and names.
"""

from __future__ import annotations

import re

PRODUCT = "hybrid-es"
"""The product's prefix of every object name (the default namespace's names start with
``hybrid-es-``)."""
NAMESPACE_SETTING = "HYBRID_ES_NAMESPACE"
NAMESPACE_RULE = re.compile(r"[a-z0-9_]{1,32}")
"""A namespace: 1 to 32 lowercase ASCII letters, digits and ``_`` (no ``-`` and no ``.``: the
module docstring says why)."""
_OF = re.compile(r"hybrid-es(?:\.([a-z0-9_]{1,32}))?-")


def check_namespace(value: str) -> str:
    """``value`` as a namespace ("" is the default one); ValueError naming the rule otherwise."""
    if value == "" or NAMESPACE_RULE.fullmatch(value):
        return value
    raise ValueError(
        f"{value!r} is not a namespace: use 1 to 32 lowercase letters, digits and '_' (no '-' "
        "or '.', which would let one namespace's index patterns match another's names), or "
        "leave it empty for the default names"
    )


def prefix(namespace: str) -> str:
    """What every name of ``namespace`` starts with, before its ``-``: ``hybrid-es`` (the
    default) or ``hybrid-es.<namespace>``."""
    return PRODUCT if not namespace else f"{PRODUCT}.{check_namespace(namespace)}"


def in_namespace(name: str, namespace: str) -> str:
    """The default namespace's ``name`` (or pattern), ``hybrid-es-...``, as ``namespace`` names
    it: ``in_namespace("hybrid-es-chunks*", "ns") == "hybrid-es.ns-chunks*"``; unchanged in the
    default namespace. Raises ValueError for a name that is not the product's."""
    head = f"{PRODUCT}-"
    if not name.startswith(head):
        raise ValueError(f"{name!r} is not a hybrid-es name (they start with {head!r})")
    return f"{prefix(namespace)}-{name[len(head) :]}"


def namespace_of(name: str) -> str | None:
    """The namespace a name (or pattern) belongs to: "" for ``hybrid-es-...``, ``ns`` for
    ``hybrid-es.ns-...``, None for a name that is not the product's at all."""
    m = _OF.match(name)
    if m is None:
        return None
    return m.group(1) or ""


def default_name(name: str) -> str:
    """``name`` as the default namespace spells it (``hybrid-es.ns-admin`` ->
    ``hybrid-es-admin``); a name that is not the product's is returned unchanged."""
    m = _OF.match(name)
    return name if m is None else f"{PRODUCT}-{name[m.end() :]}"
