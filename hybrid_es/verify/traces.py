"""Item 6: trace storage, as ``cluster.trace_storage`` probes it, is in place with its retention.

- a data stream with a lifecycle (Elasticsearch): the stream exists and its lifecycle's
  ``data_retention`` is ``HYBRID_ES_TRACE_RETENTION_DAYS`` (``GET _data_stream/<s>/_lifecycle``);
- a data stream (OpenSearch): the stream exists; retention is ``hybrid-es traces prune``'s;
- dated indices: the traces index template is installed, and the days held are listed;
  retention is ``hybrid-es traces prune``'s.

Read-only. A pinned ``HYBRID_ES_TRACE_STORAGE`` is what the deployment writes to, and is checked
against what the cluster has.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.trace_storage import (
    TraceStorageKind,
    backing_indices,
    describe,
    get_data_stream,
    probe_trace_storage,
)
from hybrid_es.errors import AuthenticationError, EngineError
from hybrid_es.namespace import in_namespace
from hybrid_es.settings import Settings
from hybrid_es.verify.report import Check, failed, passed, refusal, unavailable

ITEM = 6
TRACES_TEMPLATE = "hybrid-es-traces"
"""Its name in the default namespace (``in_namespace`` gives the deployment's)."""
BOOTSTRAP = "run `hybrid-es bootstrap`"


def check_traces(engine: Engine, settings: Settings, *, today: date | None = None) -> Check:
    """Item 6."""
    found, why = probe_trace_storage(engine)
    kind: TraceStorageKind = found if settings.trace_storage == "auto" else settings.trace_storage
    if kind != "dated-indices" and found == "dated-indices":
        return failed(
            ITEM,
            f"HYBRID_ES_TRACE_STORAGE={settings.trace_storage}, but the cluster has no data "
            "streams",
            [why],
        )
    if kind == "data-stream" and found == "data-stream-lifecycle":
        kind = found  # Elasticsearch's streams always have a lifecycle to check
    lines = [
        f"{kind}: found by the probe"
        if kind == found
        else f"{kind}: HYBRID_ES_TRACE_STORAGE ({describe(found)} found by the probe)"
    ]
    try:
        if kind == "data-stream-lifecycle":
            return _lifecycle(engine, settings, lines)
        if kind == "data-stream":
            return _stream(engine, settings, lines)
        return _dated(engine, settings, lines, today or datetime.now(UTC).date())
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        why = refusal(exc.message)
        return unavailable(ITEM, f"the credentials may not read the trace storage: {why}")


def _lifecycle(engine: Engine, settings: Settings, lines: list[str]) -> Check:
    stream = settings.layout().traces_stream()
    try:
        resp = engine.request(
            "GET", f"/_data_stream/{stream}/_lifecycle", what=f"reading {stream}'s lifecycle"
        )
    except EngineError as exc:
        if exc.status == 404:
            return failed(ITEM, f"there is no data stream {stream}: {BOOTSTRAP}", lines)
        raise
    streams = [s for s in resp.get("data_streams", []) if s.get("name") == stream]
    lifecycle = (streams[0].get("lifecycle") or {}) if streams else {}
    want = f"{settings.trace_retention_days}d"
    retention = lifecycle.get("data_retention")
    lines.append(
        f"{stream}: lifecycle {'enabled' if lifecycle.get('enabled', bool(lifecycle)) else 'off'}"
        f", data_retention {retention}, effective {lifecycle.get('effective_retention', '-')}"
    )
    if not lifecycle or lifecycle.get("enabled") is False:
        return failed(ITEM, f"{stream} has no lifecycle: nothing deletes old traces", lines)
    if retention != want:
        return failed(
            ITEM,
            f"{stream} keeps traces {retention or 'forever'}, HYBRID_ES_TRACE_RETENTION_DAYS "
            f"says {want}: {BOOTSTRAP} --force",
            lines,
        )
    return passed(ITEM, f"data stream {stream}; the cluster deletes traces after {want}", lines)


def _stream(engine: Engine, settings: Settings, lines: list[str]) -> Check:
    stream = settings.layout().traces_stream()
    info = get_data_stream(engine, stream)
    if info is None:
        return failed(ITEM, f"there is no data stream {stream}: {BOOTSTRAP}", lines)
    days = settings.trace_retention_days
    n = len(backing_indices(info))
    lines.append(f"{stream}: {n} backing {'index' if n == 1 else 'indices'}")
    return passed(
        ITEM,
        f"data stream {stream}; retention {days} days by `hybrid-es traces prune` "
        "(no lifecycle or ISM policy deletes traces: schedule it)",
        lines,
    )


def _dated(engine: Engine, settings: Settings, lines: list[str], today: date) -> Check:
    layout, days = settings.layout(), settings.trace_retention_days
    name = in_namespace(TRACES_TEMPLATE, settings.namespace)
    try:
        template = "installed" if engine.get_index_template(name) else "missing"
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        template = "not readable with these credentials"
    held = sorted(
        d for d in (layout.traces_day(i) for i in engine.indices(f"{layout.traces}-*")) if d
    )
    oldest = f", the oldest {held[0]}" if held else ""
    days_held = f"{len(held)} day{'' if len(held) == 1 else 's'} held{oldest}"
    lines.append(f"index template {name}: {template}; {days_held}")
    if template == "missing":
        return failed(ITEM, f"the traces index template is not installed: {BOOTSTRAP}", lines)
    stale = [d for d in held if (today - d).days > days]
    if stale:
        lines.append(f"{len(stale)} days older than {days} days: `hybrid-es traces prune` is due")
    return passed(
        ITEM,
        f"an index per UTC day ({layout.traces}-YYYY.MM.DD); retention {days} days by "
        "`hybrid-es traces prune` (schedule it)",
        lines,
    )
