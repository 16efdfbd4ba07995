"""The Haystack peer as a process of its own, so that it keeps its own venv and client.

Why a process: ``elasticsearch-haystack`` needs the 8.x Elasticsearch client, ``hybrid-es`` runs
the 9.x one, and one interpreter cannot hold both. The driver
(:class:`~benchmarks.peer.PeerProcess`) starts
``<peer venv>/bin/python -m benchmarks.peer_worker`` and hands it one query
at a time; the worker times its own ``Pipeline.run``, so the pipe between the two is never on the
clock, and while one side works the other waits on a read, costing no CPU.

Protocol: one JSON object a line on stdin, one answer a line on the worker's original stdout
(fd 1 is pointed at stderr first, so a library's ``print`` cannot corrupt the stream)::

    {"op": "versions"}                                   -> {"versions": {...}}
    {"op": "index", "index": I, "source": S, "tenant": T} -> {"index": {report}}
    {"op": "pipelines", "config": {PeerConfig fields}}   -> {"pipelines": [names]}  (warmed up)
    {"op": "query", "pipeline": P, "text": Q}            -> {"ms": t, "ranked": [...], "stages": {}}
    {"op": "close"}                                      -> {} and the worker exits

A failed request answers ``{"error": "Type: message"}`` and the worker carries on.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any

from benchmarks.peer_pipelines import (
    HYBRID,
    RERANK,
    PeerConfig,
    build_pipeline,
    make_timer,
    run_one,
)
from benchmarks.peer_store import ensure_peer_index

PACKAGES = (
    "haystack-ai",
    "elasticsearch-haystack",
    "sentence-transformers-haystack",
    "elasticsearch",
    "sentence-transformers",
    "transformers",
    "torch",
)


class Worker:
    """The worker's state: the store, the pipelines by name, the component timer."""

    def __init__(self) -> None:
        self.store: Any = None
        self.pipelines: dict[str, Any] = {}
        self.timer: Any = None

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if op == "versions":
            return {"versions": versions()}
        if op == "index":
            self.store, report = ensure_peer_index(req["index"], req["source"], req["tenant"])
            return {"index": report}
        if op == "pipelines":
            return {"pipelines": self.build(PeerConfig(**req["config"]))}
        if op == "query":
            return self.query(req["pipeline"], req["text"])
        raise ValueError(f"unknown op {op!r}")

    def build(self, cfg: PeerConfig) -> list[str]:
        """Build, warm up (models loaded, one query run) and keep the pipelines ``cfg`` asks for."""
        if self.store is None:
            raise RuntimeError("send 'index' before 'pipelines'")
        if cfg.torch_threads:
            import torch

            torch.set_num_threads(cfg.torch_threads)
        self.timer = make_timer()
        names = [HYBRID] + ([RERANK] if cfg.reranker else [])
        for name in names:
            pipe = build_pipeline(self.store, cfg, rerank=name == RERANK)
            pipe.warm_up()
            run_one(pipe, "warm-up query", rerank=name == RERANK)
            self.pipelines[name] = pipe
        return names

    def query(self, name: str, text: str) -> dict[str, Any]:
        """One timed ``Pipeline.run``: its ms, ranked document ids and each component's ms."""
        self.timer.ms = {}
        t = time.perf_counter()
        ranked = run_one(self.pipelines[name], text, rerank=name == RERANK)
        ms = (time.perf_counter() - t) * 1000
        return {"ms": ms, "ranked": ranked, "stages": dict(self.timer.ms)}

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def versions() -> dict[str, str]:
    """The peer side's package versions and torch's thread count."""
    out = {}
    for pkg in PACKAGES:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "missing"
    import torch

    out["torch_threads"] = str(torch.get_num_threads())
    return out


def serve(requests: IO[str], answers: IO[str]) -> None:
    """Answer ``requests`` line by line until ``close`` or end of input."""
    worker = Worker()
    try:
        for line in requests:
            if not line.strip():
                continue
            req = json.loads(line)
            if req.get("op") == "close":
                answers.write("{}\n")
                answers.flush()
                return
            try:
                answer = worker.handle(req)
            except Exception as exc:  # reported to the driver, which decides
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            answers.write(json.dumps(answer) + "\n")
            answers.flush()
    finally:
        worker.close()


def main() -> None:
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    # Known noise: sentence-transformers 6 deprecating an argument Haystack's ranker passes.
    logging.getLogger("sentence_transformers.util.decorators").setLevel(logging.ERROR)
    from hybrid_es.encoders.embedder import quiet_transformers

    quiet_transformers()
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    serve(sys.stdin, answers)


if __name__ == "__main__":
    main()
