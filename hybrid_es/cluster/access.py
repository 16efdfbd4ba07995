"""Who may do what on a cluster: the licence each feature needs, and the privileges each command
needs, checked for the connected credentials with read APIs only.

The privileges are the package's own needs, written once here, and the role templates under
``es_templates/roles`` grant them (``hybrid-es-admin``: bootstrap, traces prune;
``hybrid-es-ingest``: ingest; ``hybrid-es-app``: search, packets, traces); a unit test keeps the
two in step, and ``tests/security/test_least_privilege.py`` runs each command as its role.
Elasticsearch answers for the credentials themselves (``_security/user/_has_privileges``);
OpenSearch has no such API, so its answer comes from the role names that ``authinfo`` lists, and
says so, or is "unknown".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import AuthenticationError, EngineError
from hybrid_es.tenancy import IndexLayout

Target = Literal["chunks", "corpus_state", "packets", "traces"]
TARGETS: tuple[Target, ...] = ("chunks", "corpus_state", "packets", "traces")

COMMANDS = (
    "bootstrap",
    "bootstrap --tenant",
    "ingest",
    "search",
    "packets",
    "traces",
    "traces prune",
)
"""The commands whose privileges the capability report lists (``bootstrap --tenant``: installing
the tenant reader roles, on top of ``bootstrap``)."""

COMMAND_ROLES = {
    "bootstrap": "hybrid-es-admin",
    "ingest": "hybrid-es-ingest",
    "search": "hybrid-es-app",
    "packets": "hybrid-es-app",
    "traces": "hybrid-es-app",
    "traces prune": "hybrid-es-admin",
}
"""The shipped role (``es_templates/roles/<name>.json``) that grants each command's needs."""


@dataclass(frozen=True)
class Need:
    """What a command needs on Elasticsearch. ``optional`` privileges lose something when
    missing (what, in the third place) but do not stop the command."""

    cluster: tuple[str, ...] = ()
    indices: tuple[tuple[Target, tuple[str, ...]], ...] = ()
    optional: tuple[tuple[Target, tuple[str, ...], str], ...] = ()


_ALL = tuple((t, ("manage",)) for t in TARGETS)
_TRACED: tuple[tuple[Target, tuple[str, ...], str], ...] = (
    ("traces", ("create_doc",), "its traces are dropped"),
)

NEEDS: dict[str, Need] = {
    # Templates, the shared indices, template fields added to existing indices; the probe
    # before it reads the licence and node info (monitor) and simulates templates.
    "bootstrap": Need(cluster=("manage_index_templates", "monitor"), indices=_ALL),
    "bootstrap --tenant": Need(cluster=("manage_security",)),
    # The tenant's chunks index created on first ingest, as generation 1 behind the alias of
    # its name (creating an index with an alias needs `indices:admin/aliases`, which only
    # `manage` grants by name), and its model recorded in the mapping (put mapping, the same);
    # cluster health waits for its shard.
    "ingest": Need(
        cluster=("monitor",),
        indices=(
            (
                "chunks",
                (
                    "create_index",
                    "read",
                    "write",
                    "view_index_metadata",
                    "maintenance",
                    "indices:admin/mapping/put",
                    "indices:admin/aliases",
                ),
            ),
            ("corpus_state", ("read", "write")),
        ),
    ),
    "search": Need(indices=(("chunks", ("read",)), ("corpus_state", ("read",))), optional=_TRACED),
    "packets": Need(
        indices=(
            ("chunks", ("read",)),
            ("corpus_state", ("read",)),
            ("packets", ("read", "index")),
        ),
        optional=_TRACED,
    ),
    "traces": Need(indices=(("traces", ("read",)),)),
    # Old days' indices deleted, a data stream rolled over.
    "traces prune": Need(indices=(("traces", ("manage",)),)),
}

OPENSEARCH_ROLE_COMMANDS: dict[str, tuple[str, ...]] = {
    "all_access": COMMANDS,
    "hybrid-es-admin": ("bootstrap", "traces prune"),
    "hybrid-es-ingest": ("ingest",),
    "hybrid-es-app": ("search", "packets", "traces"),
}
"""What an OpenSearch role grants, by its name: the built-in superuser role and the shipped
roles (``es_templates/opensearch/roles``). A tenant reader (``hybrid-es-tenant-reader-*``) may
search."""

DLS_LICENCES = ("platinum", "enterprise", "trial")
RETRIEVER_LICENCES = ("enterprise", "trial")


class LicenceRow(BaseModel):
    """One feature of the licence matrix: what it needs, and whether this cluster's licence has
    it (None: the licence could not be read)."""

    model_config = ConfigDict(frozen=True)

    feature: str
    needs: str
    allowed: bool | None


