"""Adapting the bi-encoder to a collection with its judged queries (``hybrid-es embedder train``).

The same pattern as ``reranker_train``: seeded, wall-clock bounded, judged on held-out training
queries, never on a test split. The recipe, and why:

- **Start from the embedder the index was built with** (by default the packaged all-MiniLM-L6-v2),
  so the vectors stay comparable and the held-out "before" costs nothing (the stored vectors).
- **Passages as the index embeds them**: each chunk's ``search_payload`` (its context header and
  text), read back from the index; a relevant document's positive is its best first-stage chunk,
  else its first chunk.
- **In-batch negatives plus hard negatives** (MultipleNegativesRankingLoss: softmax over the
  scaled cosine of a query against every passage in the batch). Hard negatives are sampled,
  seeded, from the top ``negative_pool`` non-relevant documents of our own first stage (hybrid
  RRF). A batch never holds two examples of one query or one positive document, and a passage
  judged relevant to another query of the batch is masked out of that query's row, so a known
  relevant passage is never pushed away.
- **Held-out queries decide**: nDCG@10 of the dense leg alone (exact search over the whole
  collection in memory) and of hybrid RRF (the index's BM25 top 50 fused with that dense top 50),
  before and after training. The record says whether the trained model improved on them.

The pure parts (mining, batching, the mask, the held-out runs) are separate from the torch loop;
the settings both trainers take, the schedule, the optimizer step and the loop's bookkeeping are
in ``training``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hybrid_es.evaluation.metrics import evaluate, ranking_to_run
from hybrid_es.evaluation.reranker_train import Candidate
from hybrid_es.evaluation.training import (
    LoopStats,
    Optimizer,
    Schedule,
    StepLoop,
    TrainingConfig,
)
from hybrid_es.evaluation.training import fit_to_budget as fit_to_budget  # re-exported
from hybrid_es.evaluation.training import lr_factor as lr_factor  # re-exported
from hybrid_es.retrieval import fusion

METADATA_FILE = "hybrid_es_embedder.json"
SERVE_MAX_LENGTH = 256
"""The passage token window the searcher's embedder uses (``SentenceTransformerEmbedder``); the
held-out vectors are computed with it, whatever the training length."""


@dataclass(frozen=True)
class EmbedderTrainConfig(TrainingConfig):
    """The shared training settings (:class:`TrainingConfig`, whose defaults are this trainer's)
    and the bi-encoder's own."""

    batch_size: int = 16
    scale: float = 20.0
    depth: int = 50

    def checks(self) -> dict[str, bool]:
        return {
            **super().checks(),
            "batch_size must be >= 2": self.batch_size >= 2,
            "warmup_fraction must lie in [0, 1)": 0.0 <= self.warmup_fraction < 1.0,
            "scale must be > 0": self.scale > 0,
            "depth must be >= 10": self.depth >= 10,
        }


@dataclass(frozen=True)
class Passage:
    """One indexed chunk as the embedder sees it."""

    chunk_id: str
    doc_id: str
    chunk_no: int
    text: str


@dataclass(frozen=True)
class Example:
    """One training example: a query, one relevant passage and hard negatives ``(doc_id, text)``."""

    qid: str
    query: str
    positive_doc: str
    positive: str
    negatives: tuple[tuple[str, str], ...]


def relevant_docs(qrels: Mapping[str, Mapping[str, int]]) -> dict[str, set[str]]:
    return {q: {d for d, g in docs.items() if g > 0} for q, docs in qrels.items()}


def first_chunks(passages: Sequence[Passage]) -> dict[str, Passage]:
    """Each document's lowest-numbered chunk."""
    out: dict[str, Passage] = {}
    for p in passages:
        if p.doc_id not in out or p.chunk_no < out[p.doc_id].chunk_no:
            out[p.doc_id] = p
    return out


def mine_examples(
    qids: Sequence[str],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    ranked: Mapping[str, Sequence[Candidate]],
    passages: Sequence[Passage],
    *,
    negatives: int,
    negative_pool: int,
    seed: int,
) -> tuple[list[Example], dict[str, int]]:
    """One example per (query, relevant document); counts of what was skipped and why.

    Texts are the passages' embedded text (``passages``, by chunk id), not the candidates' own.
    The positive is the relevant document's best-ranked chunk, else its first chunk; negatives:
    ``negatives`` documents (best chunk each) sampled, seeded, from the top ``negative_pool``
    non-relevant documents of ``ranked``. A query offering fewer is skipped, not padded.
    """
    rng = random.Random(seed)
    by_chunk = {p.chunk_id: p for p in passages}
    first = first_chunks(passages)
    rel = relevant_docs(qrels)
    examples: list[Example] = []
    skipped = {"no_query_text": 0, "no_positive_text": 0, "too_few_negatives": 0}
    for qid in qids:
        text = queries.get(qid, "").strip()
        if not text:
            skipped["no_query_text"] += 1
            continue
        best: dict[str, Passage] = {}
        for c in ranked.get(qid, ()):
            if c.doc_id not in best and c.chunk_id in by_chunk:
                best[c.doc_id] = by_chunk[c.chunk_id]
        relevant = rel.get(qid, set())
        pool = [(d, p.text) for d, p in best.items() if d not in relevant][:negative_pool]
        if len(pool) < negatives:
            skipped["too_few_negatives"] += 1
            continue
        for doc_id in sorted(relevant):
            positive = best.get(doc_id) or first.get(doc_id)
            if positive is None or not positive.text.strip():
                skipped["no_positive_text"] += 1
                continue
            negs = tuple(rng.sample(pool, negatives))
            examples.append(Example(qid, text, doc_id, positive.text, negs))
    return examples, skipped


def make_batches(examples: Sequence[Example], batch_size: int, seed: int) -> list[list[Example]]:
    """One epoch: a seeded shuffle cut into batches in which no query and no positive document
    occurs twice (an example that would repeat one waits for the next batch)."""
    remaining = list(examples)
    random.Random(seed).shuffle(remaining)
    batches: list[list[Example]] = []
    while remaining:
        batch: list[Example] = []
        rest: list[Example] = []
        qids: set[str] = set()
        docs: set[str] = set()
        for ex in remaining:
            if len(batch) < batch_size and ex.qid not in qids and ex.positive_doc not in docs:
                batch.append(ex)
                qids.add(ex.qid)
                docs.add(ex.positive_doc)
            else:
                rest.append(ex)
        batches.append(batch)
        remaining = rest
    return batches


def batch_columns(batch: Sequence[Example]) -> list[tuple[str, str]]:
    """The passages of a batch as ``(doc_id, text)``: every positive, then every negative."""
    return [(ex.positive_doc, ex.positive) for ex in batch] + [
        neg for ex in batch for neg in ex.negatives
    ]


def false_negative_mask(
    batch: Sequence[Example], relevant: Mapping[str, set[str]]
) -> list[list[bool]]:
    """``mask[i][j]``: passage j (as :func:`batch_columns` orders them) is judged relevant to
    example i's query but is not its own positive, so it must not count as i's negative."""
    docs = [d for d, _ in batch_columns(batch)]
    return [
        [j != i and d in relevant.get(ex.qid, set()) for j, d in enumerate(docs)]
        for i, ex in enumerate(batch)
    ]


def top_chunks(
    query_vecs: NDArray[np.float32], passage_vecs: NDArray[np.float32], depth: int
) -> list[list[int]]:
    """Exact inner-product top ``depth`` passage rows per query (ties: lower row first)."""
    depth = min(depth, passage_vecs.shape[0])
    sims = query_vecs @ passage_vecs.T
    out = []
    for row in sims:
        idx = np.argpartition(-row, depth - 1)[:depth] if depth < len(row) else np.arange(len(row))
        out.append(sorted(idx.tolist(), key=lambda i: (-float(row[i]), i)))
    return out


def doc_run(chunk_order: Sequence[str], doc_of: Mapping[str, str]) -> dict[str, float]:
    """A document run from ranked chunk ids: a document's best chunk stands for it."""
    seen: list[str] = []
    for c in chunk_order:
        d = doc_of[c]
        if d not in seen:
            seen.append(d)
    return ranking_to_run(seen)


def heldout_ndcg(
    qrels: Mapping[str, Mapping[str, int]],
    dense: Mapping[str, Sequence[str]],
    bm25: Mapping[str, Sequence[str]],
    doc_of: Mapping[str, str],
    *,
    rank_constant: int = fusion.DEFAULT_RANK_CONSTANT,
) -> dict[str, float]:
    """nDCG@10 over the queries of ``dense`` of the dense leg alone and of client-side RRF of
    ``bm25`` and ``dense`` (ranked chunk ids per query, each leg's top 50 as the searcher
    fuses them)."""
    qids = sorted(dense)
    judged = {q: qrels[q] for q in qids}
    dense_run = {q: doc_run(dense[q], doc_of) for q in qids}
    hybrid_run = {
        q: doc_run(
            [f.doc_id for f in fusion.rrf([list(bm25.get(q, ())), list(dense[q])], rank_constant)],
            doc_of,
        )
        for q in qids
    }
    return {
        "dense": round(evaluate(judged, dense_run, ["ndcg@10"]).scores["ndcg@10"], 4),
        "hybrid": round(evaluate(judged, hybrid_run, ["ndcg@10"]).scores["ndcg@10"], 4),
    }


# -- the torch side ---------------------------------------------------------------------------


@dataclass
class TrainStats(LoopStats):
    """The loop's stats and what this trainer trained on: epochs begun, examples and passages."""

    epochs_started: int = 0
    examples_seen: int = 0
    passages_seen: int = 0


def load_model(base: str) -> Any:
    """The sentence-transformers model at ``base`` (a folder or a name), on the CPU."""
    from sentence_transformers import SentenceTransformer

    from hybrid_es.encoders.embedder import quiet_transformers

    quiet_transformers()
    return SentenceTransformer(base, device="cpu")


def encode(model: Any, texts: Sequence[str], *, max_length: int = SERVE_MAX_LENGTH) -> Any:
    """L2-normalised float32 vectors of ``texts`` at ``max_length`` tokens (inference mode)."""
    before = model.max_seq_length
    model.max_seq_length = max_length
    try:
        vecs = model.encode(
            list(texts),
            batch_size=32,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
    finally:
        model.max_seq_length = before
    return np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1)


def _embed(model: Any, texts: list[str]) -> Any:
    import torch

    out = model(model.preprocess(texts))["sentence_embedding"]
    return torch.nn.functional.normalize(out, dim=-1)


def train(
    model: Any,
    examples: Sequence[Example],
    relevant: Mapping[str, set[str]],
    cfg: EmbedderTrainConfig,
    *,
    on_step: Callable[[int, int, float], None] | None = None,
) -> TrainStats:
    """In-batch + hard-negative contrastive fine-tuning over a linear warm-up/decay schedule.

    The schedule spans ``cfg.schedule_steps``, else ``cfg.epochs`` passes; under a time budget
    (neither ``steps`` nor ``schedule_steps`` given) it is shortened to the steps the budget
    allows, measured over the first 5 steps, so the decay ends at the deadline, and the warm-up
    shrinks with it. Training stops at the end of the schedule, at ``cfg.steps``, or (time budget
    only) at the deadline; ``--steps S --schedule-steps P`` replays a budgeted run step for step.
    See ``training`` for both.
    """
    import torch

    if not examples:
        raise ValueError("no training examples: nothing to train on (see the mining counts)")
    torch.manual_seed(cfg.seed)
    stats = TrainStats()
    per_epoch = math.ceil(len(examples) / cfg.batch_size)
    schedule = Schedule.plan(cfg, per_epoch, refit_warmup=True)
    opt = Optimizer(model, cfg.learning_rate, schedule)
    model.max_seq_length = cfg.max_length
    model.train()
    loop = StepLoop(cfg, schedule, stats, loss_every=10, on_step=on_step)
    queue: list[list[Example]] = []
    while loop.going():
        if not queue:
            queue = make_batches(examples, cfg.batch_size, cfg.seed + stats.epochs_started)
            stats.epochs_started += 1
        batch = queue.pop(0)
        q = _embed(model, [ex.query for ex in batch])
        p = _embed(model, [t for _, t in batch_columns(batch)])
        scores = cfg.scale * q @ p.T
        mask = torch.tensor(false_negative_mask(batch, relevant), dtype=torch.bool)
        scores = scores.masked_fill(mask, float("-inf"))
        loss = opt.step(torch.nn.functional.cross_entropy(scores, torch.arange(len(batch))))
        stats.examples_seen += len(batch)
        stats.passages_seen += p.shape[0]
        loop.step_done(loss)
    loop.finish()
    model.max_seq_length = SERVE_MAX_LENGTH
    model.eval()
    return stats
