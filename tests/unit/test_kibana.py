"""The Kibana saved objects under es_templates/kibana: importable, self-contained, and every field
they use exists in the traces mapping with a type that the Lens operation accepts.

Kibana cannot run on the build machines, so this is the check: a Lens column on an unmapped field
(or on a field of the wrong type) shows an empty or broken panel without any error at import,
which nobody notices until they need the dashboard. The aggregations themselves run against real
traces in tests/integration/test_traces.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2] / "es_templates"
FILES = sorted((ROOT / "kibana").glob("*.ndjson"))
MAPPING = ROOT / "component" / "hybrid-es-trace-mappings.json"
INDEX_TEMPLATE = ROOT / "index" / "hybrid-es-traces.json"

SOURCE_REF = "kibanaSavedObjectMeta.searchSourceJSON.index"
LAYER_REF = "indexpattern-datasource-layer-"
RECORDS = "___records___"
"""Lens's pseudo-field of a count of documents."""
NUMERIC = {"byte", "short", "integer", "long", "float", "half_float", "double", "scaled_float"}

CORE_MIGRATION_VERSION = "8.8.0"
TYPE_MIGRATION_VERSIONS = {
    # The versions Kibana 8.9 to 9.x write in an export: an object is migrated forward on import,
    # and refused when it claims a version newer than the Kibana it is imported into. Lens's last
    # migration is 8.9.0 (so the file needs Kibana 8.9 or later).
    "index-pattern": "8.0.0",
    "search": "8.0.0",
    "lens": "8.9.0",
    "dashboard": "8.7.0",
}

# Lens operations: the mapped types each accepts (None: no field), whether it makes buckets, and
# the dataType Lens gives its column.
LENS_OPS: dict[str, tuple[set[str] | None, bool, str | None]] = {
    "date_histogram": ({"date"}, True, "date"),
    "terms": ({"keyword"}, True, "string"),
    "filters": (None, True, "string"),
    "count": (None, False, "number"),
    "percentile": (NUMERIC, False, "number"),
    "median": (NUMERIC, False, "number"),
    "average": (NUMERIC, False, "number"),
    "sum": (NUMERIC, False, "number"),
    "min": (NUMERIC, False, "number"),
    "max": (NUMERIC, False, "number"),
    "last_value": ({"keyword", "boolean", "date"} | NUMERIC, False, None),
}
SERIES_TYPES = {
    "bar",
    "bar_stacked",
    "bar_percentage_stacked",
    "bar_horizontal",
    "bar_horizontal_stacked",
    "line",
    "area",
    "area_stacked",
    "area_percentage_stacked",
}
# Keyed hashes: stable but unreadable, so no panel may show them as if they named something.
HASH_FIELDS = ("hybrid_es.query_hash", "hybrid_es.request_digest")


def _objects() -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for f in FILES:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append((f, json.loads(line)))
    return out


OBJECTS = _objects()
LENS = [o for _, o in OBJECTS if o["type"] == "lens"]


def _mapped_fields() -> dict[str, str]:
    """Dotted field name -> type, through objects and nested fields."""
    props = json.loads(MAPPING.read_text(encoding="utf-8"))["template"]["mappings"]["properties"]
    out: dict[str, str] = {}

    def walk(node: dict[str, Any], prefix: str) -> None:
        for name, spec in node.items():
            full = prefix + name
            if "properties" in spec:
                out[full] = spec.get("type", "object")
                walk(spec["properties"], full + ".")
            else:
                out[full] = spec["type"]

    walk(props, "")
    return out


FIELDS = _mapped_fields()


