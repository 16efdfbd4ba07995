"""SIGINT and SIGTERM during a writing run: the run stops, and its scratch objects are removed.

While :func:`interruptible` is in force, either signal raises :class:`VerifyInterrupted` where
the run is (a request, the ingest, a sleep), so the ``finally`` that removes the scratch objects
runs; while :func:`held` is in force (the removal itself), a signal is only noted, and raised once
the removal is done. Signal handlers can only be set in the main thread: elsewhere both are
no-ops and the ``finally`` alone removes what was made.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class VerifyInterrupted(KeyboardInterrupt):
    """A signal stopped the run (after its scratch objects were removed). ``signum``: which."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Within: SIGINT or SIGTERM raises :class:`VerifyInterrupted`. The previous handlers come
    back on the way out."""
    if not _main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise VerifyInterrupted(signum)

    previous = {s: signal.signal(s, stop) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def held() -> Iterator[list[int]]:
    """Within: SIGINT and SIGTERM are noted in the list it yields, not acted on, so that what
    runs inside (removing the scratch objects) is not cut short. On a clean way out, a noted
    signal is raised as :class:`VerifyInterrupted`."""
    noted: list[int] = []
    if not _main_thread():
        yield noted
        return

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)

    previous = {s: signal.signal(s, note) for s in SIGNALS}
    try:
        yield noted
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if noted:
        raise VerifyInterrupted(noted[0])
