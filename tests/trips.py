"""Follow one operation through the package as it runs, and count how often it goes back up.

A module's **floor** comes from the package's own imports (``tests/unit/test_layers.py`` reads
them): a module that imports nothing of the package stands on floor 1, any other one floor above
the highest module it imports. A call goes **back up** when a function of a lower module calls
one of a higher module: a callback, a hook, an object passed down that a lower module calls
into. Following the code, a reader then has to climb back to a file they already left.

:class:`Trip` records the calls between the package's modules while a callable runs (every
thread), with ``sys.setprofile``: each call whose callee stands on a higher floor than the
nearest package frame that called it is a climb. Resuming a suspended generator is not a call
but its continuation. The search's stages are generators of effects that a runner carries out
(``retrieval.effects``: :data:`TRAMPOLINES`): the runner does, for the code that called it, what
the generator asked (send these bodies, run this model), so a call the runner makes counts as
its caller's, and handing control back to the generator is no call at all. Climbs are counted
once per pair of modules (caller, callee), as a reader counts the detours of a route.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from inspect import CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR
from types import FrameType
from typing import Any

from tests.unit.test_layers import MODULES, imports

RESUMED = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
TRAMPOLINES = frozenset({"hybrid_es.retrieval.effects"})
"""Modules whose frames are passed over when finding who called: a runner of effects."""


@cache
def floors() -> dict[str, int]:
    """Each package module's floor (module docstring); the import graph has no cycle
    (``test_layers``)."""
    graph = {m: imports(m) for m in MODULES}
    out: dict[str, int] = {}

    def floor(m: str) -> int:
        if m not in out:
            out[m] = 1 + max((floor(d) for d in graph[m]), default=0)
        return out[m]

    for m in graph:
        floor(m)
    return out


def _package_frame(frame: FrameType | None) -> FrameType | None:
    """The nearest frame of the package's own code (a trampoline's passed over)."""
    while frame is not None and (
        frame.f_globals.get("__name__") not in MODULES
        or frame.f_globals.get("__name__") in TRAMPOLINES
    ):
        frame = frame.f_back
    return frame


@dataclass
class Trip:
    """The climbs of the calls made while :meth:`following` is active."""

    climbs: dict[tuple[str, str], str] = field(default_factory=dict)
    """(caller module, callee module) -> the first callee function seen climbing there."""

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_flags & RESUMED:
            return  # not a call, or a generator's or coroutine's own continuation
        callee = frame.f_globals.get("__name__")
        if callee not in MODULES or callee in TRAMPOLINES:
            return
        caller_frame = _package_frame(frame.f_back)
        if caller_frame is None:
            return
        caller = caller_frame.f_globals["__name__"]
        if caller != callee and floors()[callee] > floors()[caller]:
            self.climbs.setdefault((caller, callee), frame.f_code.co_qualname)

    @contextmanager
    def following(self) -> Iterator[Trip]:
        sys.setprofile(self._profile)
        threading.setprofile(self._profile)
        try:
            yield self
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]

    def describe(self) -> str:
        return "\n".join(
            f"  {a} (floor {floors()[a]}) -> {b} (floor {floors()[b]}): {fn}"
            for (a, b), fn in sorted(self.climbs.items())
        )


def follow(run: Callable[[], Any]) -> Trip:
    """The climbs of ``run()``."""
    trip = Trip()
    with trip.following():
        run()
    return trip
