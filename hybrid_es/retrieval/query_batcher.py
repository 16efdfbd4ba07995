"""Concurrent query embeddings, coalesced into one model call.

Under concurrent searches on a few cores, each search running its own forward pass of the query
embedder makes them compete for the same cores, and a batch of short queries costs the model far
less than the same queries one at a time. :class:`QueryBatcher` runs one model call at a time:
a caller that finds the model free takes every query waiting (its own included, up to
``max_batch``) and embeds them together; the others wait for their vector, or for the model to
be free again with theirs still waiting. No thread of its own and no timer: a lone search is
embedded at once, and a batch forms only from searches that are already waiting.

A query's vector is the one the embedder gives for it in a batch; with padding and batched
arithmetic it can differ from the vector of the same query alone in the last float bits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_EMBED_BATCH = 8
"""Most queries embedded in one model call (``HYBRID_ES_EMBED_BATCH``; 1: every query alone)."""


@dataclass
class _Waiting:
    text: str
    vector: Sequence[float] | None = None
    error: BaseException | None = None
    done: bool = field(default=False)


class QueryBatcher:
    """Coalesces concurrent ``embed`` calls into calls of ``embed_many`` (a list of texts in,
    one vector per text out, in order: a list of lists or a 2-d array). An error of a batch is
    raised to every caller in it."""

    def __init__(
        self,
        embed_many: Callable[[list[str]], Any],
        *,
        max_batch: int = DEFAULT_EMBED_BATCH,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self._embed_many = embed_many
        self.max_batch = max_batch
        self._cond = threading.Condition()
        self._queue: list[_Waiting] = []
        self._busy = False
        self.batches = 0
        self.queries = 0
        """Model calls made and queries embedded (their ratio: the mean batch size)."""

    def embed(self, text: str) -> Sequence[float]:
        """The vector of ``text``, embedded alone or with the queries waiting beside it."""
        me = _Waiting(text)
        with self._cond:
            self._queue.append(me)
        while True:
            with self._cond:
                while not me.done and self._busy:
                    self._cond.wait()
                if me.done:
                    return self._result(me)
                self._busy = True
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
            self._run(batch)
            if me.done:
                return self._result(me)

    def _run(self, batch: list[_Waiting]) -> None:
        try:
            vectors = self._embed_many([w.text for w in batch])
            if len(vectors) != len(batch):
                raise RuntimeError(f"the embedder gave {len(vectors)} vectors for {len(batch)}")
            for w, v in zip(batch, vectors, strict=True):
                w.vector = v
        except BaseException as exc:  # every caller of the batch sees its error
            for w in batch:
                w.error = exc
        finally:
            with self._cond:
                for w in batch:
                    w.done = True
                self.batches += 1
                self.queries += len(batch)
                self._busy = False
                self._cond.notify_all()

    @staticmethod
    def _result(w: _Waiting) -> Sequence[float]:
        if w.error is not None:
            raise w.error
        assert w.vector is not None
        return w.vector
