"""The Kibana saved objects under es_templates/kibana: importable, self-contained, and every field
they use exists in the traces mapping with a type that the aggregation accepts.

Kibana cannot run on the build machines, so this is the check: an aggregation on an unmapped field
shows an empty panel without any error, which nobody notices until they need the dashboard.
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
NUMERIC = {"byte", "short", "integer", "long", "float", "half_float", "double", "scaled_float"}
# Which mapped types each aggregation used by the visualizations accepts.
AGG_TYPES = {
    "percentiles": NUMERIC,
    "avg": NUMERIC,
    "sum": NUMERIC,
    "min": NUMERIC | {"date"},
    "max": NUMERIC | {"date"},
    "terms": {"keyword", "boolean"} | NUMERIC,
    "cardinality": {"keyword", "boolean", "date"} | NUMERIC,
    "date_histogram": {"date"},
}


def _objects() -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for f in FILES:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append((f, json.loads(line)))
    return out


OBJECTS = _objects()


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


def _kql_fields(query: str) -> set[str]:
    """Field names in a KQL query of the forms used here (``field : value``, ``field : *``)."""
    return set(re.findall(r"([@\w][\w.@]*)\s*:", query))


def _aggs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["type"] != "visualization":
        return []
    return list(json.loads(obj["attributes"]["visState"]).get("aggs", []))


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
    for agg in _aggs(obj):
        if "field" in agg["params"]:
            yield f"{agg['type']} agg", agg["params"]["field"]


def test_there_are_saved_objects():
    types = {o["type"] for _, o in OBJECTS}
    assert {"index-pattern", "search", "visualization", "dashboard"} <= types


def test_every_line_is_a_saved_object():
    for f, obj in OBJECTS:
        assert {"id", "type", "attributes", "references"} <= obj.keys(), f.name
        assert obj["attributes"].get("title"), obj["id"]
        assert isinstance(obj["references"], list)


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


def test_searches_and_visualizations_name_their_data_view_by_reference():
    for _, obj in OBJECTS:
        if obj["type"] not in ("search", "visualization"):
            continue
        source = _search_source(obj)
        assert source.get("indexRefName") == SOURCE_REF, obj["id"]
        refs = {r["name"]: r for r in obj["references"]}
        assert refs[SOURCE_REF]["type"] == "index-pattern"
        assert "index" not in source  # an inline id would bypass the reference


def test_dashboard_panels_resolve_to_references():
    for _, obj in OBJECTS:
        if obj["type"] != "dashboard":
            continue
        panels = json.loads(obj["attributes"]["panelsJSON"])
        refs = {r["name"]: r for r in obj["references"]}
        assert panels
        for p in panels:
            assert p["gridData"]["i"] == p["panelIndex"]
            ref = refs[f"{p['panelIndex']}:{p['panelRefName']}"]
            assert ref["type"] == p["type"]
        assert len(refs) == len(panels)
        json.loads(obj["attributes"]["optionsJSON"])


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


def test_the_dashboard_shows_what_the_issue_asks_for():
    vis = {o["id"]: o for _, o in OBJECTS if o["type"] == "visualization"}
    fields = {
        a["params"]["field"] for o in vis.values() for a in _aggs(o) if "field" in a["params"]
    }
    stages = {f for f in FIELDS if f.startswith("hybrid_es.latency_ms.")}
    # latency percentiles per stage, fusion path, reuse rate, top failing queries
    latency = [a for o in vis.values() for a in _aggs(o) if a["type"] == "percentiles"]
    assert {a["params"]["field"] for a in latency} >= stages - {
        "hybrid_es.latency_ms.sparse",
        "hybrid_es.latency_ms.dense",
    }
    assert all(a["params"]["percents"] == [50, 95, 99] for a in latency)
    assert {"hybrid_es.fusion_path", "hybrid_es.packet.reuse", "hybrid_es.query_hash"} <= fields
    (dash,) = [o for _, o in OBJECTS if o["type"] == "dashboard"]
    shown = {r["id"] for r in dash["references"]}
    assert set(vis) <= shown


@pytest.mark.parametrize(
    ("obj_id", "where", "field"),
    [(o["id"], where, f) for _, o in OBJECTS for where, f in _referenced_fields(o)],
)
def test_every_referenced_field_is_mapped(obj_id, where, field):
    assert field in FIELDS, f"{obj_id}: {where} uses {field!r}, which the traces mapping lacks"


def test_aggregations_fit_the_field_types():
    for _, obj in OBJECTS:
        for agg in _aggs(obj):
            field = agg["params"].get("field")
            if field is None:
                assert agg["type"] == "count", (obj["id"], agg)
                continue
            assert FIELDS[field] in AGG_TYPES[agg["type"]], (obj["id"], agg["type"], field)


def test_no_aggregation_reaches_into_nested_candidates():
    # Kibana's aggregation-based visualizations cannot aggregate nested fields: they would be empty.
    for _, obj in OBJECTS:
        for _where, field in _referenced_fields(obj):
            assert not field.startswith("hybrid_es.candidates."), obj["id"]


def test_kql_parser_sees_the_fields():
    assert _kql_fields('operation : "search" and error : *') == {"operation", "error"}
