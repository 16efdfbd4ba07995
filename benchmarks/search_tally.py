"""What the search benchmark adds up over its queries: per-stage latency, the engine's own ``took``
beside the round trip, fusion paths, reranking, and the ranked documents per query.

Each search's ``timings_ms`` (embed, retrieval, fusion, rerank, total) goes to its stage; what the
named stages leave of the total is "other" (the policy re-check, building the hits), and the
round trip less the engine's ``took`` is the client's side of the ``_msearch``. Hits become a
run for ranx by document: a chunk stands for its document, each document keeping its best rank.
Everything here is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmarks.bench import summary
from hybrid_es.models import SearchResponse

STAGES = ("embed", "retrieval", "fusion", "rerank", "total")
NAMED = ("embed", "retrieval", "fusion", "rerank")
"""The stages whose sum, taken from the total, leaves "other"."""


def stats(values: list[float]) -> dict[str, float | int]:
    """p50, p95, mean, max (three decimals) and count."""
    return summary(values, digits=3)


def leg_names(items: int) -> list[str]:
    """What the responses of an ``_msearch`` are: the native rrf body and both legs, or the legs."""
    return ["rrf body", "bm25 leg", "knn leg"] if items == 3 else ["bm25 leg", "knn leg"]


def document_run(hits: Iterable[tuple[str, int]]) -> dict[str, float]:
    """``(doc_id, final_rank)`` of each hit, best first -> ``{doc_id: 1 / best rank}``."""
    ranked: dict[str, float] = {}
    for doc_id, rank in hits:  # chunk -> corpus document, keeping each document's best rank
        ranked.setdefault(doc_id, 1.0 / rank)
    return ranked


def _stage_lists() -> dict[str, list[float]]:
    return {s: [] for s in STAGES}


def _derived_lists() -> dict[str, list[float]]:
    return {"other": [], "client_side_msearch": []}


@dataclass
class SearchTally:
    """The sums of a benchmark's searches, one :meth:`add` per search."""

    timings: dict[str, list[float]] = field(default_factory=_stage_lists)
    took: dict[str, list[float]] = field(default_factory=dict)
    derived: dict[str, list[float]] = field(default_factory=_derived_lists)
    paths: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    run: dict[str, dict[str, float]] = field(default_factory=dict)
    rerank_note: str = ""
    reranked: int = 0
    hits_returned: list[int] = field(default_factory=list)

    def add_timings(self, tm: Mapping[str, float], took: Mapping[str, Any] | None) -> None:
        """One search's stage timings and, when recorded, its ``_msearch`` took."""
        for stage in STAGES:
            if stage in tm:
                self.timings[stage].append(tm[stage])
        staged = sum(tm.get(s, 0.0) for s in NAMED)
        self.derived["other"].append(tm["total"] - staged)
        if took is None:
            return
        if took["took"] is not None:
            self.took.setdefault("msearch", []).append(took["took"])
            self.derived["client_side_msearch"].append(tm["retrieval"] - took["took"])
        for name, ms in zip(leg_names(len(took["items"])), took["items"], strict=False):
            if ms is not None:
                self.took.setdefault(name, []).append(ms)

    def add(self, qid: str, resp: SearchResponse, took: Mapping[str, Any] | None) -> None:
        """One search: its timings, fusion path, reranking and ranked documents."""
        self.add_timings(resp.timings_ms, took)
        self.paths[resp.fusion_path] += 1
        self.reasons[resp.fusion_reason] += 1
        self.reranked += int(resp.reranked)
        self.rerank_note = resp.rerank_note
        self.hits_returned.append(len(resp.hits))
        self.run[qid] = document_run((h.doc_id, h.final_rank) for h in resp.hits)

    def latency(self) -> dict[str, Any]:
        """Hits per query and the statistics of every stage, took and derived figure."""
        return {
            "hits_per_query": stats([float(n) for n in self.hits_returned]),
            "stages_ms": {s: stats(v) for s, v in self.timings.items()},
            "es_took_ms": {s: stats(v) for s, v in self.took.items()},
            "derived_ms": {s: stats(v) for s, v in self.derived.items()},
        }