def _search_source(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["attributes"].get("kibanaSavedObjectMeta", {})
    return json.loads(meta.get("searchSourceJSON", "{}"))


def _kql_fields(query: str) -> list[str]:
    """Field names in a KQL query of the forms used here (``field : value``, ``field : *``), once
    each, in order (a list: test ids made from them must be the same in every pytest-xdist
    worker, whose hash seeds differ)."""
    return list(dict.fromkeys(re.findall(r"([@\w][\w.@]*)\s*:", query)))


def _layers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A Lens object's form-based layers by id."""
    states = obj["attributes"]["state"]["datasourceStates"]
    return dict(states["formBased"]["layers"])


def _columns(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for layer in _layers(obj).values():
        yield from layer["columns"].items()


def _lens_queries(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, query) for every KQL query of a Lens object: its own, each column's filter, each
    filter of a ``filters`` column."""
    yield "query", obj["attributes"]["state"]["query"]
    for cid, col in _columns(obj):
        if "filter" in col:
            yield f"{cid} filter", col["filter"]
        for f in col.get("params", {}).get("filters", []):
            yield f"{cid} filters", f["input"]


def _referenced_fields(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, field) for every field name an object uses."""
    attrs = obj["attributes"]
    if obj["type"] == "index-pattern":
        yield "timeFieldName", attrs["timeFieldName"]
        for f in json.loads(attrs.get("fieldFormatMap") or "{}"):
            yield "fieldFormatMap", f
    for col in attrs.get("columns", []):
        yield "columns", col
    for field, _direction in attrs.get("sort", []):
        yield "sort", field
    query = _search_source(obj).get("query", {})
    if query.get("language") == "kuery":
        for f in _kql_fields(query.get("query", "")):
            yield "query", f
    if obj["type"] == "lens":
        for cid, col in _columns(obj):
            if col.get("sourceField", RECORDS) != RECORDS:
                yield f"{cid} ({col['operationType']})", col["sourceField"]
            if "sortField" in col.get("params", {}):
                yield f"{cid} sortField", col["params"]["sortField"]
        for where, q in _lens_queries(obj):
            for f in _kql_fields(q["query"]):
                yield where, f


# -- the file as Kibana's import reads it -------------------------------------------------------


def test_there_are_saved_objects():
    types = {o["type"] for _, o in OBJECTS}
    assert {"index-pattern", "search", "lens", "dashboard"} <= types
    # The aggregation-based visualizations were replaced by Lens (issue 25): none is left.
    assert "visualization" not in types


def test_every_line_is_a_saved_object():
    for f, obj in OBJECTS:
        assert {"id", "type", "attributes", "references"} <= obj.keys(), f.name
        assert obj["attributes"].get("title"), obj["id"]
        assert isinstance(obj["references"], list)
        for ref in obj["references"]:
            assert set(ref) == {"name", "type", "id"}, (obj["id"], ref)
        assert obj.get("managed") is False, obj["id"]


def test_migration_versions_are_those_of_an_export():
    for _, obj in OBJECTS:
        assert obj.get("coreMigrationVersion") == CORE_MIGRATION_VERSION, obj["id"]
        assert obj.get("typeMigrationVersion") == TYPE_MIGRATION_VERSIONS[obj["type"]], obj["id"]
        assert "migrationVersion" not in obj  # the pre-8.8 field, which the two replace


def test_the_file_is_compact_ndjson():
    # One object a line, each ending in a newline (the import splits on newlines).
    for f in FILES:
        text = f.read_text(encoding="utf-8")
        assert text.endswith("\n") and "\n\n" not in text, f.name
        for line in text.splitlines():
            assert line == json.dumps(json.loads(line), separators=(",", ":"), ensure_ascii=False)


def test_ids_are_unique():
    keys = [(o["type"], o["id"]) for _, o in OBJECTS]
    assert len(keys) == len(set(keys))
    ids = [o["id"] for _, o in OBJECTS]
    assert len(ids) == len(set(ids))


def test_references_resolve_within_the_same_file():
    # kibana.py imports one file per request: a reference into another file may not exist yet.
    for f, obj in OBJECTS:
        local = {(o["type"], o["id"]) for g, o in OBJECTS if g == f}
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in local, (obj["id"], ref)
        names = [r["name"] for r in obj["references"]]
        assert len(names) == len(set(names)), obj["id"]


def test_the_data_view_covers_the_traces_storage_and_not_the_earlier_index():
    from hybrid_es.tenancy import IndexLayout

    (view,) = [o for _, o in OBJECTS if o["type"] == "index-pattern"]
    patterns = json.loads(INDEX_TEMPLATE.read_text(encoding="utf-8"))["index_patterns"]
    layout = IndexLayout()
    # The pattern trace reads use: the data stream and every dated index, but not the plain
    # index of the earlier layout (its fields are not ECS, and `error` there is a keyword).
    assert view["attributes"]["title"] == layout.traces_pattern() in patterns
    assert view["id"] == "hybrid-es-traces"


def test_the_views_use_ecs_names_where_ecs_has_them():
    used = {f for _, o in OBJECTS for _w, f in _referenced_fields(o)}
    ours = {f for f in used if f.startswith("hybrid_es.")}
    assert used - ours <= {
        "@timestamp",
        "event.action",
        "event.outcome",
        "organization.id",
        "user.id",
        "trace.id",
        "error.type",
        "error.message",
    }
    assert {"event.action", "organization.id", "user.id", "trace.id", "error.type"} <= used


def test_the_saved_search_names_its_data_view_by_reference():
    for _, obj in OBJECTS:
        if obj["type"] != "search":
            continue
        source = _search_source(obj)
        assert source.get("indexRefName") == SOURCE_REF, obj["id"]
        refs = {r["name"]: r for r in obj["references"]}
        assert refs[SOURCE_REF]["type"] == "index-pattern"
        assert "index" not in source  # an inline id would bypass the reference


# -- Lens ---------------------------------------------------------------------------------------


def test_lens_objects_parse_and_use_the_form_based_datasource():
    assert LENS
    for obj in LENS:
        attrs = obj["attributes"]
        assert attrs["visualizationType"] in {"lnsXY", "lnsDatatable", "lnsMetric"}, obj["id"]
        state = attrs["state"]
        assert set(state["datasourceStates"]) == {"formBased"}, obj["id"]
        assert state["query"]["language"] == "kuery"
        assert state["filters"] == [] and state["adHocDataViews"] == {}
        assert _layers(obj), obj["id"]
        json.dumps(obj)  # plain JSON all the way down (no NaN, nothing Kibana cannot store)


def test_each_lens_layer_reads_the_data_view_by_reference():
    (view,) = [o for _, o in OBJECTS if o["type"] == "index-pattern"]
    for obj in LENS:
        expected = {f"{LAYER_REF}{layer_id}" for layer_id in _layers(obj)}
        refs = {r["name"]: r for r in obj["references"]}
        assert set(refs) == expected, obj["id"]  # one per layer, and nothing else
        for ref in refs.values():
            assert (ref["type"], ref["id"]) == ("index-pattern", view["id"]), obj["id"]
        for layer in _layers(obj).values():
            assert "indexPatternId" not in layer  # an inline id would bypass the reference


def test_column_order_matches_the_columns_buckets_first():
    for obj in LENS:
        for layer_id, layer in _layers(obj).items():
            order, columns = layer["columnOrder"], layer["columns"]
            assert sorted(order) == sorted(columns) and len(order) == len(set(order)), layer_id
            bucketed = [columns[c]["isBucketed"] for c in order]
            # Buckets nest in column order and the metrics sit inside the innermost bucket.
            assert bucketed == sorted(bucketed, reverse=True), (obj["id"], order)
            assert layer.get("incompleteColumns", {}) == {}, obj["id"]


def test_every_column_fits_its_field():
    for obj in LENS:
        for cid, col in _columns(obj):
            where = f"{obj['id']}: column {cid}"
            op = col["operationType"]
            assert op in LENS_OPS, f"{where}: unknown operation {op}"
            accepts, bucketed, data_type = LENS_OPS[op]
            assert col["isBucketed"] is bucketed, where
            assert col["label"], where
            field = col.get("sourceField")
            if accepts is None:
                assert field in (None, RECORDS), where
            else:
                assert field in FIELDS, f"{where}: {field!r} is not in the traces mapping"
                assert FIELDS[field] in accepts, f"{where}: {op} on {FIELDS[field]} {field}"
            if data_type is not None:
                assert col["dataType"] == data_type, where
            params = col.get("params", {})
            if op == "percentile":
                assert 0 < params["percentile"] < 100, where
            if op == "terms":
                assert params["size"] >= 1, where
                order = params["orderBy"]
                if order["type"] == "column":
                    target = _layer_of(obj, cid)["columns"][order["columnId"]]
                    assert not target["isBucketed"], where
                assert params["orderDirection"] in ("asc", "desc"), where
            if op == "date_histogram":
                assert col["scale"] == "interval", where
            if op == "last_value":
                assert FIELDS[params["sortField"]] == "date", where
            if op == "filters":
                assert params["filters"], where
                for f in params["filters"]:
                    assert f["label"] and f["input"]["language"] == "kuery", where


def _layer_of(obj: dict[str, Any], cid: str) -> dict[str, Any]:
    (layer,) = [layer for layer in _layers(obj).values() if cid in layer["columns"]]
    return layer


def test_every_lens_query_names_mapped_fields():
    for obj in LENS:
        for where, q in _lens_queries(obj):
            assert q["language"] == "kuery", (obj["id"], where)
            for f in _kql_fields(q["query"]):
                assert f in FIELDS, f"{obj['id']}: {where} uses {f!r}, which is not mapped"


def _accessors(obj: dict[str, Any]) -> Iterator[tuple[str, str, str | None, bool]]:
    """(layer id, column id, role, whether the role takes a bucketed column) for every column
    the visualization state names."""
    vis = obj["attributes"]["state"]["visualization"]
    kind = obj["attributes"]["visualizationType"]
    if kind == "lnsXY":
        for layer in vis["layers"]:
            assert layer["layerType"] == "data", obj["id"]
            lid = layer["layerId"]
            if "xAccessor" in layer:
                yield lid, layer["xAccessor"], "xAccessor", True
            if "splitAccessor" in layer:
                yield lid, layer["splitAccessor"], "splitAccessor", True
            assert layer["accessors"], obj["id"]
            for a in layer["accessors"]:
                yield lid, a, "accessors", False
    elif kind == "lnsDatatable":
        lid = vis["layerId"]
        for col in vis["columns"]:
            bucketed = _layers(obj)[lid]["columns"][col["columnId"]]["isBucketed"]
            yield lid, col["columnId"], "columns", bucketed
        if "sorting" in vis:
            sort = vis["sorting"]["columnId"]
            yield lid, sort, "sorting", _layers(obj)[lid]["columns"][sort]["isBucketed"]
    elif kind == "lnsMetric":
        lid = vis["layerId"]
        for role in ("metricAccessor", "secondaryMetricAccessor", "maxAccessor"):
            if role in vis:
                yield lid, vis[role], role, False
        if "breakdownByAccessor" in vis:
            yield lid, vis["breakdownByAccessor"], "breakdownByAccessor", True
    else:
        raise AssertionError(f"{obj['id']}: no accessor check for {kind}")


def test_the_visualization_names_existing_columns_of_its_layer():
    for obj in LENS:
        layers = _layers(obj)
        used: dict[str, set[str]] = {lid: set() for lid in layers}
        for lid, cid, role, bucketed in _accessors(obj):
            assert lid in layers, f"{obj['id']}: {role} names layer {lid!r}, which has no data"
            columns = layers[lid]["columns"]
            assert cid in columns, f"{obj['id']}: {role} names {cid!r}, not a column of {lid}"
            assert columns[cid]["isBucketed"] is bucketed, f"{obj['id']}: {role} {cid}"
            used[lid].add(cid)
        for lid, layer in layers.items():
            # A column the chart does not show is still computed: there is none.
            assert used[lid] == set(layer["columns"]), (obj["id"], lid)


def test_xy_charts_are_over_time_and_stack_what_they_split():
    for obj in LENS:
        if obj["attributes"]["visualizationType"] != "lnsXY":
            continue
        vis = obj["attributes"]["state"]["visualization"]
        assert vis["preferredSeriesType"] in SERIES_TYPES
        for layer in vis["layers"]:
            assert layer["seriesType"] in SERIES_TYPES, obj["id"]
            x = _layers(obj)[layer["layerId"]]["columns"][layer["xAccessor"]]
            assert (x["operationType"], x["sourceField"]) == ("date_histogram", "@timestamp")
            if "splitAccessor" in layer:
                assert "stacked" in layer["seriesType"], obj["id"]


def test_no_object_shows_a_query_hash():
    # A keyed hash reads as noise: counting failures per hash told an operator nothing.
    for _, obj in OBJECTS:
        text = json.dumps(obj)
        for field in HASH_FIELDS:
            assert field not in text, f"{obj['id']} uses {field}"


# -- the dashboard ------------------------------------------------------------------------------


def test_dashboard_panels_resolve_to_references():
    by_key = {(o["type"], o["id"]) for _, o in OBJECTS}
    for _, obj in OBJECTS:
        if obj["type"] != "dashboard":
            continue
        panels = json.loads(obj["attributes"]["panelsJSON"])
        refs = {r["name"]: r for r in obj["references"]}
        assert panels
        for p in panels:
            assert p["gridData"]["i"] == p["panelIndex"]
            assert p["type"] in ("lens", "search")
            assert "embeddableConfig" in p and "version" in p
            ref = refs[f"{p['panelIndex']}:{p['panelRefName']}"]
            assert ref["type"] == p["type"]
            assert (ref["type"], ref["id"]) in by_key
        assert len(refs) == len(panels)
        json.loads(obj["attributes"]["optionsJSON"])


def test_the_dashboard_shows_every_lens_object_and_the_saved_search():
    (dash,) = [o for _, o in OBJECTS if o["type"] == "dashboard"]
    shown = {(r["type"], r["id"]) for r in dash["references"]}
    assert {("lens", o["id"]) for o in LENS} <= shown
    assert ("search", "hybrid-es-traces-search") in shown
    # The same id as before Lens: an import with overwrite replaces the old dashboard.
    assert dash["id"] == "hybrid-es-traces-dashboard"


def test_dashboard_panels_do_not_overlap():
    for _, obj in OBJECTS:
        if obj["type"] != "dashboard":
            continue
        cells: set[tuple[int, int]] = set()
        for p in json.loads(obj["attributes"]["panelsJSON"]):
            g = p["gridData"]
            assert g["x"] >= 0 and g["x"] + g["w"] <= 48
            mine = {
                (x, y)
                for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])
            }
            assert not cells & mine, p["panelIndex"]
            cells |= mine


