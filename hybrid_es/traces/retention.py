"""Deleting old traces: ``hybrid-es traces prune --older-than 30d``, for operators.

Traces go away a whole index at a time, never a document at a time: a delete-by-query would
rewrite segments on the cluster that serves the searches, at a cost that grows with the traces it
deletes, while deleting an index is one metadata change. Hence the unit of retention is:

- **dated indices** (``<traces>-YYYY.MM.DD``): a day is deleted once all of it is older than the
  cut-off (so a day is kept up to a day longer than asked, never shorter).
- **a data stream without lifecycle** (OpenSearch): a backing index is deleted once its newest
  trace is older than the cut-off. The write index cannot be deleted, so when it holds traces
  older than the cut-off, prune rolls the stream over first; the rolled index goes when its
  newest trace has aged out (this run, or a later one).
- **a data stream with lifecycle** (Elasticsearch): the cluster deletes old backing indices
  itself (``data_retention``); prune leaves the stream alone and says so.

Dated indices are pruned in every mode, so those left from before a cluster gained data streams
still age out. Only names of this deployment's layout are touched: the stream and
``<traces>-YYYY.MM.DD``, never another index that happens to match ``<traces>-*``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any

from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.cluster.trace_storage import backing_indices, get_data_stream, rollover
from hybrid_es.errors import AuthenticationError, BadQueryError, EngineError, PolicyViolationError
from hybrid_es.models import Principal
from hybrid_es.tenancy import IndexLayout
from hybrid_es.traces.door import TracesDoor
from hybrid_es.traces.storage import TraceStorage

MAX_AGE = timedelta(days=36500)
_AGE = re.compile(r"([0-9]{1,6})([dh])")
"""Matched whole (``fullmatch``) after stripping surrounding whitespace; ASCII digits only."""
_UNITS = {"d": "days", "h": "hours"}


def parse_age(text: str) -> timedelta:
    """``30d`` or ``12h`` (surrounding whitespace ignored, the unit in either case) as a
    timedelta. Raises BadQueryError for anything else: no unit, another unit, digits other than
    ASCII ``0-9``, zero (which would delete every finished day) or more than 100 years."""
    m = _AGE.fullmatch(text.strip().lower())
    if not m:
        raise BadQueryError(
            f"{text!r} is not an age; give whole days or hours, e.g. 30d or 12h",
        )
    age = timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    if age <= timedelta(0):
        raise BadQueryError(f"{text!r} would delete every trace; give an age above zero")
    if age > MAX_AGE:
        raise BadQueryError(f"{text!r} is more than 100 years; give a shorter age")
    return age


@dataclass(frozen=True)
class IndexSpan:
    """The oldest and newest ``@timestamp`` in one index (None, None: it is empty)."""

    oldest: datetime | None = None
    newest: datetime | None = None


@dataclass(frozen=True)
class PruneReport:
    """What ``prune_traces`` did (or, with ``dry_run``, would do)."""

    storage: str
    cutoff: str
    dry_run: bool
    deleted: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    rolled_over: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {
            "storage": self.storage,
            "cutoff": self.cutoff,
            "dry_run": self.dry_run,
            "deleted": list(self.deleted),
            "kept": list(self.kept),
            "rolled_over": self.rolled_over,
            "notes": list(self.notes),
        }


def dated_to_delete(
    layout: IndexLayout, names: Sequence[str], cutoff: datetime
) -> tuple[list[str], list[str]]:
    """(delete, keep) among ``names``: a dated traces index is deleted when its whole day ends at
    or before ``cutoff``. Names that are not this layout's dated indices are in neither. Pure."""
    delete: list[str] = []
    keep: list[str] = []
    for name in sorted(names):
        day = layout.traces_day(name)
        if day is None:
            continue
        end = datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC)
        (delete if end <= cutoff else keep).append(name)
    return delete, keep


def stream_to_delete(
    backing: Sequence[str], spans: Mapping[str, IndexSpan], cutoff: datetime
) -> tuple[bool, list[str], list[str]]:
    """(roll over first, delete, keep) for a data stream's backing indices, oldest first, the
    last the write index. An index goes when its newest trace is older than ``cutoff`` (or it is
    empty); the write index only after a rollover, which is due when it holds a trace older than
    ``cutoff``. Pure."""
    if not backing:
        return False, [], []
    *older, write = backing
    span = spans.get(write, IndexSpan())
    roll = span.oldest is not None and span.oldest < cutoff
    delete: list[str] = []
    keep: list[str] = []
    for name in [*older, write] if roll else older:
        s = spans.get(name, IndexSpan())
        (delete if s.newest is None or s.newest < cutoff else keep).append(name)
    if not roll:
        keep.append(write)
    return roll, delete, keep


