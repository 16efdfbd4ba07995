"""Fine-tuning a cross-encoder against our own first stage (``hybrid-es reranker train``).

No pretrained reranker weights can be installed here, so one is trained from the packaged
all-MiniLM-L6-v2 encoder (a BERT with a fresh one-logit head). The recipe, and why:

- **Hard negatives from our own first stage**: for every training query, the non-relevant documents
  that hybrid RRF ranks highest (one chunk per document, sampled from the top ``negative_pool``).
  The reranker then learns exactly the mistakes it will be asked to fix.
- **Listwise loss** (softmax cross-entropy over one positive and ``negatives`` hard negatives of the
  same query, "localised contrastive estimation"): it trains the ranking directly, and every
  negative in a group shares the query, so no pointwise label calibration is needed.
- **Held-out queries decide the blend**: a share of the training queries is kept out of training;
  on them the first stage, the cross-encoder alone and blends of the two (``fusion.blend``) are
  scored, and the best weight is stored beside the model. A reranker that hurts alone can still
  help blended; one that hurts everywhere gets weight 0 and says so.
- **Smaller and distilled, where latency asks for it**: ``layers`` keeps the first layers of the
  starting model (:func:`keep_layers`), and a ``teacher`` cross-encoder's logits over each group
  become a share of the loss (:func:`listwise_loss`), so a shallow model trained from a deep one
  learns the deep one's ranking of the hard negatives as well as the labels.
- **Bounded and reproducible**: seeded data order and initialisation; a wall-clock budget
  (``minutes``) whose step count is recorded, and ``steps`` to replay exactly that many steps.

The pure parts (mining, choosing the weight) are separate from the torch loop; the settings both
trainers take, the held-out split, the schedule, the optimizer step and the loop's bookkeeping
are in ``training``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from hybrid_es.evaluation.metrics import evaluate
from hybrid_es.evaluation.training import (
    LoopStats,
    Optimizer,
    Schedule,
    StepLoop,
    TrainingConfig,
)
from hybrid_es.evaluation.training import split_queries as split_queries  # re-exported
from hybrid_es.retrieval import fusion

BLEND_GRID = tuple(round(i / 10, 1) for i in range(11))


@dataclass(frozen=True)
class TrainConfig(TrainingConfig):
    """The shared training settings (:class:`TrainingConfig`) with this trainer's defaults, and
    the cross-encoder's own."""

    negatives: int = 7
    learning_rate: float = 3e-5
    minutes: float = 20.0
    groups_per_step: int = 2
    rerank_depth: int = 20
    layers: int | None = None
    distill_weight: float = 0.5

    min_negatives: ClassVar[int] = 1

    def checks(self) -> dict[str, bool]:
        return {
            **super().checks(),
            "groups_per_step must be >= 1": self.groups_per_step >= 1,
            "rerank_depth must be >= 2": self.rerank_depth >= 2,
            "layers must be >= 1": self.layers is None or self.layers >= 1,
            "distill_weight must lie in [0, 1]": 0.0 <= self.distill_weight <= 1.0,
        }


@dataclass(frozen=True)
class Candidate:
    """One first-stage result: a chunk, its document and the text the cross-encoder sees."""

    chunk_id: str
    doc_id: str
    text: str


@dataclass(frozen=True)
class Group:
    """One training example: a query, one relevant passage and hard negatives for it."""

    qid: str
    query: str
    positive: str
    negatives: tuple[str, ...]
    teacher: tuple[float, ...] = ()
    """A teacher cross-encoder's logits for (positive, *negatives); empty without a teacher."""

    @property
    def passages(self) -> tuple[str, ...]:
        return (self.positive, *self.negatives)


def best_chunk_per_doc(ranked: Sequence[Candidate]) -> list[Candidate]:
    seen: set[str] = set()
    out = []
    for c in ranked:
        if c.doc_id not in seen:
            seen.add(c.doc_id)
            out.append(c)
    return out


