"""The sync state of one source index for one tenant, as the corpus state stores it
(``CorpusState.update_sync``): its checkpoint, and the run in progress with its slices. Pure:
every function takes the state (a plain dict) and returns the new one, or raises
:class:`SyncConflict` to give up the compare-and-set without writing.

The state::

    {"checkpoint": {...} | None,  # where the next changes pass starts (see Checkpoint)
     "run": {                     # the pass in progress, None between passes
        "run_id", "kind": "full" | "changes", "slices": N, "read": "pit" | "scroll" | "shards",
        "pit_id", "since": <checkpoint read from>, "next": <checkpoint committed at the end>,
        "slice": {"0": {"done", "after", "owner", "counts"}, ...},
        "finisher": <owner> | None, "resets": <times the slices were read again>}}

A run is created by the first process to arrive, joined by the others (the same ``slices``), and
finished by the one that marks the last slice done (:func:`slice_done` hands it the finish). A
slice is read by one owner at a time: an owner is a writer's marker (host, pid, lease) as in the
corpus state, and a marker whose process is gone or whose lease ran out is taken over.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hybrid_es.cluster.corpus_state import PendingRun
from hybrid_es.errors import ConfigurationError

COUNTS = ("read", "written", "unchanged", "failed", "chunks", "embedded")


class SyncConflict(ConfigurationError):
    """The sync state does not allow what was asked (a run of another shape in progress, a slice
    another live process reads, a run that was restarted meanwhile)."""


def empty_counts() -> dict[str, Any]:
    return {**dict.fromkeys(COUNTS, 0), "refused": {}}


def add_counts(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Two count records added (refusals by reason). Pure."""
    out = {k: int(a.get(k, 0)) + int(b.get(k, 0)) for k in COUNTS}
    refused = dict(a.get("refused") or {})
    for reason, n in (b.get("refused") or {}).items():
        refused[reason] = int(refused.get(reason, 0)) + int(n)
    return {**out, "refused": refused}


def new_run(
    *,
    run_id: str,
    kind: str,
    slices: int,
    read: str,
    pit_id: str | None,
    since: Mapping[str, Any] | None,
    next_checkpoint: Mapping[str, Any],
    started_at: str,
) -> dict[str, Any]:
    """A run record with every slice open."""
    return {
        "run_id": run_id,
        "kind": kind,
        "slices": slices,
        "read": read,
        "pit_id": pit_id,
        "since": dict(since) if since else None,
        "next": dict(next_checkpoint),
        "started_at": started_at,
        "slice": {str(k): _open_slice() for k in range(slices)},
        "finisher": None,
        "resets": 0,
    }


def _open_slice() -> dict[str, Any]:
    return {"done": False, "after": None, "owner": None, "counts": empty_counts()}


def _stale(owner: Mapping[str, Any] | None, now: datetime, host: str) -> bool:
    return owner is None or PendingRun(**owner).stale(now, host=host)


def start_run(state: dict[str, Any], run: dict[str, Any], *, replace: str | None) -> dict[str, Any]:
    """``state`` with ``run`` as its run in progress. Raises SyncConflict when another run is
    in progress, unless it is the one ``replace`` names (a restart)."""
    current = state.get("run")
    if current and current["run_id"] != replace:
        raise SyncConflict(
            f"run {current['run_id']} of this source is in progress",
            hint="join it (the same --slices), or --restart to abandon it",
        )
    return {**state, "run": run}


