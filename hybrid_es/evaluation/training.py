"""What the two trainers share (``embedder_train`` and ``reranker_train``): the settings both take,
the held-out split, the learning-rate schedule, the optimizer step and the bookkeeping of one
training loop.

A run's schedule spans ``schedule_steps`` optimizer steps, else ``epochs`` passes over the
training items. The learning rate warms up linearly over the first ``warmup_fraction`` of the
schedule, then decays linearly to 0 at its end. Under a time budget (neither ``steps`` nor
``schedule_steps`` given) the pace of the first 5 steps decides how many steps the budget allows,
and the schedule is shortened to them, so the decay ends at the deadline. Training stops at the
end of the schedule, at ``steps``, or (time budget only) at the deadline. A run's record says how
to replay it: ``--steps S --schedule-steps P`` with the steps it took and the schedule it planned.

Nothing here imports torch at module level: the trainers own their models and losses;
:class:`Optimizer`, the one optimizer step both take, imports it when a run makes one. The jobs
that run the trainers (``embedder_job``, ``reranker_job``) share the reading of the judged queries,
the refusal of a non-empty output folder and the record's machine and replay lines.
"""

from __future__ import annotations

import platform
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hybrid_es.errors import ConfigurationError
from hybrid_es.ingest.beir import Qrels, read_qrels, read_queries

BUDGET_PROBE_STEPS = 5
"""Under a time budget, the steps whose pace decides how many steps the budget allows."""
MIN_BUDGET_STEPS = 6
"""A budget never shortens the schedule below this many steps."""


@dataclass(frozen=True)
class TrainingConfig:
    """The settings both trainers take. A trainer's config adds its own fields and checks, and
    sets its own defaults where they differ (these are the embedder's)."""

    seed: int = 13
    max_length: int = 128
    negatives: int = 1
    negative_pool: int = 30
    learning_rate: float = 2e-5
    warmup_fraction: float = 0.1
    epochs: int = 3
    minutes: float = 15.0
    steps: int | None = None
    schedule_steps: int | None = None
    dev_fraction: float = 0.2

    min_negatives: ClassVar[int] = 0
    """The fewest hard negatives an example may have."""

    def __post_init__(self) -> None:
        bad = [msg for msg, ok in self.checks().items() if not ok]
        if bad:
            raise ValueError("; ".join(bad))

    def checks(self) -> dict[str, bool]:
        """Every rule as its message and whether this config keeps it (all are reported)."""
        return {
            "max_length must be 16..512": 16 <= self.max_length <= 512,
            f"negatives must be >= {self.min_negatives}": self.negatives >= self.min_negatives,
            "negative_pool must be >= negatives": self.negative_pool >= self.negatives,
            "learning_rate must be > 0": self.learning_rate > 0,
            "epochs must be >= 1": self.epochs >= 1,
            "minutes must be > 0": self.minutes > 0,
            "steps must be >= 1": self.steps is None or self.steps >= 1,
            "schedule_steps must be >= 1": self.schedule_steps is None or self.schedule_steps >= 1,
            "dev_fraction must lie in [0, 0.9]": 0.0 <= self.dev_fraction <= 0.9,
        }

    @property
    def budgeted(self) -> bool:
        """Whether the time budget sets the schedule's length (no ``steps``, no
        ``schedule_steps``)."""
        return self.steps is None and self.schedule_steps is None


def split_queries(
    qids: Sequence[str], dev_fraction: float, seed: int
) -> tuple[list[str], list[str]]:
    """(train, dev): a seeded shuffle of the sorted ids, the first ``dev_fraction`` held out."""
    order = sorted(qids)
    random.Random(seed).shuffle(order)
    n_dev = round(len(order) * dev_fraction)
    return sorted(order[n_dev:]), sorted(order[:n_dev])


# -- the schedule -----------------------------------------------------------------------------


def warmup_steps(planned: int, warmup_fraction: float) -> int:
    """The warm-up's length: the first ``warmup_fraction`` of ``planned`` steps, at least 1."""
    return max(1, int(planned * warmup_fraction))


