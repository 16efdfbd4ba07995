"""Where traces are stored on this cluster, decided by probing, and the data stream calls that
bootstrap and ``hybrid-es traces prune`` make.

Three kinds (``TraceStorageKind``):

- ``data-stream-lifecycle``: Elasticsearch with its data-streams module. Traces go to a data
  stream whose lifecycle (``data_retention``, ``HYBRID_ES_TRACE_RETENTION_DAYS``) deletes old
  backing indices: retention is the cluster's job.
- ``data-stream``: OpenSearch. Traces go to a data stream; OpenSearch deletes old data only
  through its ISM plugin, and hybrid-es installs no ISM policy, so ``hybrid-es traces prune``
  rolls the stream over and deletes whole backing indices older than the cut-off.
- ``dated-indices``: no data streams (Elasticsearch's integ-test distribution, which lacks the
  data-streams module: no ``_data_stream`` API and no lifecycle service; its core would still
  create a data stream from a template, one that nothing could delete or age out). One index per
  UTC day, and ``hybrid-es traces prune`` deletes whole days.

The probe is one read (``GET /_data_stream/<a pattern that matches nothing>``): it writes
nothing and needs no privilege on any real index.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, Literal

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import Template
from hybrid_es.errors import EngineError
from hybrid_es.namespace import in_namespace
from hybrid_es.tenancy import IndexLayout

TraceStorageKind = Literal["data-stream-lifecycle", "data-stream", "dated-indices"]
TRACE_STORAGE_KINDS: tuple[TraceStorageKind, ...] = (
    "data-stream-lifecycle",
    "data-stream",
    "dated-indices",
)
STREAM_TEMPLATE = "hybrid-es-traces-stream"
"""The index template that turns ``<traces>-stream`` into a data stream; installed only where the
cluster has data streams (``es_templates/index/hybrid-es-traces-stream.json``)."""

_PROBE = "hybrid-es-capability-probe-nonexistent*"


def probe_trace_storage(engine: Engine) -> tuple[TraceStorageKind, str]:
    """The trace storage this cluster supports, and why. Read-only; never raises an engine
    error (an answer it cannot read means dated indices, which work everywhere)."""
    try:
        engine.request("GET", f"/_data_stream/{_PROBE}", what="probing data streams")
    except EngineError as exc:
        if exc.status == 400 and "no handler found" in exc.message:
            return "dated-indices", (
                "trace storage: the cluster has no data stream API (Elasticsearch's data-streams "
                "module is missing): one index per day, `hybrid-es traces prune` deletes old days"
            )
        return "dated-indices", (
            f"trace storage: could not tell whether the cluster has data streams "
            f"({exc.message[:160]}): one index per day"
        )
    if engine.flavor == "opensearch":
        return "data-stream", (
            "trace storage: a data stream; hybrid-es installs no ISM policy, so "
            "`hybrid-es traces prune` rolls it over and deletes old backing indices"
        )
    return "data-stream-lifecycle", (
        "trace storage: a data stream whose lifecycle deletes traces older than "
        "HYBRID_ES_TRACE_RETENTION_DAYS"
    )


def describe(kind: str) -> str:
    """One line for the capability report."""
    return {
        "data-stream-lifecycle": "data stream, retention by its lifecycle",
        "data-stream": "data stream, retention by `traces prune`",
        "dated-indices": "an index per day, retention by `traces prune`",
    }.get(kind, kind)


def get_data_stream(engine: Engine, name: str) -> dict[str, Any] | None:
    """The data stream ``name`` as the cluster describes it (``indices``: its backing indices,
    oldest first, the last one the write index); None when there is none by that name."""
    try:
        resp = engine.request("GET", f"/_data_stream/{name}", what=f"reading data stream {name}")
    except EngineError as exc:
        if exc.status == 404:
            return None
        raise
    streams = [s for s in resp.get("data_streams", []) if s.get("name") == name]
    return dict(streams[0]) if streams else None


def backing_indices(stream: dict[str, Any]) -> list[str]:
    """A data stream's backing indices, oldest first (the last is the write index)."""
    return [str(i["index_name"]) for i in stream.get("indices", [])]


def create_data_stream(engine: Engine, name: str) -> bool:
    """Create the data stream ``name`` (a matching data stream template must be installed);
    False when it exists already."""
    try:
        engine.request("PUT", f"/_data_stream/{name}", what=f"creating data stream {name}")
    except EngineError as exc:
        if exc.status == 400 and "already exists" in exc.message:
            return False
        raise
    return True


