"""The query and passage encoder's runtimes side by side (issue 28: "a cheaper query encoder").

Each runtime of MiniLM (``encoders.embedder.RUNTIMES``) embeds the same questions one at a time on
one thread, interleaved question by question with the order rotated each question, so a change in
the machine's load falls on every runtime alike; then the same passages in the ingest's batches
on all cores, the runtimes again taking turns batch by batch. The cosine of each vector to torch's
float32 one is reported beside the times. Quality (nDCG@10 through the real searcher) is measured
by ``hybrid-es eval`` with ``HYBRID_ES_EMBED_RUNTIME`` (docs/evaluation.md).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.bench import summary
from hybrid_es.encoders.embedder import RUNTIMES, Embedder, make_embedder


@dataclass
class RuntimeRow:
    runtime: str
    query_ms: list[float] = field(default_factory=list)
    passage_s: float = 0.0
    passages: int = 0
    query_cos: list[float] = field(default_factory=list)
    passage_cos: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        q = summary(self.query_ms, 2)
        mean_cos = float(np.mean(self.query_cos)) if self.query_cos else 1.0
        return {
            "runtime": self.runtime,
            "query_ms_p50": q.get("p50", 0.0),
            "query_ms_p95": q.get("p95", 0.0),
            "passages_per_s": round(self.passages / self.passage_s, 1) if self.passage_s else 0.0,
            "query_cosine_min": round(min(self.query_cos, default=1.0), 4),
            "query_cosine_mean": round(mean_cos, 4),
            "passage_cosine_min": round(min(self.passage_cos, default=1.0), 4),
        }


def rotated(names: Sequence[str], i: int) -> list[str]:
    """``names`` starting at the ``i``-th (mod its length): each runtime goes first in turn."""
    k = i % len(names)
    return [*names[k:], *names[:k]]


BATCHED = "onnx-int8-batched"
"""int8 as it ran before it embedded each text alone (``OnnxEmbedder.alone``): the ingest's
batches in one request, each text's vector depending on its neighbours."""


def _model(name: str, threads: int) -> Embedder:
    if name == BATCHED:
        model = make_embedder("minilm", query_threads=threads, runtime="onnx-int8")
        model.alone = False  # type: ignore[attr-defined]
        return model
    return make_embedder("minilm", query_threads=threads, runtime=name)


def measure(
    questions: Sequence[str],
    passages: Sequence[str],
    *,
    runtimes: Sequence[str] = RUNTIMES,
    batch: int = 32,
    threads: int = 1,
) -> list[RuntimeRow]:
    """Time and compare every runtime in ``runtimes`` (torch always runs: it is the reference)."""
    names = list(dict.fromkeys(["torch", *runtimes]))
    models: Mapping[str, Embedder] = {n: _model(n, threads) for n in names}
    for m in models.values():  # load and warm up outside the timings
        m.embed_queries(["warm-up"])
        m.embed_passages(["warm-up passage"])
    rows = {n: RuntimeRow(n) for n in names}
    for i, q in enumerate(questions):
        vecs = {}
        for n in rotated(names, i):
            t = time.perf_counter()
            vecs[n] = models[n].embed_queries([q])[0]
            rows[n].query_ms.append((time.perf_counter() - t) * 1000)
        for n in names:
            rows[n].query_cos.append(float(vecs[n] @ vecs["torch"]))
    for i, start in enumerate(range(0, len(passages), batch)):
        chunk = list(passages[start : start + batch])
        pvecs = {}
        for n in rotated(names, i):
            t = time.perf_counter()
            pvecs[n] = models[n].embed_passages(chunk)
            rows[n].passage_s += time.perf_counter() - t
            rows[n].passages += len(chunk)
        for n in names:
            rows[n].passage_cos.extend((pvecs[n] * pvecs["torch"]).sum(axis=1).tolist())
    return [rows[n] for n in names]
