"""How long-running library calls report progress without knowing who shows it.

The CLI shows rich progress bars (``cli.common.RichProgress``); a program passes nothing (the
default does nothing) or its own :class:`Progress`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Stage(Protocol):
    """One labelled stage of a long call (ingest, first stage, train, ...)."""

    def advance(self, n: int = 1) -> None: ...

    def update(self, *, completed: int, total: int | None = None, note: str = "") -> None: ...


class Progress(Protocol):
    def stage(self, label: str, total: int | None = None, note: str = "") -> Stage: ...


class _Silent:
    def advance(self, n: int = 1) -> None:
        pass

    def update(self, *, completed: int, total: int | None = None, note: str = "") -> None:
        pass


class NoProgress:
    """Reports nothing (the default for programs)."""

    def stage(self, label: str, total: int | None = None, note: str = "") -> Stage:
        return _Silent()


def training_steps(stage: Stage) -> Callable[[int, int, float], None]:
    """A training loop's ``on_step(step, planned, loss)`` shown on ``stage``."""

    def on_step(n: int, planned: int, loss: float) -> None:
        stage.update(completed=n, total=planned, note=f"loss {loss:.3f}")

    return on_step