class CommandAccess(BaseModel):
    """Whether the connected credentials may run one command (None: unknown), what they lack
    (``missing``: the command fails; ``degraded``: it runs without something), and how that was
    decided."""

    model_config = ConfigDict(frozen=True)

    command: str
    allowed: bool | None
    missing: tuple[str, ...] = ()
    degraded: tuple[str, ...] = ()
    basis: str = ""

    def describe(self) -> str:
        if self.allowed is None:
            return f"unknown ({self.basis})" if self.basis else "unknown"
        if not self.allowed:
            return "no: lacks " + "; ".join(self.missing)
        head = "yes" + (f" ({self.basis})" if self.basis else "")
        return head + "".join(f"; {d}" for d in self.degraded)


def _words(names: tuple[str, ...]) -> str:
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def licence_matrix(
    flavor: str, licence: str | None, status: str = "active"
) -> tuple[LicenceRow, ...]:
    """The licence matrix of a cluster: Elasticsearch's document-level security needs Platinum,
    Enterprise or a trial; its ``rrf`` and ``linear`` retrievers need Enterprise or a trial.
    OpenSearch is open source: nothing is licensed. An expired licence allows neither."""
    features = (
        ("document-level security", DLS_LICENCES),
        ("native rrf / linear retrievers", RETRIEVER_LICENCES),
    )
    if flavor == "opensearch":
        return tuple(
            LicenceRow(feature=f, needs="n/a (open source)", allowed=True) for f, _ in features
        )
    return tuple(
        LicenceRow(
            feature=f,
            needs=_words(needs),
            allowed=None if licence is None else (licence in needs and status == "active"),
        )
        for f, needs in features
    )


def patterns(layout: IndexLayout) -> dict[Target, str]:
    """The index names each target covers: every chunks index (shared or per tenant), the
    corpus state and packets indices, and the traces index with anything dated after it."""
    return {
        "chunks": f"{layout.chunks}*",
        "corpus_state": layout.corpus_state,
        "packets": layout.packets,
        "traces": f"{layout.traces}*",
    }


def has_privileges_body(layout: IndexLayout) -> dict[str, Any]:
    """One ``_has_privileges`` request that asks for every privilege of every command."""
    names = patterns(layout)
    cluster: set[str] = set()
    wanted: dict[str, set[str]] = {}
    for need in NEEDS.values():
        cluster |= set(need.cluster)
        for target, privs in need.indices:
            wanted.setdefault(names[target], set()).update(privs)
        for target, privs, _ in need.optional:
            wanted.setdefault(names[target], set()).update(privs)
    return {
        "cluster": sorted(cluster),
        "index": [{"names": [n], "privileges": sorted(p)} for n, p in sorted(wanted.items())],
    }


def access_from_has_privileges(
    answer: dict[str, Any], layout: IndexLayout
) -> tuple[CommandAccess, ...]:
    """Each command's access from Elasticsearch's ``_has_privileges`` answer to
    :func:`has_privileges_body`."""
    names = patterns(layout)
    cluster = answer.get("cluster", {})
    index = answer.get("index", {})

    def lacking(target: Target, privs: tuple[str, ...]) -> list[str]:
        got = index.get(names[target], {})
        return [f"{p} on {names[target]}" for p in privs if not got.get(p, False)]

    out = []
    for command in COMMANDS:
        need = NEEDS[command]
        missing = [f"{p} (cluster)" for p in need.cluster if not cluster.get(p, False)]
        for target, privs in need.indices:
            missing += lacking(target, privs)
        degraded = [
            f"{what}: lacks " + ", ".join(gone)
            for target, privs, what in need.optional
            if (gone := lacking(target, privs))
        ]
        out.append(
            CommandAccess(
                command=command,
                allowed=not missing,
                missing=tuple(missing),
                degraded=tuple(degraded),
            )
        )
    return tuple(out)


def access_from_opensearch_roles(roles: list[str]) -> tuple[CommandAccess, ...]:
    """Each command's access from the OpenSearch roles the credentials are mapped to: known
    roles by name (their definitions are not read), and "unknown" for everything else."""
    granted: dict[str, str] = {}
    for role in roles:
        commands = OPENSEARCH_ROLE_COMMANDS.get(role, ())
        if role.startswith("hybrid-es-tenant-reader-"):
            commands = ("search",)
        for c in commands:
            granted.setdefault(c, role)
    listed = ", ".join(roles) or "none"
    return tuple(
        CommandAccess(command=c, allowed=True, basis=f"role {granted[c]}, by its name")
        if c in granted
        else CommandAccess(
            command=c,
            allowed=None,
            basis=f"OpenSearch has no privilege check; roles: {listed}",
        )
        for c in COMMANDS
    )


def everyone_may(basis: str) -> tuple[CommandAccess, ...]:
    """Every command allowed (security is off)."""
    return tuple(CommandAccess(command=c, allowed=True, basis=basis) for c in COMMANDS)


