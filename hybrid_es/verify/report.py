"""What ``verify`` reports: one :class:`Check` per item, pass, fail or unavailable with its reason,
and the :class:`VerifyReport` that holds them. Pure values.

``unavailable`` is not a failure: the cluster cannot run the feature (the reason says why), or
the run could not try it (read-only without ``--write``, or a credential that may not create the
scratch objects); :attr:`Check.skipped` tells the second kind apart.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Status = Literal["pass", "fail", "unavailable"]

NEEDS_WRITE = "needs --write: "
"""The start of the reason of a check that a read-only run skipped."""

ITEMS: dict[int, str] = {
    0: "scratch objects",
    1: "native rrf",
    2: "native linear",
    3: "policy in both legs",
    4: "document-level security",
    5: "analysis profile",
    6: "trace storage",
    7: "versions",
    8: "index source",
    9: "index upgrades",
}
"""The items a run reports, by number (0: the scratch index and credential the others use)."""


def refusal(message: str, limit: int = 160) -> str:
    """A refusal in short: the action the cluster refused where its message names one (both
    engines write ``[indices:admin/create]``), else the message's start."""
    action = re.search(r"\[((?:indices|cluster):[^\]]+)\]", message)
    return f"the cluster refused {action.group(1)}" if action else message[:limit]


class Check(BaseModel):
    """One item's outcome: ``reason`` in one line, ``details`` what was seen (one line each)."""

    model_config = ConfigDict(frozen=True)

    item: int
    name: str
    status: Status
    reason: str
    details: tuple[str, ...] = ()
    skipped: bool = False
    """The run did not try it (read-only, or the scratch objects could not be made)."""


def passed(item: int, reason: str, details: tuple[str, ...] | list[str] = ()) -> Check:
    return Check(item=item, name=ITEMS[item], status="pass", reason=reason, details=tuple(details))


def failed(item: int, reason: str, details: tuple[str, ...] | list[str] = ()) -> Check:
    return Check(item=item, name=ITEMS[item], status="fail", reason=reason, details=tuple(details))


def unavailable(
    item: int, reason: str, details: tuple[str, ...] | list[str] = (), *, skipped: bool = False
) -> Check:
    return Check(
        item=item,
        name=ITEMS[item],
        status="unavailable",
        reason=reason,
        details=tuple(details),
        skipped=skipped,
    )


def skipped(item: int, what: str) -> Check:
    """An item a read-only run does not try: ``what`` names the scratch object it needs."""
    return unavailable(item, f"{NEEDS_WRITE}{what}", skipped=True)


def not_tried(item: int, why: str) -> Check:
    """An item a writing run could not try, because its scratch objects could not be made."""
    return unavailable(item, f"not tried: {why}", skipped=True)


class VerifyReport(BaseModel):
    """A whole run: who and what was checked, and every item's outcome in item order."""

    model_config = ConfigDict(frozen=True)

    url: str
    flavor: str
    server_version: str
    client_library: str
    user: str | None
    write: bool
    checks: tuple[Check, ...]
    tolerance: float
    """The largest difference allowed between a native and a client fused score."""

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "fail")

    @property
    def skipped(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.skipped)

    @property
    def ok(self) -> bool:
        """Nothing failed (an unavailable item is not a failure)."""
        return not self.failed

    def check(self, item: int) -> Check:
        """The outcome of ``item`` (KeyError when the run has none)."""
        for c in self.checks:
            if c.item == item:
                return c
        raise KeyError(item)

    def as_dict(self) -> dict[str, Any]:
        """What ``--json`` prints: the report, with ``ok``, ``failed`` and ``skipped`` spelled
        out for scripts."""
        return {
            **self.model_dump(),
            "ok": self.ok,
            "failed": [c.item for c in self.failed],
            "skipped": [c.item for c in self.skipped],
        }
