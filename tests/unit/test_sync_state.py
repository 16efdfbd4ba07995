"""A sync run's state, without a cluster (``ingest.sync_state``): joining, claiming slices, the
one finisher, resets on a new point in time, and the checkpoint kept when writes failed; and a
slice's resume positions (``ingest.sync_read.SliceStream``)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from hybrid_es.cluster.source_read import ConcreteIndex, Page, SourceIndex
from hybrid_es.ingest import sync_state as st
from hybrid_es.ingest.source_mapping import SourceMapping
from hybrid_es.ingest.sync_read import SliceStream, slice_shards

NOW = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
HOST = "here"


def _owner(pid: int, *, host: str = HOST, minutes: int = 15) -> dict[str, object]:
    return {
        "run_id": "r",
        "host": host,
        "pid": pid,
        "started_at": NOW.isoformat(),
        "lease_until": (NOW + timedelta(minutes=minutes)).isoformat(),
    }


def _run(slices: int = 2, kind: str = "full") -> dict[str, object]:
    return st.new_run(
        run_id="r",
        kind=kind,
        slices=slices,
        read="pit",
        pit_id="p1",
        since=None,
        next_checkpoint={"mode": "modified", "modified": 100},
        started_at=NOW.isoformat(),
    )


def test_one_run_at_a_time_unless_restarted():
    state = st.start_run({}, _run(), replace=None)
    with pytest.raises(st.SyncConflict, match="in progress"):
        st.start_run(state, {**_run(), "run_id": "other"}, replace=None)
    assert st.start_run(state, {**_run(), "run_id": "new"}, replace="r")["run"]["run_id"] == "new"


def test_a_slice_is_read_by_one_live_process():
    me, other = os.getpid(), os.getpid() + 10_000_000  # no such process here
    state = st.start_run({}, _run(), replace=None)
    state = st.claim(state, "r", 0, _owner(me), NOW, HOST)
    assert st.claim(state, "r", 0, _owner(me), NOW, HOST)  # its own owner again: fine
    on_another_host = st.claim(state, "r", 1, _owner(1, host="elsewhere"), NOW, HOST)
    with pytest.raises(st.SyncConflict, match=r"slice 1 .* being read by elsewhere"):
        st.claim(on_another_host, "r", 1, _owner(me), NOW, HOST)
    # A dead process on this host, or a lease run out anywhere: taken over.
    dead = st.claim(state, "r", 1, _owner(other), NOW, HOST)
    assert st.claim(dead, "r", 1, _owner(me), NOW, HOST)
    later = NOW + timedelta(minutes=20)
    assert st.claim(on_another_host, "r", 1, _owner(me), later, HOST)


def test_the_last_slice_done_finishes_the_run_once():
    state = st.start_run({}, _run(), replace=None)
    counts = {**st.empty_counts(), "read": 5, "written": 4, "refused": {"invalid": 1}}
    state, first = st.slice_done(state, "r", 1, counts, _owner(os.getpid()), NOW, HOST)
    assert not first
    state, last = st.slice_done(state, "r", 0, counts, _owner(os.getpid()), NOW, HOST)
    assert last and state["run"]["finisher"]["pid"] == os.getpid()
    # A second process arriving then does not finish it while the finisher lives.
    assert not st.take_finish(state, "r", _owner(1, host="elsewhere"), NOW, HOST)[1]
    totals = st.run_counts(state["run"])
    assert (totals["read"], totals["written"], totals["refused"]) == (10, 8, {"invalid": 2})
    done = st.finish(state, "r", commit=True, now="t1")
    assert done["run"] is None and done["checkpoint"]["modified"] == 100
    assert done["checkpoint"]["full_at"] == "t1"
    with pytest.raises(st.SyncConflict, match="no longer in progress"):
        st.the_run(done, "r")


def test_failed_writes_keep_the_old_checkpoint():
    state = st.start_run({"checkpoint": {"modified": 50}}, _run(kind="changes"), replace=None)
    assert st.finish(state, "r", commit=False, now="t")["checkpoint"] == {"modified": 50}


def test_a_new_point_in_time_reads_every_slice_again():
    state = st.start_run({}, _run(), replace=None)
    state = st.progress(state, "r", 0, after=[7], counts={}, lease_until="x")
    state, _ = st.slice_done(state, "r", 1, st.empty_counts(), _owner(1), NOW, HOST)
    again = st.reset_slices(state, "r", "p2")["run"]
    assert again["pit_id"] == "p2" and again["resets"] == 1
    assert all(not p["done"] and p["after"] is None for p in again["slice"].values())


def _mapping() -> SourceMapping:
    return SourceMapping.of("src", "acme", {"text": "body", "org": "tenant"})


def _page(ids: list[str], after: int, org: str = "acme") -> Page:
    return Page([{"_id": i, "_source": {"text": i, "org": org}} for i in ids], [after])


def test_a_position_is_recorded_only_when_its_pages_are_written():
    stream = SliceStream(_mapping())
    pages = [_page(["a", "b"], 1), _page(["x"], 2, org="globex"), _page(["c", "d"], 3)]
    docs = stream.documents_of(iter(pages))
    assert [next(docs).id for _ in range(3)] == ["a", "b", "c"]  # page 3 is being read
    assert stream.settle(1) is None  # half of page 1 written
    # Page 1 written: page 2 (refused only) ends there too.
    assert stream.settle(1) == ([2], 3, 3)
    assert stream.settle(1) is None  # page 3 not read whole yet
    assert next(docs).id == "d"
    assert list(docs) == []
    assert stream.settle(1) == ([3], 5, 2)
    assert (stream.read, stream.documents, stream.refused) == (5, 4, {"other-tenant": 1})
    assert stream.examples[0]["doc_id"] == "x" and stream.unsettled_records == 0


def test_shards_are_dealt_to_slices_in_a_fixed_order():
    info = SourceIndex("src", (ConcreteIndex("b", "u2", 1), ConcreteIndex("a", "u1", 2)))
    assert slice_shards(info, 0, 2, {"u1/0": 9}) == (("a", "u1/0", 0, 9), ("b", "u2/0", 0, -1))
    assert slice_shards(info, 1, 2, {}) == (("a", "u1/1", 1, -1),)
