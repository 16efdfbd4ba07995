"""Trace storage and retention, the pure parts: names, where a trace goes, what prune deletes."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from hybrid_es.errors import BadQueryError, PolicyViolationError
from hybrid_es.models import OPERATOR_ROLE, Principal
from hybrid_es.tenancy import IndexLayout
from hybrid_es.traces.retention import (
    IndexSpan,
    PruneReport,
    dated_to_delete,
    parse_age,
    prune_traces,
    stream_to_delete,
)
from hybrid_es.traces.storage import TraceStorage

LAYOUT = IndexLayout()
NOW = datetime(2026, 4, 30, 12, 0, tzinfo=UTC)


def test_layout_names_the_stream_the_days_and_the_read_pattern():
    assert LAYOUT.traces_stream() == "hybrid-es-traces-stream"
    assert LAYOUT.traces_on(date(2026, 4, 1)) == "hybrid-es-traces-2026.04.01"
    assert LAYOUT.traces_pattern() == "hybrid-es-traces-*"
    assert IndexLayout(traces="t-x").traces_on(date(2026, 12, 31)) == "t-x-2026.12.31"


@pytest.mark.parametrize(
    ("name", "day"),
    [
        ("hybrid-es-traces-2026.04.01", date(2026, 4, 1)),
        ("hybrid-es-traces-2026.02.30", None),  # not a day
        ("hybrid-es-traces-2026.4.1", None),
        ("hybrid-es-traces-2026.04.01-restored", None),
        ("hybrid-es-traces-stream", None),
        ("hybrid-es-traces-test-0123-2026.04.01", None),  # another layout's day
        ("hybrid-es-traces", None),
        (".ds-hybrid-es-traces-stream-2026.04.01-000001", None),
    ],
)
def test_only_this_layouts_dated_indices_have_a_day(name, day):
    assert LAYOUT.traces_day(name) == day


def test_a_trace_goes_to_the_stream_or_to_the_day_of_its_timestamp_in_utc():
    dated, stream = TraceStorage(), TraceStorage(kind="data-stream")
    today = date(2026, 5, 1)
    doc = {"@timestamp": "2026-04-01T23:30:00.000-02:00"}  # 01:30 UTC the next day
    assert dated.target(doc, today=today) == "hybrid-es-traces-2026.04.02"
    assert dated.target({"@timestamp": "2026-04-01T09:00:00Z"}, today=today).endswith("04.01")
    assert dated.target({"@timestamp": "2026-04-01T09:00:00"}, today=today).endswith("04.01")
    for unusable in ({}, {"@timestamp": "yesterday"}, {"@timestamp": 1}):
        assert dated.target(unusable, today=today) == "hybrid-es-traces-2026.05.01"
    assert stream.target(doc, today=today) == "hybrid-es-traces-stream"
    assert TraceStorage(kind="data-stream-lifecycle").is_stream
    assert dated.pattern == stream.pattern == "hybrid-es-traces-*"
    assert dated.describe().startswith("hybrid-es-traces-YYYY.MM.DD (an index per day")
    assert stream.describe().startswith("hybrid-es-traces-stream (data stream")
    with pytest.raises(ValueError, match="trace storage"):
        TraceStorage(kind="shards")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "age"),
    [
        ("30d", timedelta(days=30)),
        (" 12h ", timedelta(hours=12)),
        ("1D", timedelta(days=1)),
        ("36500d", timedelta(days=36500)),
    ],
)
def test_ages(text, age):
    assert parse_age(text) == age


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("30", "not an age"),
        ("30 days", "not an age"),
        ("-1d", "not an age"),
        ("1.5d", "not an age"),
        ("2w", "not an age"),
        ("", "not an age"),
        ("d", "not an age"),
        ("0d", "above zero"),
        ("0h", "above zero"),
        ("36501d", "100 years"),
        ("9999999d", "not an age"),
    ],
)
def test_nonsense_ages_are_refused(text, why):
    with pytest.raises(BadQueryError, match=why):
        parse_age(text)


def test_a_day_goes_once_all_of_it_is_older_than_the_cutoff():
    names = [
        "hybrid-es-traces-2026.03.30",
        "hybrid-es-traces-2026.03.31",
        "hybrid-es-traces-2026.04.01",
        "hybrid-es-traces-stream",
        "hybrid-es-traces-test-x-2026.01.01",
        "hybrid-es-traces-2026.04.01-restored",
    ]
    cutoff = datetime(2026, 4, 1, 0, 0, tzinfo=UTC)  # 31.03 ends exactly at the cutoff
    delete, keep = dated_to_delete(LAYOUT, names, cutoff)
    assert delete == ["hybrid-es-traces-2026.03.30", "hybrid-es-traces-2026.03.31"]
    assert keep == ["hybrid-es-traces-2026.04.01"]  # other names are neither
    delete, keep = dated_to_delete(LAYOUT, names, cutoff - timedelta(seconds=1))
    assert delete == ["hybrid-es-traces-2026.03.30"]


def _at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 4, day, hour, tzinfo=UTC)


def test_a_backing_index_goes_once_its_newest_trace_is_older_than_the_cutoff():
    backing = [".ds-s-000001", ".ds-s-000002", ".ds-s-000003", ".ds-s-000004"]
    spans = {
        ".ds-s-000001": IndexSpan(_at(1), _at(2)),
        # .ds-s-000002 is empty (absent from the aggregation)
        ".ds-s-000003": IndexSpan(_at(3), _at(20)),
        ".ds-s-000004": IndexSpan(_at(21), _at(29)),  # the write index
    }
    roll, delete, keep = stream_to_delete(backing, spans, _at(10))
    assert not roll  # the write index holds nothing older than the cutoff
    assert delete == [".ds-s-000001", ".ds-s-000002"]
    assert keep == [".ds-s-000003", ".ds-s-000004"]


def test_the_write_index_is_rolled_over_when_it_holds_old_traces():
    backing = [".ds-s-000001", ".ds-s-000002"]
    mixed = {".ds-s-000001": IndexSpan(_at(1), _at(2)), ".ds-s-000002": IndexSpan(_at(3), _at(20))}
    assert stream_to_delete(backing, mixed, _at(10)) == (
        True,
        [".ds-s-000001"],
        [".ds-s-000002"],  # rolled over, kept until its newest trace ages out
    )
    all_old = {".ds-s-000002": IndexSpan(_at(3), _at(4))}
    assert stream_to_delete(backing, all_old, _at(10)) == (
        True,
        [".ds-s-000001", ".ds-s-000002"],
        [],
    )
    assert stream_to_delete([".ds-s-000001"], {}, _at(10)) == (False, [], [".ds-s-000001"])
    assert stream_to_delete([], {}, _at(10)) == (False, [], [])


def test_only_an_operator_may_prune():
    tenant_user = Principal(tenant="demo-A", user_id="agent-1")
    with pytest.raises(PolicyViolationError, match="operators only"):
        # refused before any request: no client is needed to find that out
        prune_traces(None, TraceStorage(), tenant_user, older_than=timedelta(days=1), now=NOW)
    ops = Principal(tenant="ops", user_id="o", roles=(OPERATOR_ROLE,))
    with pytest.raises(BadQueryError, match="above zero"):
        prune_traces(None, TraceStorage(), ops, older_than=timedelta(0), now=NOW)


def test_the_prune_report_as_json():
    report = PruneReport("dated-indices", "2026-03-31T12:00:00+00:00", True, ("a",), ("b",))
    assert report.as_dict() == {
        "storage": "dated-indices",
        "cutoff": "2026-03-31T12:00:00+00:00",
        "dry_run": True,
        "deleted": ["a"],
        "kept": ["b"],
        "rolled_over": None,
        "notes": [],
    }
