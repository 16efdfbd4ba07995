"""Dropped traces are counted by reason and reported (issue 25): in the writer's counters, in the
OpenTelemetry counter ``hybrid_es.traces.dropped``, in the warning a closing searcher logs, and on
the CLI's stderr as the process exits. The cluster here is a port nothing listens on: a trace
backend that is down."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from hybrid_es import telemetry
from hybrid_es.cli import common
from hybrid_es.cluster.engine import as_engine
from hybrid_es.settings import Settings
from hybrid_es.traces.wiring import close_writer
from hybrid_es.traces.writer import DROP_REASONS, TraceWriter

DOWN = "http://127.0.0.1:9"  # the discard port: connection refused


def _writer() -> TraceWriter:
    return TraceWriter(Elasticsearch(DOWN), "hybrid-es-traces-drops", flush_interval=0.05)


def _trace(n: int) -> dict[str, Any]:
    return {"trace": {"id": f"t{n}"}, "@timestamp": "2026-12-01T00:00:00Z"}


def test_every_drop_is_counted_by_its_reason_and_as_an_otel_metric():
    metrics = pytest.importorskip("opentelemetry.sdk.metrics")
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    telemetry.configure(meter_provider=metrics.MeterProvider(metric_readers=[reader]))
    try:
        writer = _writer()
        assert all(writer.submit(_trace(n)) for n in range(3))  # queued, then the write fails
        writer.record_error(ValueError("a trace that could not be built"))
        stats = writer.close(5.0)
        assert writer.submit(_trace(9)) is False  # after close
        stats = writer.stats()
        data = reader.get_metrics_data()
    finally:
        telemetry.configure()
    assert stats.dropped == 5
    assert stats.dropped_by == {"request_failed": 3, "unbuildable": 1, "closed": 1}
    assert set(stats.dropped_by) <= set(DROP_REASONS)
    counted = {
        p.attributes["reason"]: p.value
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "hybrid_es.traces.dropped"
        for p in m.data.data_points
    }
    assert counted == stats.dropped_by


def test_closing_a_writer_that_dropped_traces_warns_with_the_reasons(caplog):
    writer = _writer()
    writer.submit(_trace(1))
    with caplog.at_level(logging.WARNING, logger="hybrid_es.traces.wiring"):
        stats = close_writer(writer, 5.0)
    assert stats.dropped == 1
    (line,) = [r.getMessage() for r in caplog.records if r.name == "hybrid_es.traces.wiring"]
    assert "0 written, 1 dropped (1 request_failed)" in line
    assert "hybrid-es-traces-drops" in line


def test_the_cli_reports_dropped_traces_on_stderr_as_it_exits(monkeypatch, capsys):
    s = Settings(url=DOWN, traces=True, trace_storage="dated-indices", api_key=None, username=None)
    key = ("engine", s.redacted_url(), s.username, s.api_key is not None, bool(s.bearer_auth))
    monkeypatch.setitem(common._process, key, as_engine(Elasticsearch(DOWN), url=DOWN))
    monkeypatch.delitem(common._process, "tracer", raising=False)
    at_exit: list[tuple[Any, tuple[Any, ...]]] = []
    monkeypatch.setattr("atexit.register", lambda fn, *args: at_exit.append((fn, args)))
    common._show_warnings()  # what every command's settings() installs
    try:
        common.tracer(s).writer.submit(_trace(1))
    finally:
        common._process.pop("tracer", None)
    ((fn, args),) = at_exit
    fn(*args)  # what the interpreter runs at exit
    err = capsys.readouterr().err
    assert "warning: traces: 0 written, 1 dropped (1 request_failed)" in err
