"""Sending one batch while the next is prepared: the ingest's write-behind.

An ingest batch is prepared (its stored chunks read, planned, embedded: the encoder's time) and
then sent (one bulk request: the cluster's time). Done one after the other, the ingest runs at
the sum of both; here the bulk request of batch N runs on one background thread while the
caller prepares batch N+1, so it runs at the slower of the two.

What does not change, and why it holds:

- At most one batch is in flight. :meth:`WriteBehind.submit` first settles the batch in flight
  (waits for its request and hands its outcome to ``settle``), then starts the new one; so the
  requests go out, and are settled, in the order submitted, and a prepared batch is held in
  memory only while the one before it is sent.
- ``settle`` runs on the caller's thread, in order: whatever it records (failed items, the
  run's change, progress) is recorded exactly as if each batch had been sent at once.
- A request that raised is raised by ``settle``, before the next batch is started: nothing is
  written after a failed batch, as before.
- On the way out after an error or an interrupt (Ctrl-C), :meth:`WriteBehind.abandon` waits for
  the request in flight and settles it (its own error is dropped: the first is the one raised),
  so the caller sees every write that happened and nothing writes after it has returned. The
  thread is a daemon: a second Ctrl-C during that wait still ends the process.

``overlap=False`` sends each batch on the caller's thread, at once: the old order of work, for
measuring what the overlap gains and for callers who want it.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import Generic, TypeVar

P = TypeVar("P")
"""A prepared batch."""
R = TypeVar("R")
"""What sending a batch returns."""

Settle = Callable[[P, Callable[[], R]], None]
"""``settle(batch, outcome)``: ``outcome()`` returns what the send returned, or raises its error
(called inside whatever the settler wraps it in: a span, a translation)."""


class WriteBehind(Generic[P, R]):
    """Sends submitted batches one at a time with ``send`` on one background thread, and hands
    each outcome, in order, to ``settle`` on the caller's thread. Use as a context manager (the
    thread ends on the way out)."""

    def __init__(
        self, send: Callable[[P], R], settle: Settle[P, R], *, overlap: bool = True
    ) -> None:
        self._send = send
        self._settle = settle
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
        """Settle the batch in flight (raising what its ``settle`` raises: ``batch`` is then not
        sent), then start sending ``batch``; without overlap, send and settle it now."""
        self.drain()
        future: Future[R] = Future()
        if self.overlap:
            self._start_thread()
            self._jobs.put((batch, future, contextvars.copy_context()))
        else:
            _run(self._send, batch, future)
        self._in_flight = (batch, future)
        if not self.overlap:
            self.drain()

    def drain(self) -> None:
        """Wait for the batch in flight, if any, and settle it (raising what ``settle``
        raises)."""
        if self._in_flight is None:
            return
        batch, future = self._in_flight
        try:
            self._settle(batch, future.result)  # waits for the request inside ``settle``
        finally:
            if future.done():  # not after an interrupt in the wait: abandon waits again
                self._in_flight = None

    def abandon(self) -> None:
        """On the way out after an error: settle the batch in flight, dropping its error."""
        with contextlib.suppress(Exception):
            self.drain()

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
