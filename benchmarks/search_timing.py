"""Instruments for the search benchmark (``scripts/bench_search.py``): wrappers that time or record
what the package code does, without changing it.

``TimedCorpusState`` adds up the seconds spent moving the tenant's watermark during an ingest;
``TookRecorder`` hands the searcher an engine that remembers the ``took`` the engine reported for
each ``_msearch``, so the searcher's round trip can be set beside the engine's own time.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine


class TimedCorpusState(CorpusState):
    """Adds up the seconds spent moving the tenant watermark (one move per ingest run that
    wrote something: ``finish``; or a direct ``bump``)."""

    def __init__(self, client: Engine, index: str) -> None:
        super().__init__(client, index, url=client.url)
        self.seconds = 0.0
        self.bumps = 0

    def bump(self, tenant: str, change: str) -> int:
        t = time.perf_counter()
        try:
            return super().bump(tenant, change)
        finally:
            self.seconds += time.perf_counter() - t
            self.bumps += 1

    def finish(self, tenant: str, run_id: str, change: str | None) -> int:
        t = time.perf_counter()
        try:
            return super().finish(tenant, run_id, change)
        finally:
            self.seconds += time.perf_counter() - t
            self.bumps += change is not None


def took_record(path: str, body: Any) -> dict[str, Any] | None:
    """The ``took`` of an ``_msearch`` answer and of each of its responses (None for any other
    request)."""
    if path == "/_msearch" and isinstance(body, dict):
        return {
            "took": body.get("took"),
            "items": [item.get("took") for item in body.get("responses", [])],
        }
    return None


class TookRecorder:
    """An engine for the searcher (``.engine``: a copy of the given one) that records the
    ``took`` of each ``_msearch`` it sends.

    ``took`` is the time the engine itself reports; the searcher's ``retrieval`` stage is the
    whole round trip (serialising the query vector, HTTP, parsing the hits with their _source).
    """

    def __init__(self, engine: Engine) -> None:
        self.last: dict[str, Any] | None = None
        self.engine = copy.copy(engine)
        send = engine.request

        def request(method: str, path: str, **kwargs: Any) -> Any:
            body = send(method, path, **kwargs)
            record = took_record(path, body)
            if record is not None:
                self.last = record
            return body

        self.engine.request = request  # type: ignore[method-assign]