def delete_data_stream(engine: Engine, name: str) -> None:
    """Delete a data stream and all its backing indices (tests; nothing in the product)."""
    try:
        engine.request("DELETE", f"/_data_stream/{name}", what=f"deleting data stream {name}")
    except EngineError as exc:
        if exc.status != 404:
            raise


def rollover(engine: Engine, name: str) -> str:
    """Roll a data stream over to a new write index; the old write index's name."""
    resp = engine.request("POST", f"/{name}/_rollover", what=f"rolling over {name}")
    return str(resp.get("old_index", ""))


# -- bootstrap -------------------------------------------------------------------------------


def trace_templates(templates: list[Template], kind: str, retention_days: int) -> list[Template]:
    """The templates to install for this trace storage (pure): without the data stream template
    where the cluster has no data streams; with ``retention_days`` as its lifecycle's
    ``data_retention`` where the cluster deletes old traces itself."""
    out = []
    for t in templates:
        if t.key == STREAM_TEMPLATE:
            if kind == "dated-indices":
                continue
            lifecycle = t.body.get("template", {}).get("lifecycle")
            if kind == "data-stream-lifecycle" and isinstance(lifecycle, dict):
                body = copy.deepcopy(t.body)
                body["template"]["lifecycle"]["data_retention"] = f"{int(retention_days)}d"
                t = replace(t, body=body)
        out.append(t)
    return out


def trace_storage_actions(
    engine: Engine, layout: IndexLayout, kind: str, *, apply: bool
) -> list[tuple[str, str, str, str]]:
    """Bootstrap's trace storage steps, as (kind, name, status, note): the data stream, created
    when ``apply`` and missing (nothing to create for dated indices: the first trace of a day
    creates its index through the template); and the plain traces index of the earlier layout,
    reported as ``legacy`` (kept, no longer written or read). An existing data stream is brought
    up to the template's fields like an index (its backing indices are not indices to bootstrap:
    a template reaches them only at the next rollover)."""
    out: list[tuple[str, str, str, str]] = []
    if kind != "dated-indices":
        stream = layout.traces_stream()
        info = get_data_stream(engine, stream)
        if info is not None:
            template = in_namespace(STREAM_TEMPLATE, layout.namespace)
            out.append(_bring_up(engine, stream, info, template, apply=apply))
        elif apply:
            create_data_stream(engine, stream)
            out.append(("data stream", stream, "create", ""))
        else:
            out.append(("data stream", stream, "missing", ""))
    if engine.indices(layout.traces) == [layout.traces]:
        out.append(
            (
                "index",
                layout.traces,
                "legacy",
                "traces of the earlier layout (field names before ECS): no longer written, "
                "and not read by `traces tail/show`; delete the index once its traces are no "
                "longer needed",
            )
        )
    return out


def _bring_up(
    engine: Engine, stream: str, info: dict[str, Any], template: str, *, apply: bool
) -> tuple[str, str, str, str]:
    """The stream's write index against the installed stream ``template`` (the namespace's):
    fields it lacks are added to the whole stream when ``apply`` (a strict mapping would refuse
    new traces until the next rollover), else reported."""
    simulated = engine.request(
        "POST", f"/_index_template/_simulate/{template}", what="simulating a template"
    )
    want = simulated.get("template", {}).get("mappings", {}).get("properties", {})
    write = backing_indices(info)[-1:]
    mappings = list(engine.get_mapping(write[0]).values()) if write else []
    have: dict[str, Any] = mappings[0].get("properties", {}) if mappings else {}
    missing = missing_properties(want, have)
    if not missing:
        return ("data stream", stream, "unchanged", "")
    fields = ", ".join(sorted(missing))
    if not apply:
        return ("data stream", stream, "conflict", f"missing fields: {fields}")
    engine.put_mapping(stream, {"properties": missing})
    return ("data stream", stream, "update", f"added fields: {fields}")


def missing_properties(want: dict[str, Any], have: dict[str, Any]) -> dict[str, Any]:
    """The mapping properties (at any depth) in ``want`` and not in ``have``. Pure."""
    out: dict[str, Any] = {}
    for name, spec in want.items():
        if name not in have:
            out[name] = spec
        elif "properties" in spec:
            sub = missing_properties(spec["properties"], have[name].get("properties", {}))
            if sub:
                out[name] = {
                    **{k: v for k, v in spec.items() if k != "properties"},
                    "properties": sub,
                }
    return out
