"""Where each tenant's records live: the index layout. Pure.

Two modes (``HYBRID_ES_TENANCY``):

- ``index-per-tenant`` (the default): every tenant's chunks live in an index of their own,
  ``<chunks>-t-<tenant>``. BM25 statistics (document frequencies, average lengths) are then per
  tenant, so one tenant's scores cannot move when another tenant writes: in a shared index they
  do, and a score becomes a side channel that tells which words occur in another tenant's
  corpus, deleted and embargoed records included. Costs one index (one primary shard, plus its
  replicas) per tenant.
- ``shared``: one chunks index for all tenants, isolated by the tenant filter inside every leaf
  and by the tenant in every stored id. Cheaper in shards; for many small tenants, where the
  score side channel is an accepted risk. See ``docs/tenancy.md`` for the trade-off.

Packets, traces and the corpus state are not scored and are keyed by tenant, so they stay in one
index each in both modes. Traces are the exception in time, not in tenancy: they go to a data
stream (``<traces>-stream``) where the cluster has data streams, else to one index per UTC day
(``<traces>-YYYY.MM.DD``), and are read through ``<traces>-*`` (see ``hybrid_es.traces.storage``).

Index names must be lowercase, while tenant ids may have capitals: the tenant part of an index
name escapes ``_`` as ``__`` and a capital ``X`` as ``_x``, which keeps names readable and
distinct for distinct tenants (``demo-A`` -> ``demo-_a``, ``demo-a`` -> ``demo-a``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal

from hybrid_es.models import check_tenant
from hybrid_es.namespace import check_namespace

TenancyMode = Literal["shared", "index-per-tenant"]
TENANCY_MODES: tuple[TenancyMode, ...] = ("shared", "index-per-tenant")
TENANT_INDEX_INFIX = "-t-"
TRACES_STREAM_SUFFIX = "-stream"
TRACES_DAY_FORMAT = "%Y.%m.%d"
_DAY = re.compile(r"[0-9]{4}\.[0-9]{2}\.[0-9]{2}")  # ASCII digits (\d takes any script's)


def index_part(tenant: str) -> str:
    """The tenant as it appears in an index name (lowercase, injective)."""
    check_tenant(tenant)
    out = []
    for c in tenant:
        if c == "_":
            out.append("__")
        elif c.isupper():
            out.append("_" + c.lower())
        else:
            out.append(c)
    return "".join(out)


def tenant_of_part(part: str) -> str | None:
    """The tenant whose index part (:func:`index_part`) is ``part``; None for a string that no
    tenant's index part is."""
    out, i = [], 0
    while i < len(part):
        c = part[i]
        if c == "_":
            nxt = part[i + 1 : i + 2]
            if nxt == "_":
                out.append("_")
            elif nxt.isalpha() and nxt.islower():
                out.append(nxt.upper())
            else:
                return None
            i += 2
            continue
        if c.isupper():
            return None
        out.append(c)
        i += 1
    tenant = "".join(out)
    try:
        check_tenant(tenant)
    except ValueError:
        return None
    return tenant


@dataclass(frozen=True)
class IndexLayout:
    """Index names for one deployment; ``chunks_for`` gives a tenant's chunks index.
    ``namespace`` is the deployment's (``hybrid_es.namespace``): the one its templates, roles
    and Kibana objects carry, and whose templates must match these names."""

    chunks: str = "hybrid-es-chunks"
    packets: str = "hybrid-es-packets"
    traces: str = "hybrid-es-traces"
    corpus_state: str = "hybrid-es-corpus-state"
    mode: TenancyMode = "index-per-tenant"
    namespace: str = ""

    def __post_init__(self) -> None:
        if self.mode not in TENANCY_MODES:
            raise ValueError(f"tenancy must be one of {TENANCY_MODES}, got {self.mode!r}")
        check_namespace(self.namespace)

    @classmethod
    def fixed(cls, chunks: str, **others: str) -> IndexLayout:
        """Every tenant in one given chunks index (tests, evaluation collections)."""
        return cls(chunks=chunks, mode="shared", **others)

    def chunks_for(self, tenant: str) -> str:
        if self.mode == "shared":
            check_tenant(tenant)
            return self.chunks
        return f"{self.chunks}{TENANT_INDEX_INFIX}{index_part(tenant)}"

    def tenant_of(self, index: str) -> str | None:
        """The tenant whose chunks index (:meth:`chunks_for`) ``index`` is, in the
        index-per-tenant layout; None for any other name (and in the shared layout)."""
        head = f"{self.chunks}{TENANT_INDEX_INFIX}"
        if self.mode == "shared" or not index.startswith(head):
            return None
        return tenant_of_part(index[len(head) :])

    def reader_refused_because(self) -> str:
        """Why a per-tenant reader credential cannot be confined to one tenant in this layout
        ("" when it can). In the shared layout every tenant's records sit in one index, so a
        reader role must name that index, and document-level security alone stands between
        tenants: OpenSearch's suggesters ignore it (another tenant's vocabulary, deleted and
        restricted records included), and on both engines BM25 statistics (``explain``,
        ``dfs_query_then_fetch``) count every tenant's documents. Only one index per tenant
        gives a role an exact name that reaches nothing of another tenant."""
        if self.mode == "shared":
            return (
                "in the shared tenancy layout every tenant's chunks are in one index, so a "
                "reader role would reach the other tenants' records past document-level "
                "security (OpenSearch's suggesters ignore it; BM25 statistics count every "
                "tenant's documents on both engines)"
            )
        return ""

    def chunks_pattern(self) -> str:
        """A pattern that matches every tenant's chunks index (operators, bootstrap checks)."""
        return self.chunks if self.mode == "shared" else f"{self.chunks}{TENANT_INDEX_INFIX}*"

    def traces_stream(self) -> str:
        """The traces data stream (where the cluster has data streams)."""
        return f"{self.traces}{TRACES_STREAM_SUFFIX}"

    def traces_on(self, day: date) -> str:
        """The dated traces index of one UTC day (where the cluster has no data streams)."""
        return f"{self.traces}-{day:{TRACES_DAY_FORMAT}}"

    def traces_day(self, index: str) -> date | None:
        """The day of a dated traces index of this layout, None for any other name."""
        head = f"{self.traces}-"
        if not index.startswith(head) or not _DAY.fullmatch(index[len(head) :]):
            return None
        try:
            return datetime.strptime(index[len(head) :], TRACES_DAY_FORMAT).date()
        except ValueError:  # 2026.02.30
            return None

    def traces_pattern(self) -> str:
        """What trace reads search: the data stream and every dated index (not the plain
        ``<traces>`` index of the earlier layout, whose fields are not ECS)."""
        return f"{self.traces}-*"