def warmup_decay(step: int, warmup: int, planned: int) -> float:
    """The learning-rate factor of (0-based) ``step``: linear warm-up over the first ``warmup``
    steps, then linear decay to 0 at ``planned``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, 1.0 - (step - warmup) / max(1, planned - warmup))


def lr_factor(step: int, planned: int, warmup_fraction: float) -> float:
    """:func:`warmup_decay` with the warm-up the first ``warmup_fraction`` of ``planned``."""
    return warmup_decay(step, warmup_steps(planned, warmup_fraction), planned)


def fit_to_budget(planned: int, minutes: float, seconds_per_step: float) -> int:
    """The schedule length a time budget allows at the measured pace (at least 6 steps)."""
    steps = int(minutes * 60 / max(seconds_per_step, 1e-9))
    return min(planned, max(MIN_BUDGET_STEPS, steps))


@dataclass
class Schedule:
    """A run's plan: ``planned`` steps, the first ``warmup`` of them warming up, stopping after
    ``stop_at``. A time budget may shorten it once (:meth:`fit`); ``refit_warmup`` says whether
    the warm-up then shrinks with it or keeps the length first planned."""

    planned: int
    warmup: int
    stop_at: int
    warmup_fraction: float
    refit_warmup: bool

    @classmethod
    def plan(cls, cfg: TrainingConfig, per_epoch: int, *, refit_warmup: bool) -> Schedule:
        """``cfg.schedule_steps``, else ``cfg.epochs`` passes of ``per_epoch`` steps; stopping
        there or at ``cfg.steps``, whichever comes first."""
        planned = cfg.schedule_steps or per_epoch * cfg.epochs
        warmup = warmup_steps(planned, cfg.warmup_fraction)
        stop_at = min(planned, cfg.steps or planned)
        return cls(planned, warmup, stop_at, cfg.warmup_fraction, refit_warmup)

    def factor(self, step: int) -> float:
        """The learning-rate factor of ``step`` (what ``LambdaLR`` calls)."""
        return warmup_decay(step, self.warmup, self.planned)

    def fit(self, minutes: float, seconds_per_step: float) -> None:
        """Shorten the schedule to what ``minutes`` allow at the measured pace, and stop there."""
        self.planned = fit_to_budget(self.planned, minutes, seconds_per_step)
        self.stop_at = self.planned
        if self.refit_warmup:
            self.warmup = warmup_steps(self.planned, self.warmup_fraction)


# -- the optimizer step -----------------------------------------------------------------------


class Optimizer:
    """The optimizer step both trainers take: AdamW (weight decay 0.01) at ``learning_rate``, the
    rate scaled at every step by ``schedule``'s :meth:`~Schedule.factor` (torch's ``LambdaLR``),
    and the gradients clipped to norm 1 before each step."""

    def __init__(self, model: Any, learning_rate: float, schedule: Schedule) -> None:
        import torch

        self._model = model
        self._opt = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01)
        self._lr = torch.optim.lr_scheduler.LambdaLR(self._opt, schedule.factor)

    def step(self, loss: Any) -> float:
        """Backpropagate ``loss`` (a torch scalar) and take one step, the schedule's with it;
        returns the loss as a number (what :meth:`StepLoop.step_done` books)."""
        import torch

        loss.backward()
        torch.nn.utils.clip_grad_norm_(self._model.parameters(), 1.0)
        self._opt.step()
        self._lr.step()
        self._opt.zero_grad()
        return float(loss.item())


# -- the loop's bookkeeping -------------------------------------------------------------------


@dataclass
class LoopStats:
    """What :class:`StepLoop` keeps of a run: the steps taken and planned, the seconds, why
    training stopped and the loss curve (``(step, mean loss)`` pairs). Each trainer's
    ``TrainStats`` adds the counts of what it trained on."""

    steps: int = 0
    planned_steps: int = 0
    seconds: float = 0.0
    stopped_by: str = ""
    loss_curve: list[tuple[int, float]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The record's ``training`` part, in the order records have always had: the steps, the
        trainer's own counts, then the seconds, why it stopped and the loss curve."""
        record = asdict(self)
        last = ("seconds", "stopped_by", "loss_curve")
        return {k: v for k, v in record.items() if k not in last} | {k: record[k] for k in last}