def the_run(state: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    """The run ``run_id`` of ``state``. Raises SyncConflict when it is not the run in progress
    (it was finished, or restarted by another process)."""
    run = state.get("run")
    if not run or run["run_id"] != run_id:
        raise SyncConflict(
            f"sync run {run_id} is no longer in progress (finished, or restarted by another "
            "process)",
            hint="run the sync again: it starts from the checkpoint, unchanged records skipped",
        )
    return dict(run)


def claim(
    state: dict[str, Any], run_id: str, k: int, owner: Mapping[str, Any], now: datetime, host: str
) -> dict[str, Any]:
    """``state`` with slice ``k`` of the run owned by ``owner``. Raises SyncConflict when
    another live process owns it."""
    run = the_run(state, run_id)
    piece = dict(run["slice"][str(k)])
    held = piece.get("owner")
    mine = held and (held["host"], held["pid"]) == (owner["host"], owner["pid"])
    if held and not mine and not _stale(held, now, host):
        raise SyncConflict(
            f"slice {k} of run {run_id} is being read by {held['host']} (process "
            f"{held['pid']}, lease until {held['lease_until']})",
            hint="each slice is read by one process at a time: give this one another --slice",
        )
    piece["owner"] = dict(owner)
    run["slice"] = {**run["slice"], str(k): piece}
    return {**state, "run": run}


def progress(
    state: dict[str, Any],
    run_id: str,
    k: int,
    *,
    after: Any,
    counts: Mapping[str, Any],
    lease_until: str,
) -> dict[str, Any]:
    """``state`` with slice ``k`` read up to ``after`` (what was read before it is written),
    ``counts`` added to its counts and its owner's lease extended."""
    run = the_run(state, run_id)
    piece = dict(run["slice"][str(k)])
    piece["after"] = after
    piece["counts"] = add_counts(piece.get("counts") or {}, counts)
    if piece.get("owner"):
        piece["owner"] = {**piece["owner"], "lease_until": lease_until}
    run["slice"] = {**run["slice"], str(k): piece}
    return {**state, "run": run}


def slice_done(
    state: dict[str, Any],
    run_id: str,
    k: int,
    counts: Mapping[str, Any],
    owner: Mapping[str, Any],
    now: datetime,
    host: str,
) -> tuple[dict[str, Any], bool]:
    """``state`` with slice ``k`` done (``counts`` added), and whether ``owner`` is now the
    run's finisher: every slice is done, and no live process finishes it already."""
    run = the_run(state, run_id)
    piece = dict(run["slice"][str(k)])
    piece.update(done=True, owner=None, counts=add_counts(piece.get("counts") or {}, counts))
    run["slice"] = {**run["slice"], str(k): piece}
    finisher = all(p["done"] for p in run["slice"].values()) and _stale(
        run.get("finisher"), now, host
    )
    if finisher:
        run["finisher"] = dict(owner)
    return {**state, "run": run}, finisher


def take_finish(
    state: dict[str, Any], run_id: str, owner: Mapping[str, Any], now: datetime, host: str
) -> tuple[dict[str, Any], bool]:
    """Whether ``owner`` may finish a run whose slices are all done (its finisher is gone)."""
    run = the_run(state, run_id)
    if not all(p["done"] for p in run["slice"].values()) or not _stale(
        run.get("finisher"), now, host
    ):
        return state, False
    run["finisher"] = dict(owner)
    return {**state, "run": run}, True


def reset_slices(state: dict[str, Any], run_id: str, pit_id: str | None) -> dict[str, Any]:
    """The run read again from the start of every slice, on a new point in time: slices of
    different points in time need not partition the same records, so the done ones are read
    again too (what was written is skipped as unchanged). Counts are kept."""
    run = the_run(state, run_id)
    run["slice"] = {
        k: {**p, "done": False, "after": None, "owner": None} for k, p in run["slice"].items()
    }
    run["pit_id"] = pit_id
    run["resets"] = int(run.get("resets") or 0) + 1
    run["finisher"] = None
    return {**state, "run": run}


def finish(state: dict[str, Any], run_id: str, *, commit: bool, now: str) -> dict[str, Any]:
    """``state`` without its run; with the run's next checkpoint when ``commit`` (every record
    was written), else with the checkpoint it started from (the next run reads the same records
    again, and retries what failed)."""
    run = the_run(state, run_id)
    if not commit:
        return {**state, "run": None}
    checkpoint = {**run["next"], "at": now}
    if run["kind"] == "full":
        checkpoint["full_at"] = now
    elif state.get("checkpoint"):
        checkpoint["full_at"] = state["checkpoint"].get("full_at")
    return {**state, "run": None, "checkpoint": checkpoint}


def run_counts(run: Mapping[str, Any]) -> dict[str, Any]:
    """Every slice's counts added."""
    total = empty_counts()
    for piece in run["slice"].values():
        total = add_counts(total, piece.get("counts") or {})
    return total