def prune_traces(
    client: Engine | Any,
    storage: TraceStorage,
    principal: Principal,
    *,
    older_than: timedelta,
    now: datetime,
    dry_run: bool = False,
) -> PruneReport:
    """Delete traces older than ``now - older_than``, whole indices at a time (module docstring).

    Operators only: pruning deletes every tenant's traces. ``dry_run`` reads and reports, and
    deletes nothing. Raises PolicyViolationError for anyone else, BadQueryError for an age that
    is not positive, AuthenticationError (before anything is read or deleted) for credentials
    that may not list the trace indices (:func:`check_can_list`), and the engine's errors.
    """
    if not principal.is_operator:
        raise PolicyViolationError(
            "pruning deletes every tenant's traces: operators only",
            hint="run it as an operator (hybrid-es traces prune --operator)",
        )
    if older_than <= timedelta(0):
        raise BadQueryError("the age must be above zero")
    engine = as_engine(client)
    check_can_list(engine, storage.pattern, delete=not dry_run)
    cutoff = now.astimezone(UTC) - older_than
    layout = storage.layout
    notes: list[str] = []
    deleted: list[str] = []
    kept: list[str] = []
    rolled: str | None = None

    if storage.is_stream:
        stream = get_data_stream(engine, storage.stream)
        if stream is None:
            notes.append(f"no data stream {storage.stream} yet")
        elif storage.kind == "data-stream-lifecycle":
            notes.append(
                f"{storage.stream}: retention is the cluster's (data stream lifecycle, "
                "HYBRID_ES_TRACE_RETENTION_DAYS; set by bootstrap); nothing to prune there"
            )
        else:
            backing = backing_indices(stream)
            # Unrefreshed traces would make an index look older (or empty) than it is.
            engine.refresh(storage.stream)
            spans = _spans(TracesDoor(engine, storage), principal, storage.stream)
            roll, delete, keep = stream_to_delete(backing, spans, cutoff)
            if roll:
                rolled = backing[-1]
                if not dry_run:
                    rolled = rollover(engine, storage.stream) or rolled
            deleted += delete
            kept += keep

    dated_delete, dated_keep = dated_to_delete(layout, engine.indices(storage.pattern), cutoff)
    deleted += dated_delete
    kept += dated_keep
    if not dry_run:
        for name in deleted:
            engine.delete_index(name)
    return PruneReport(
        storage=storage.kind,
        cutoff=cutoff.isoformat(timespec="seconds"),
        dry_run=dry_run,
        deleted=tuple(deleted),
        kept=tuple(kept),
        rolled_over=rolled,
        notes=tuple(notes),
    )


LIST_PRIVILEGES = ("view_index_metadata", "monitor")
"""What listing the trace indices (and reading their ages) needs; pruning adds delete_index."""


def check_can_list(engine: Engine, pattern: str, *, delete: bool) -> None:
    """Raise AuthenticationError (403) unless these credentials may list (and, with ``delete``,
    delete) every index ``pattern`` matches.

    Elasticsearch resolves a wildcard to the indices a user may see, so a credential without
    the privilege sees an empty list, and a prune would report "deleted 0, kept 0" while the
    indices exist: an answer that looks like success. ``_has_privileges`` tells the two apart.
    OpenSearch's security plugin refuses such a wildcard with a 403 itself; a cluster without
    security lets anyone list."""
    if engine.flavor == "opensearch":
        return
    wanted = [*LIST_PRIVILEGES, *(("delete_index",) if delete else ())]
    try:
        resp = engine.request(
            "POST",
            "/_security/user/_has_privileges",
            body={"index": [{"names": [pattern], "privileges": wanted}]},
            what="checking the privileges on the trace indices",
        )
    except EngineError as exc:
        if exc.status in (400, 404, 405, 500) and "security" in str(exc).lower():
            return  # security is off: every credential may list
        raise
    granted = resp.get("index", {}).get(pattern, {})
    missing = [p for p in wanted if not granted.get(p)]
    if missing:
        who = resp.get("username") or "these credentials"
        raise AuthenticationError(
            f"{who} may not list the trace indices ({pattern}): lacks {', '.join(missing)} on "
            "them, so what they hold cannot be told; nothing was deleted",
            hint="run `hybrid-es traces prune` with the hybrid-es-admin credential "
            "(es_templates/roles/hybrid-es-admin.json)",
            status=403,
        )


def _spans(door: TracesDoor, operator: Principal, stream: str) -> dict[str, IndexSpan]:
    """Oldest and newest ``@timestamp`` of each backing index of ``stream`` (one search, of
    every tenant's traces: ``operator``'s)."""
    resp = door.search(
        operator,
        {
            "size": 0,
            "aggs": {
                "by": {
                    "terms": {"field": "_index", "size": 10_000},
                    "aggs": {
                        "oldest": {"min": {"field": "@timestamp"}},
                        "newest": {"max": {"field": "@timestamp"}},
                    },
                }
            },
        },
        index=stream,
        what=f"reading the age of {stream}",
    )
    out = {}
    for b in resp.get("aggregations", {}).get("by", {}).get("buckets", []):
        out[str(b["key"])] = IndexSpan(_ms(b["oldest"].get("value")), _ms(b["newest"].get("value")))
    return out


def _ms(value: Any) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(float(value) / 1000, tz=UTC)