@dataclass
class StepLoop:
    """What happens around every optimizer step, the same in both trainers: counting steps, the
    loss curve (the mean loss every ``loss_every`` steps), fitting the schedule to a time budget
    after the first steps, reporting ``on_step(step, planned, loss)``, the deadline and the
    reason training stopped. The clock starts when the loop is made."""

    cfg: TrainingConfig
    schedule: Schedule
    stats: LoopStats
    loss_every: int
    on_step: Callable[[int, int, float], None] | None = None
    _running: list[float] = field(default_factory=list, init=False, repr=False)
    _t0: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.stats.planned_steps = self.schedule.planned
        self._t0 = time.perf_counter()

    def going(self) -> bool:
        """Whether to take another step."""
        return not self.stats.stopped_by and self.stats.steps < self.schedule.stop_at

    def step_done(self, loss: float) -> None:
        """Book one optimizer step (after the scheduler's step) and its ``loss``."""
        stats = self.stats
        stats.steps += 1
        self._running.append(loss)
        if stats.steps % self.loss_every == 0:
            self._flush()
        now = time.perf_counter()
        if self.cfg.budgeted and stats.steps == BUDGET_PROBE_STEPS:
            self.schedule.fit(self.cfg.minutes, (now - self._t0) / BUDGET_PROBE_STEPS)
            stats.planned_steps = self.schedule.planned
        if self.on_step:
            self.on_step(stats.steps, stats.planned_steps, loss)
        if self.cfg.steps is None and now >= self._t0 + self.cfg.minutes * 60:
            stats.stopped_by = "time budget"

    def finish(self) -> None:
        """Record why training stopped, the last stretch of the loss curve and the seconds."""
        if not self.stats.stopped_by:
            self.stats.stopped_by = "steps" if self.cfg.steps else "planned steps"
        if self._running:
            self._flush()
        self.stats.seconds = round(time.perf_counter() - self._t0, 1)

    def _flush(self) -> None:
        mean = round(sum(self._running) / len(self._running), 4)
        self.stats.loss_curve.append((self.stats.steps, mean))
        self._running = []


# -- what the two jobs share ------------------------------------------------------------------


def judged_queries(
    dataset: Path, split: str, cfg: TrainingConfig
) -> tuple[Qrels, dict[str, str], list[str], list[str]]:
    """``dataset``'s judgements of ``split``, every query's text, and the judged query ids split
    into training and held-out ones (:func:`split_queries` with ``cfg``'s fraction and seed).
    Raises IngestError when the dataset cannot be read."""
    qrels = read_qrels(dataset, split)
    queries = read_queries(dataset)
    train_ids, dev_ids = split_queries(list(qrels), cfg.dev_fraction, cfg.seed)
    return qrels, queries, train_ids, dev_ids


def check_out_folder(out: Path, force: bool) -> None:
    """Refuse, before any work, to write a model into a non-empty folder without ``force``."""
    if out.exists() and any(out.iterdir()) and not force:
        raise ConfigurationError(f"{out} is not empty", hint="pass --force to overwrite it")


def machine() -> str:
    """The torch threads and the platform a model was trained on, for its record."""
    import torch

    return f"{torch.get_num_threads()} torch threads, {platform.platform()}"


def replay(cfg: TrainingConfig, stats: LoopStats) -> str:
    """The options that repeat a run: its steps, its schedule's length, its epochs and seed."""
    return (
        f"--steps {stats.steps} --schedule-steps {stats.planned_steps} "
        f"--epochs {cfg.epochs} --seed {cfg.seed}"
    )