def nobody_knows(basis: str) -> tuple[CommandAccess, ...]:
    return tuple(CommandAccess(command=c, allowed=None, basis=basis) for c in COMMANDS)


def access_of(caps_privileges: tuple[CommandAccess, ...], command: str) -> CommandAccess:
    """One command's entry (unknown when the report has none)."""
    for a in caps_privileges:
        if a.command == command:
            return a
    return CommandAccess(command=command, allowed=None, basis="not probed")


# -- reading them from the cluster (read APIs only) ------------------------------------------


def elasticsearch_access(engine: Engine, layout: IndexLayout) -> tuple[CommandAccess, ...]:
    """Ask Elasticsearch which privileges the credentials hold (``_has_privileges`` needs no
    privilege of its own)."""
    try:
        answer = engine.request(
            "POST",
            "/_security/user/_has_privileges",
            body=has_privileges_body(layout),
            what="checking privileges",
        )
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        return nobody_knows(f"the privilege check was refused: {exc.message[:120]}")
    except EngineError as exc:
        return nobody_knows(f"the privilege check failed: {exc.message[:120]}")
    return access_from_has_privileges(dict(answer), layout)


def opensearch_access(authinfo: dict[str, Any]) -> tuple[CommandAccess, ...]:
    """The commands' access from the security plugin's ``authinfo`` answer."""
    return access_from_opensearch_roles([str(r) for r in authinfo.get("roles", [])])


# -- an ingest source (``hybrid-es ingest --from-index``) ------------------------------------------

SOURCE_NEEDS = ("read", "view_index_metadata")
"""What reading a source index needs on it (``cluster.source_read``), and all it needs."""
SOURCE_MORE = ("write", "delete_index", "manage", "create_index")
"""Privileges on a source that its reader does not need: held, they are reported."""


def source_access_from_has_privileges(answer: dict[str, Any], index: str) -> CommandAccess:
    """The source read's access from Elasticsearch's ``_has_privileges`` answer to
    :func:`source_privileges_body`: what it lacks of :data:`SOURCE_NEEDS`, and which of
    :data:`SOURCE_MORE` it holds besides (least privilege: a reader need not write)."""
    got = dict(answer.get("index", {}).get(index, {}))
    missing = tuple(f"{p} on {index}" for p in SOURCE_NEEDS if not got.get(p, False))
    more = [p for p in SOURCE_MORE if got.get(p, False)]
    degraded = (
        (f"holds more than a source read needs: {', '.join(more)} on {index}",) if more else ()
    )
    return CommandAccess(
        command=f"ingest --from-index {index}",
        allowed=not missing,
        missing=missing,
        degraded=degraded,
        basis="_has_privileges",
    )


def source_privileges_body(index: str) -> dict[str, Any]:
    """One ``_has_privileges`` request for a source read's needs, and the privileges beyond."""
    return {"index": [{"names": [index], "privileges": [*SOURCE_NEEDS, *SOURCE_MORE]}]}


def source_access(engine: Engine, index: str) -> CommandAccess:
    """Whether the source credentials of ``engine`` may read ``index`` as an ingest source, with
    read APIs only: the reads a sync makes, tried (its settings, a count, a point in time opened
    and closed), and on Elasticsearch the privileges they hold beyond (``_has_privileges``).
    Raises AuthenticationError for credentials the cluster refuses (401)."""
    from hybrid_es.cluster import source_read

    command = f"ingest --from-index {index}"
    tried: list[str] = []
    try:
        source_read.describe(engine, index)
        tried.append("settings")
        source_read.count(engine, index)
        tried.append("count")
        pit = source_read.open_pit(engine, index, "30s")
        if pit is not None:
            source_read.close_pit(engine, pit)
            tried.append("point in time")
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        step = ("settings", "count", "point in time")[len(tried)]
        lacks = "view_index_metadata" if step == "settings" else "read"
        return CommandAccess(
            command=command,
            allowed=False,
            missing=(f"{lacks} on {index} (its {step} was refused)",),
            basis="tried",
        )
    except EngineError as exc:
        return CommandAccess(
            command=command, allowed=False, missing=(exc.message[:160],), basis="tried"
        )
    basis = "tried: " + ", ".join(tried)
    if engine.flavor != "elasticsearch":
        return CommandAccess(command=command, allowed=True, basis=basis)
    try:
        answer = engine.request(
            "POST",
            "/_security/user/_has_privileges",
            body=source_privileges_body(index),
            what="checking the source's privileges",
        )
    except EngineError:  # security off, or the check refused: the reads above settle it
        return CommandAccess(command=command, allowed=True, basis=basis)
    checked = source_access_from_has_privileges(dict(answer), index)
    return checked.model_copy(update={"basis": f"{basis}; _has_privileges"})