# -- what the issue asks the dashboard to answer ------------------------------------------------


def _over_time(obj: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """An XY chart's split column (or None) and its metric columns."""
    (layer,) = obj["attributes"]["state"]["visualization"]["layers"]
    columns = _layers(obj)[layer["layerId"]]["columns"]
    split = columns[layer["splitAccessor"]] if "splitAccessor" in layer else None
    return split, [columns[a] for a in layer["accessors"]]


def _charts() -> list[dict[str, Any]]:
    return [o for o in LENS if o["attributes"]["visualizationType"] == "lnsXY"]


def _query(obj: dict[str, Any]) -> str:
    return str(obj["attributes"]["state"]["query"]["query"])


def test_latency_p50_and_p95_per_search_stage_over_time():
    from hybrid_es.traces.documents import STAGES

    # The stages a search records: both legs run in one request (sparse and dense are not timed
    # apart), the packet stages belong to packet operations, and a model load happens once per
    # process (its searches carry it; no percentile of it over time means anything).
    stages = {f"hybrid_es.latency_ms.{s}" for s in STAGES} - {
        "hybrid_es.latency_ms.model_load",
        "hybrid_es.latency_ms.sparse",
        "hybrid_es.latency_ms.dense",
        "hybrid_es.latency_ms.packet_build",
        "hybrid_es.latency_ms.packet_validate",
    }
    for p in (50, 95):
        shown = {
            m["sourceField"]
            for o in _charts()
            if '"search"' in _query(o)
            for m in _over_time(o)[1]
            if m["operationType"] == "percentile" and m["params"]["percentile"] == p
        }
        assert shown >= stages, p
    packet = {
        (m["sourceField"], m["params"]["percentile"])
        for o in _charts()
        for m in _over_time(o)[1]
        if m["operationType"] == "percentile" and ".packet_" in m["sourceField"]
    }
    assert packet == {
        (f"hybrid_es.latency_ms.packet_{op}", p) for op in ("build", "validate") for p in (50, 95)
    }


def _splits() -> dict[str, dict[str, Any]]:
    """The split column of each chart over time, by chart id."""
    out = {}
    for o in _charts():
        split, _ = _over_time(o)
        if split is not None:
            out[o["id"]] = split
    return out


def test_fusion_path_and_fallbacks_over_time():
    splits = _splits().values()
    assert any(s.get("sourceField") == "hybrid_es.fusion_path" for s in splits)
    (fallbacks,) = [
        s
        for s in splits
        if s["operationType"] == "filters"
        and any("hybrid_es.fusion_reason" in f["input"]["query"] for f in s["params"]["filters"])
    ]
    queries = [f["input"]["query"] for f in fallbacks["params"]["filters"]]
    assert any("client-*" in q for q in queries) and any("bm25-only" in q for q in queries)


def test_rerank_share_and_verdicts_and_errors_over_time():
    splits = list(_splits().values())
    assert any(
        s["operationType"] == "filters"
        and all(
            _kql_fields(f["input"]["query"]) == ["hybrid_es.reranked"]
            for f in s["params"]["filters"]
        )
        for s in splits
    )
    fields = {s.get("sourceField") for s in splits}
    assert {"hybrid_es.packet.verdict", "error.type", "organization.id"} <= fields


def test_searches_and_results_per_tenant():
    tables = [o for o in LENS if o["attributes"]["visualizationType"] == "lnsDatatable"]
    found = False
    for t in tables:
        cols = [c for _, c in _columns(t)]
        if any(c.get("sourceField") == "organization.id" for c in cols):
            ops = {(c["operationType"], c.get("sourceField")) for c in cols}
            found |= {("count", RECORDS), ("sum", "hybrid_es.hit_count")} <= ops
    assert found


# -- every field, one case each -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj_id", "where", "field"),
    [(o["id"], where, f) for _, o in OBJECTS for where, f in _referenced_fields(o)],
)
def test_every_referenced_field_is_mapped(obj_id, where, field):
    assert field in FIELDS, f"{obj_id}: {where} uses {field!r}, which the traces mapping lacks"


def test_no_aggregation_reaches_into_nested_candidates():
    # Lens cannot aggregate nested fields: the panel would be empty.
    for _, obj in OBJECTS:
        for _where, field in _referenced_fields(obj):
            assert not field.startswith("hybrid_es.candidates."), obj["id"]


def test_kql_parser_sees_the_fields():
    assert _kql_fields('operation : "search" and error : *') == ["operation", "error"]
    assert _kql_fields("a.b : x-* and not c : BM25*") == ["a.b", "c"]
