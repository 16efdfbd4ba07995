"""The ingest's write-behind (issue 28 item 5): a batch's bulk request is sent while the next
batch is embedded, and everything the caller records comes out as it did when each batch was sent
at once: the same failures in the same order, nothing sent after a failed batch, the request in
flight settled on the way out of an error or an interrupt.

The sender and the embedder are stand-ins that sleep: what is measured is the scheduling, not
the cluster (the integration suites and ``scripts/bench_ingest.py`` send to the real one)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from hybrid_es.evaluation.metering import HashEmbedder
from hybrid_es.identity import local_chunk_id
from hybrid_es.ingest.batch import batches
from hybrid_es.ingest.bulk import index_actions, retire_actions
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.ingest.report import IngestReport
from hybrid_es.ingest.write_behind import WriteBehind

STEP_S = 0.08
"""What one embedding and one bulk request of the stand-ins take."""


class SlowEmbedder:
    """Embeds like the hashing embedder, after a fixed wait (the encoder's time)."""

    def embed_passages(self, texts: list[str]) -> Any:
        time.sleep(STEP_S)
        return np.zeros((len(texts), 4), dtype=np.float32)


class SlowSender:
    """Sends a batch after a fixed wait; answers with the batch's failed items (those named in
    ``fail_items``), raises for a batch in ``raise_on``. Logs what happened, in order."""

    def __init__(self, *, fail_items: Iterable[str] = (), raise_on: Iterable[int] = ()) -> None:
        self.fail_items, self.raise_on = set(fail_items), set(raise_on)
        self.log: list[str] = []
        self.busy = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def __call__(self, batch: tuple[int, list[str]]) -> list[str]:
        n, items = batch
        with self._lock:
            self.busy += 1
            self.most_at_once = max(self.most_at_once, self.busy)
        self.log.append(f"send {n}")
        try:
            time.sleep(STEP_S)
            if n in self.raise_on:
                raise ConnectionError(f"batch {n}: cluster unreachable")
            return [i for i in items if i in self.fail_items]
        finally:
            with self._lock:
                self.busy -= 1


def _ingest(
    sender: SlowSender, *, overlap: bool, n: int = 6, fail_prepare: int | None = None
) -> tuple[list[str], list[str]]:
    """Embed and send ``n`` batches the way the Ingestor does; the failed items recorded, in
    order, and the log of sends and settles."""
    failed: list[str] = []
    embedder = SlowEmbedder()

    def settle(taken: Any) -> None:
        if taken is not None:
            failed.extend(taken.outcome())
            sender.log.append(f"settle {taken.batch[0]}")

    with WriteBehind(sender, overlap=overlap) as writer:
        try:
            for b in range(n):
                items = [f"{b}-{i}" for i in range(3)]
                embedder.embed_passages(items)
                if b == fail_prepare:
                    raise KeyboardInterrupt  # as if Ctrl-C came while the batch was embedded
                settle(writer.take())
                writer.submit((b, items))
                if not overlap:
                    settle(writer.take())
            settle(writer.take())
        except BaseException:
            with contextlib.suppress(Exception):
                settle(writer.take())
            raise
    return failed, sender.log


def test_the_next_batch_is_embedded_while_the_previous_is_sent():
    t = time.perf_counter()
    _ingest(SlowSender(), overlap=False)
    one_after_the_other = time.perf_counter() - t
    t = time.perf_counter()
    _ingest(SlowSender(), overlap=True)
    overlapped = time.perf_counter() - t
    # 6 batches: 12 steps in a row, against 7 when each send hides under the next embedding.
    assert one_after_the_other >= 12 * STEP_S
    assert overlapped < 0.8 * one_after_the_other, (overlapped, one_after_the_other)


@pytest.mark.parametrize("overlap", [True, False])
def test_failed_items_are_recorded_in_batch_order_and_one_request_is_in_flight(overlap):
    sender = SlowSender(fail_items={"0-1", "2-0", "2-2", "5-1"})
    failed, log = _ingest(sender, overlap=overlap)
    assert failed == ["0-1", "2-0", "2-2", "5-1"]
    assert [e for e in log if e.startswith("settle")] == [f"settle {b}" for b in range(6)]
    assert sender.most_at_once == 1
    for b in range(1, 6):  # a batch is sent only once the one before it is settled
        assert log.index(f"settle {b - 1}") < log.index(f"send {b}")


@pytest.mark.parametrize("overlap", [True, False])
def test_nothing_is_sent_after_a_batch_whose_request_failed(overlap):
    sender = SlowSender(fail_items={"1-0"}, raise_on={2})
    with pytest.raises(ConnectionError, match="batch 2"):
        _ingest(sender, overlap=overlap)
    assert "send 3" not in sender.log  # embedded, perhaps, but never sent
    assert sender.log[-1] == "send 2" and "settle 1" in sender.log


def test_an_interrupt_while_embedding_settles_the_request_in_flight():
    sender = SlowSender(fail_items={"3-2"})
    failed: list[str] = []

    def settle(taken: Any) -> None:
        if taken is not None:
            failed.extend(taken.outcome())

    with pytest.raises(KeyboardInterrupt), WriteBehind(sender) as writer:
        try:
            for b in range(6):
                items = [f"{b}-{i}" for i in range(3)]
                SlowEmbedder().embed_passages(items)
                if b == 4:
                    raise KeyboardInterrupt
                settle(writer.take())
                writer.submit((b, items))
        except BaseException:
            settle(writer.take())
            assert writer.in_flight is None  # batch 3 was waited for and recorded
            raise
    assert failed == ["3-2"]
    assert sender.log == [f"send {b}" for b in range(4)]
    assert not [t for t in threading.enumerate() if t.name == "hybrid-es-bulk"]


def test_the_ingestor_overlaps_by_default_and_can_be_told_not_to():
    closed = Elasticsearch("http://127.0.0.1:9")
    assert Ingestor(closed, HashEmbedder(), index="chunks").overlap_bulk is True
    assert (
        Ingestor(closed, HashEmbedder(), index="chunks", overlap_bulk=False).overlap_bulk is False
    )


def test_batches_refuse_other_tenants_in_stream_order_and_split_on_a_second_version():
    docs = [
        Document(id="a", tenant="t", body="one"),
        Document(id="x", tenant="other", body="not ours"),
        Document(id="b", tenant="t", body="two"),
        Document(id="a", tenant="t", body="one, changed", version=2),
        Document(id="c", tenant="t", body="three"),
        Document(id="d", tenant="t", body="four"),
        Document(id="e", tenant="t", body="five"),
    ]
    report = IngestReport()
    out = [([d.id for d in batch], refresh) for batch, refresh in batches(docs, "t", 3, report)]
    # The second version of "a" ends its batch early and starts one planned after a refresh.
    assert out == [(["a", "b"], False), (["a", "c", "d"], True), (["e"], False)]
    assert [f["doc_id"] for f in report.failed_documents] == ["x"]
    assert report.documents == 1


def test_the_bulk_actions_carry_the_tenant_key_and_leave_the_records_as_they_were():
    records = [{"chunk_id": "doc::v1::0", "search_payload": "p"}]
    actions = index_actions(records, [[0.5, 0.25]], "chunks", "t")
    assert actions[0]["_source"]["embedding"] == [0.5, 0.25]
    assert "embedding" not in records[0]
    assert local_chunk_id(actions[0]["_id"]) == "doc::v1::0" != actions[0]["_id"]
    retire = retire_actions(
        [("doc::v0::0", {"valid_to": "x"})], ["doc::v0::1"], "chunks", "t", stamp="2026-12-05"
    )
    assert [a["_op_type"] for a in retire] == ["update", "delete"]
