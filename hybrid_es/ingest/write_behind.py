"""Sending one batch while the next is prepared: the ingest's write-behind.

An ingest batch is prepared (its stored chunks read, planned, embedded: the encoder's time) and
then sent (one bulk request: the cluster's time). Done one after the other, the ingest runs at
the sum of both; here the bulk request of batch N runs on one background thread while the
caller prepares batch N+1, so it runs at the slower of the two.

The caller drives it, and settles each batch itself: :meth:`WriteBehind.take` hands back the
batch in flight with its outcome (waiting for its request), the caller records it, and only then
:meth:`WriteBehind.submit` starts the next. Nothing here calls back into the caller.

What does not change, and why it holds:

- At most one batch is in flight: :meth:`~WriteBehind.submit` refuses a batch while another is
  in flight and not taken, so the requests go out, and are settled, in the order submitted, and
  a prepared batch is held in memory only while the one before it is sent.
- The caller settles on its own thread, in order: whatever it records (failed items, the run's
  change, progress) is recorded exactly as if each batch had been sent at once.
- A request that raised is raised by the taken batch's ``outcome()``, before the next batch is
  started: nothing is written after a failed batch, as before.
- On the way out after an error or an interrupt (Ctrl-C), the caller takes the batch in flight
  once more and settles it (dropping its error: the first is the one raised), so it sees every
  write that happened and nothing writes after it has returned. The thread is a daemon: a second
  Ctrl-C during that wait still ends the process.

``overlap=False`` sends each batch on the caller's thread, at once: the old order of work, for
measuring what the overlap gains and for callers who want it (they take it at once).
"""

from __future__ import annotations

import contextvars
import functools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType
from typing import Generic, TypeVar

from hybrid_es.cluster.engine import Engine
from hybrid_es.ingest.batch import PreparedBatch
from hybrid_es.ingest.bulk import Sent, send_prepared

P = TypeVar("P")
"""A prepared batch."""
R = TypeVar("R")
"""What sending a batch returns."""


@dataclass(frozen=True)
class Taken(Generic[P, R]):
    """A batch that was in flight, and its outcome: ``outcome()`` returns what the send returned,
    or raises its error (called inside whatever the caller wraps it in: a span, a
    translation)."""

    batch: P
    outcome: Callable[[], R]


class WriteBehind(Generic[P, R]):
    """Sends submitted batches one at a time with ``send`` on one background thread; the caller
    takes each back, in order, to settle it. Use as a context manager (the thread ends on the way
    out)."""

    @classmethod
    def of_bulks(cls, client: Engine, *, overlap: bool = True) -> WriteBehind[PreparedBatch, Sent]:
        """The ingest's write-behind: each prepared batch's bulk request sent to ``client``
        (``bulk.send_prepared``)."""
        return WriteBehind(functools.partial(send_prepared, client), overlap=overlap)

    def __init__(self, send: Callable[[P], R], *, overlap: bool = True) -> None:
        self._send = send
        self.overlap = overlap
        self._in_flight: tuple[P, Future[R]] | None = None
        self._jobs: queue.SimpleQueue[tuple[P, Future[R], contextvars.Context] | None] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None

    @property
    def in_flight(self) -> P | None:
        """The batch being sent (submitted and not settled yet), if any."""
        return self._in_flight[0] if self._in_flight else None

    def submit(self, batch: P) -> None:
        """Start sending ``batch`` (without overlap: send it now, on this thread). Raises
        RuntimeError while another batch is in flight: :meth:`take` it first."""
        if self._in_flight is not None:
            raise RuntimeError("a batch is still in flight: take() it before submitting another")
        future: Future[R] = Future()
        if self.overlap:
            self._start_thread()
            self._jobs.put((batch, future, contextvars.copy_context()))
        else:
            _run(self._send, batch, future)
        self._in_flight = (batch, future)

    def take(self) -> Taken[P, R] | None:
        """The batch in flight and its outcome; None when no batch is in flight. ``outcome()``
        waits for the request; once it has an answer (or an error) the batch is no longer in
        flight. An interrupt during that wait leaves it in flight, so the caller's way out takes
        it again and waits once more."""
        if self._in_flight is None:
            return None
        batch, future = self._in_flight

        def outcome() -> R:
            try:
                return future.result()
            finally:
                if future.done() and self._in_flight is not None and self._in_flight[1] is future:
                    self._in_flight = None

        return Taken(batch, outcome)

    def close(self) -> None:
        """End the thread (once it has sent what it holds)."""
        if self._thread is not None:
            self._jobs.put(None)
            if self._in_flight is None:
                self._thread.join()
            self._thread = None

    def __enter__(self) -> WriteBehind[P, R]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="hybrid-es-bulk", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            batch, future, context = job
            # The submitter's context: the client's spans of the request keep their parent.
            context.run(_run, self._send, batch, future)


def _run(send: Callable[[P], R], batch: P, future: Future[R]) -> None:
    """``send(batch)`` into ``future``: its result or its error, whatever it raises."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(send(batch))
    except BaseException as exc:  # carried to the caller's thread, raised there
        future.set_exception(exc)