def mine_groups(
    qids: Sequence[str],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    ranked: Mapping[str, Sequence[Candidate]],
    fallback: Mapping[str, str],
    *,
    negatives: int,
    negative_pool: int,
    seed: int,
) -> tuple[list[Group], dict[str, int]]:
    """One group per (query, relevant document); counts of what was skipped and why.

    The positive is the relevant document's best-ranked chunk, or ``fallback[doc_id]`` (its
    first chunk) when the first stage missed it. Negatives: ``negatives`` documents sampled
    (seeded) from the top ``negative_pool`` non-relevant documents. A query whose first stage
    offers fewer negatives than that is skipped (and counted), not padded.
    """
    rng = random.Random(seed)
    groups: list[Group] = []
    skipped = {"no_query_text": 0, "no_positive_text": 0, "too_few_negatives": 0}
    for qid in qids:
        text = queries.get(qid, "").strip()
        if not text:
            skipped["no_query_text"] += 1
            continue
        relevant = {d for d, g in qrels.get(qid, {}).items() if g > 0}
        docs = best_chunk_per_doc(ranked.get(qid, ()))
        pool = [c.text for c in docs if c.doc_id not in relevant][:negative_pool]
        if len(pool) < negatives:
            skipped["too_few_negatives"] += 1
            continue
        found = {c.doc_id: c.text for c in docs if c.doc_id in relevant}
        for doc_id in sorted(relevant):
            positive = found.get(doc_id) or fallback.get(doc_id, "")
            if not positive:
                skipped["no_positive_text"] += 1
                continue
            groups.append(Group(qid, text, positive, tuple(rng.sample(pool, negatives))))
    return groups, skipped


def reranked_run(
    ranked: Sequence[Candidate], scores: Sequence[float], weight: float
) -> dict[str, float]:
    """A document run for one query, as the searcher orders it: the first ``len(scores)``
    chunks reranked by :func:`fusion.blend` (first-stage standing by rank), the rest after them
    in first-stage order; a document's best chunk stands for it."""
    pool = ranked[: len(scores)]
    standing = {c.chunk_id: -float(i) for i, c in enumerate(pool)}
    ce = {c.chunk_id: s for c, s in zip(pool, scores, strict=True)}
    by_id = {c.chunk_id: c for c in ranked}
    order = [by_id[i] for i in fusion.blend(standing, ce, weight)] + list(ranked[len(scores) :])
    docs = best_chunk_per_doc(order)
    return {c.doc_id: float(len(docs) - i) for i, c in enumerate(docs)}


def choose_weight(
    qrels: Mapping[str, Mapping[str, int]],
    ranked: Mapping[str, Sequence[Candidate]],
    scores: Mapping[str, Sequence[float]],
    grid: Sequence[float] = BLEND_GRID,
) -> tuple[float, dict[float, float]]:
    """The blend weight with the best nDCG@10 over the held-out queries, and the whole table.

    Ties go to the smaller weight (less reliance on the cross-encoder). Weight 0 is the first
    stage alone, so the chosen blend is never worse than it on these queries.
    """
    table: dict[float, float] = {}
    for w in grid:
        run = {q: reranked_run(ranked[q], scores[q], w) for q in scores}
        table[w] = evaluate({q: qrels[q] for q in scores}, run, ["ndcg@10"]).scores["ndcg@10"]
    best = max(table.values())
    return min(w for w, v in table.items() if v == best), table


# -- the torch side ---------------------------------------------------------------------------


@dataclass
class TrainStats(LoopStats):
    """The loop's stats and what this trainer trained on: groups, and (query, passage) pairs."""

    groups_seen: int = 0
    pairs_seen: int = 0


def init_model(base: str) -> tuple[Any, Any]:
    """A one-logit BertForSequenceClassification seeded from the encoder at ``base``."""
    from transformers import AutoTokenizer, BertForSequenceClassification

    from hybrid_es.encoders.embedder import quiet_transformers

    quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = BertForSequenceClassification.from_pretrained(base, num_labels=1)
    return model, tokenizer


def keep_layers(model: Any, n: int) -> Any:
    """Drop the encoder's top layers in place, keeping the first ``n`` (and the head).

    Dropping from the top is the cheapest way to a smaller cross-encoder that starts close to a
    trained one: the lower layers carry most of what transfers, and a short fine-tune, with the
    full model as teacher, re-fits the head to the shallower output. Cost falls with the layer
    count (the encoder is nearly all of a MiniLM's compute).
    """
    import torch

    encoder = model.base_model.encoder
    have = len(encoder.layer)
    if not 1 <= n <= have:
        raise ValueError(f"layers must lie in 1..{have} for this model, got {n}")
    encoder.layer = torch.nn.ModuleList(list(encoder.layer)[:n])
    model.config.num_hidden_layers = n
    return model


