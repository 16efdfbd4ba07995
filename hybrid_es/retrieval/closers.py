"""What a searcher closes when it is closed: what its hooks own (the trace writer,
``hybrid_es.traces.wiring``), attached by name.

Closing runs each closer once, in reverse order of attachment, and reports each one's result by
name. A closer that fails is logged and reported as its exception, never raised: closing is
what a process does on its way out, and one failure must not keep the others from running.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Closers:
    """Named closers, run once by :meth:`close`."""

    def __init__(self) -> None:
        self._closers: list[tuple[str, Callable[[], Any]]] = []
        self._closed: dict[str, Any] | None = None

    def add(self, name: str, closer: Callable[[], Any]) -> None:
        """Run ``closer`` on :meth:`close`; its result is reported under ``name``."""
        self._closers.append((name, closer))

    def close(self) -> dict[str, Any]:
        """Each closer's result (or exception) by name; run on the first call only, the same
        results returned on every later one."""
        if self._closed is None:
            out: dict[str, Any] = {}
            for name, closer in reversed(self._closers):
                try:
                    out[name] = closer()
                except Exception as exc:
                    log.warning("closing %s failed: %s: %s", name, type(exc).__name__, exc)
                    out[name] = exc
            self._closed = out
        return self._closed
