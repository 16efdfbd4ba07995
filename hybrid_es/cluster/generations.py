"""Indices behind aliases: every index hybrid-es reads and writes by name is an alias over one
physical generation, so the next generation can be built beside it and switched to at once.

A name the layout gives (``hybrid-es-chunks-t-acme``, ``hybrid-es-packets``) is an alias; the
index behind it is ``<name>+g<N>``, generation ``N`` (``+`` is in no tenant's index part and no
namespace, so no alias of one tenant can be another's generation). Readers and writers name the
alias and never see the generation. A rebuild (``ingest.rebuild``) fills ``<name>+g<N+1>``,
then :func:`switch` moves the alias in one atomic ``_aliases`` request; the old generation stays
until it is dropped, so switching back is the same request the other way round.

An index of an earlier release has no alias: its physical name is the layout's name
(generation 0). It keeps working as it is; to rebuild it, it is first adopted
(:func:`adopt`: cloned to ``<name>+g0`` under a short write block, the original removed and the
alias put in its place, all the data hard-linked, not copied).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import ConfigurationError, IndexMissingError

SEPARATOR = "+g"
"""Between an alias and its generation number."""
_PHYSICAL = re.compile(r"(?P<alias>.+)\+g(?P<n>[0-9]{1,6})")


def physical(alias: str, generation: int) -> str:
    """The index of ``alias``'s generation ``generation``."""
    if generation < 0:
        raise ValueError(f"a generation is 0 or more, not {generation}")
    return f"{alias}{SEPARATOR}{generation}"


def parse(index: str) -> tuple[str, int] | None:
    """``(alias, generation)`` of a generation's index name; None for any other name."""
    m = _PHYSICAL.fullmatch(index)
    return (m["alias"], int(m["n"])) if m else None


@dataclass(frozen=True)
class Generation:
    """What serves a name now: its ``index`` (physical) and ``number``; ``aliased`` False for
    an index of an earlier release whose physical name is the name itself (generation 0, not
    yet adopted)."""

    name: str
    index: str
    number: int
    aliased: bool

    @property
    def next(self) -> str:
        """The index the next generation is built in."""
        return physical(self.name, self.number + 1)


def current(engine: Engine, name: str) -> Generation | None:
    """What serves ``name`` now; None when nothing does (no alias, no index of that name)."""
    try:
        resp = engine.get_alias(name)
    except IndexMissingError:
        resp = None
    if resp:
        indices = sorted(resp)
        if len(indices) != 1:
            raise ConfigurationError(
                f"the alias {name} points at {len(indices)} indices ({', '.join(indices)}): "
                "hybrid-es reads and writes one generation at a time",
                hint=f"point it at one: hybrid-es reindex --switch-back, or fix {name}'s aliases",
            )
        index = indices[0]
        parsed = parse(index)
        return Generation(name, index, parsed[1] if parsed else 0, True)
    if engine.index_exists(name):
        return Generation(name, name, 0, False)
    return None


def names_served(aliases: dict[str, Any]) -> dict[str, Generation]:
    """Each name that the indices of a ``GET <pattern>/_alias`` answer (``aliases``: index ->
    ``{"aliases": {...}}``) serve, with what serves it: a generation under its alias, or an index
    of an earlier release under its own name. A generation no alias of its name points at (a
    rebuild's next one, or the one before a switch, kept for switching back) serves nothing and
    is left out. Pure."""
    out: dict[str, Generation] = {}
    for index, body in sorted(aliases.items()):
        parsed = parse(index)
        if parsed is None:
            out.setdefault(index, Generation(index, index, 0, False))
        elif parsed[0] in ((body or {}).get("aliases") or {}):
            out[parsed[0]] = Generation(parsed[0], index, parsed[1], True)
    return out


def serving(engine: Engine, pattern: str) -> dict[str, Generation]:
    """What serves each name among the open indices matching ``pattern`` (comma-separated
    patterns): :func:`names_served` of their aliases."""
    found = engine.request(
        "GET",
        f"/{pattern}/_alias",
        params={"expand_wildcards": "open", "allow_no_indices": True, "ignore_unavailable": True},
        what="listing indices and their aliases",
    )
    return names_served(dict(found or {}))


def create(engine: Engine, name: str, body: dict[str, Any] | None = None) -> bool:
    """Create generation 1 of ``name`` with the alias on it, in one request (the templates
    shape it, ``body`` adds to them); False when an index or alias of that name exists already
    (someone else made it first)."""
    spec = {**(body or {}), "aliases": {name: {}}}
    return engine.create_index(physical(name, 1), spec)


def switch_actions(name: str, old: str, new: str) -> list[dict[str, Any]]:
    """The ``_aliases`` actions that move ``name`` from index ``old`` to ``new`` at once."""
    return [{"remove": {"index": old, "alias": name}}, {"add": {"index": new, "alias": name}}]


def switch(engine: Engine, name: str, old: str, new: str) -> None:
    """Move the alias ``name`` from ``old`` to ``new`` in one atomic request."""
    engine.request(
        "POST",
        "/_aliases",
        body={"actions": switch_actions(name, old, new)},
        what=f"switching {name} to {new}",
    )


def adopt_actions(name: str, target: str) -> list[dict[str, Any]]:
    """The ``_aliases`` actions that put the clone ``target`` behind ``name`` in the place of the
    index ``name`` itself, at once."""
    return [{"remove_index": {"index": name}}, {"add": {"index": target, "alias": name}}]


def adopt(engine: Engine, name: str, *, settle_seconds: float = 0.0) -> Generation:
    """Put an earlier release's index ``name`` (physical, no alias) behind an alias: clone it
    to ``<name>+g0`` (a hard-link copy: seconds, whatever its size) under a write block, then in
    one request remove the original and add the alias on the clone. Writes are refused during
    the clone only (a bulk item then fails with a block error, reported as every failed item
    is: rerun the ingest). Returns the adopted generation."""
    target = physical(name, 0)
    engine.put_settings(name, {"index.blocks.write": True})
    try:
        engine.request(
            "POST",
            f"/{name}/_clone/{target}",
            body={"settings": {"index.blocks.write": None}},
            what=f"cloning {name}",
        )
        engine.health(target, wait_for_status="yellow", timeout="60s")
        if settle_seconds:
            time.sleep(settle_seconds)
        engine.request(
            "POST",
            "/_aliases",
            body={
                "actions": [
                    {"remove_index": {"index": name}},
                    {"add": {"index": target, "alias": name}},
                ]
            },
            what=f"putting {name} behind an alias",
        )
    except BaseException:
        if engine.index_exists(name):
            engine.put_settings(name, {"index.blocks.write": None})
        raise
    return Generation(name, target, 0, True)