def encode_pairs(tokenizer: Any, pairs: Sequence[tuple[str, str]], max_length: int) -> Any:
    """The batch the model sees, in training and teacher scoring alike: the passage is what gets
    truncated (``only_second``), the query stays whole."""
    return tokenizer(
        [q for q, _ in pairs],
        [p for _, p in pairs],
        truncation="only_second",
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )


def with_teacher(
    groups: Sequence[Group],
    teacher: Any,
    tokenizer: Any,
    max_length: int,
    *,
    on_group: Callable[[], None] | None = None,
) -> list[Group]:
    """``groups`` with the teacher model's logits for each group's passages (no gradients)."""
    import torch

    teacher.eval()
    out = []
    with torch.inference_mode():
        for g in groups:
            enc = encode_pairs(tokenizer, [(g.query, p) for p in g.passages], max_length)
            logits = teacher(**enc).logits.view(-1)
            out.append(replace(g, teacher=tuple(float(x) for x in logits)))
            if on_group:
                on_group()
    return out


def listwise_loss(logits: Any, teacher: Any | None, distill_weight: float) -> Any:
    """Softmax cross-entropy with the positive at column 0 (``logits``: groups x passages).

    With ``teacher`` logits of the same shape, a share ``distill_weight`` of the loss is the KL
    divergence from the teacher's softmax over the group to the student's: the student learns how
    the teacher ranks the hard negatives among themselves, not only which passage is relevant.
    """
    import torch

    f = torch.nn.functional
    hard = f.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.long))
    if teacher is None or distill_weight == 0.0:
        return hard
    soft = f.kl_div(
        f.log_softmax(logits, dim=-1),
        f.log_softmax(teacher, dim=-1),
        reduction="batchmean",
        log_target=True,
    )
    return (1.0 - distill_weight) * hard + distill_weight * soft


def train(
    model: Any,
    tokenizer: Any,
    groups: Sequence[Group],
    cfg: TrainConfig,
    *,
    on_step: Callable[[int, int, float], None] | None = None,
) -> TrainStats:
    """Listwise fine-tuning over a linear warm-up/decay schedule of ``planned_steps``
    (:func:`listwise_loss`; distilled where the groups carry teacher logits).

    The schedule spans ``cfg.schedule_steps``, else ``cfg.epochs`` passes; under a time budget
    (neither ``steps`` nor ``schedule_steps`` given) it is shortened to the steps the budget
    allows, measured over the first steps, so the decay ends at the deadline; the warm-up keeps
    the length first planned. Training stops at the end of the schedule, at ``cfg.steps``, or
    (time budget only) at the deadline. The stats record both numbers: ``--steps S
    --schedule-steps P`` replays a budgeted run's steps (its warm-up, a share of P, can be
    shorter). ``on_step(step, planned, loss)`` reports progress. See ``training`` for both.
    """
    import torch

    if not groups:
        raise ValueError("no training groups: nothing to train on (see the mining counts)")
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    stats = TrainStats()
    per_epoch = math.ceil(len(groups) / cfg.groups_per_step)
    # Unlike the embedder's, this warm-up keeps the length first planned when a time budget
    # shortens the schedule: how this trainer always ran, kept so its numbers do not change.
    schedule = Schedule.plan(cfg, per_epoch, refit_warmup=False)
    opt = Optimizer(model, cfg.learning_rate, schedule)
    model.train()
    n = 1 + cfg.negatives
    loop = StepLoop(cfg, schedule, stats, loss_every=25, on_step=on_step)
    order: list[Group] = []
    while loop.going():
        if not order:
            order = list(groups)
            rng.shuffle(order)
        batch, order = order[: cfg.groups_per_step], order[cfg.groups_per_step :]
        pairs = [(g.query, p) for g in batch for p in g.passages]
        logits = model(**encode_pairs(tokenizer, pairs, cfg.max_length)).logits.view(len(batch), n)
        teacher = torch.tensor([g.teacher for g in batch]) if batch[0].teacher else None
        loss = opt.step(listwise_loss(logits, teacher, cfg.distill_weight))
        stats.groups_seen += len(batch)
        stats.pairs_seen += len(pairs)
        loop.step_done(loss)
    loop.finish()
    model.eval()
    return stats
