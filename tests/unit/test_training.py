"""The schedule and settings both trainers share (``evaluation.training``), pinned to the numbers
the two trainers computed before they shared them: warm-up lengths, learning-rate factors, the
schedule a config plans and a time budget shortens, and each trainer's learning rate at every
step of a run (tiny models, a fake clock).

The bi-encoder's warm-up shrinks with a budget-shortened schedule; the cross-encoder's keeps the
length first planned. Both are pinned as they were."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from hybrid_es.errors import ConfigurationError
from hybrid_es.evaluation import embedder_train, reranker_train
from hybrid_es.evaluation.embedder_train import EmbedderTrainConfig
from hybrid_es.evaluation.reranker_train import TrainConfig
from hybrid_es.evaluation.training import (
    Schedule,
    TrainingConfig,
    check_out_folder,
    fit_to_budget,
    lr_factor,
    replay,
    split_queries,
    warmup_decay,
    warmup_steps,
)

# -- the pure schedule ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "planned, fraction, warmup",
    [(100, 0.1, 10), (30, 0.25, 7), (7, 0.1, 1), (12, 0.5, 6), (1, 0.1, 1), (10, 0.0, 1)],
)
def test_warmup_is_the_fraction_of_the_plan_rounded_down_and_at_least_one(
    planned, fraction, warmup
):
    assert warmup_steps(planned, fraction) == warmup


@pytest.mark.parametrize(
    "planned, fraction, factors",
    [
        (100, 0.1, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 0.988889, 0.977778]),
        (30, 0.25, [1 / 7, 2 / 7, 3 / 7, 4 / 7, 5 / 7, 6 / 7, 1.0, 1.0, 0.956522, 0.913043]),
        (7, 0.1, [1.0, 1.0, 0.833333, 0.666667, 0.5, 0.333333, 0.166667, 0.0]),
        (
            12,
            0.5,
            [1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6, 1.0, 1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6, 0],
        ),
        (1, 0.1, [1.0, 1.0]),
        (10, 0.0, [1.0, 1.0, 8 / 9, 7 / 9, 6 / 9, 5 / 9, 4 / 9, 3 / 9, 2 / 9, 1 / 9, 0.0]),
    ],
)
def test_factors_warm_up_then_decay_to_zero_as_before(planned, fraction, factors):
    got = [lr_factor(s, planned, fraction) for s in range(len(factors))]
    assert got == pytest.approx(factors, abs=1e-6)


def test_a_warmup_longer_than_the_plan_never_decays():
    # The cross-encoder's case when a budget shortens 30 planned steps (warm-up 15) to 12.
    assert [warmup_decay(s, 15, 12) for s in range(13)] == pytest.approx(
        [(s + 1) / 15 for s in range(13)]
    )


@pytest.mark.parametrize(
    "planned, minutes, seconds_per_step, fitted",
    [
        (1000, 1.0, 2.0, 30),
        (10, 60.0, 0.1, 10),
        (1000, 0.01, 5.0, 6),
        (30, 0.3, 1.0, 18),
        (500, 2.5, 0.7, 214),
        (50, 1.0, 0.0, 50),  # no measurable pace: the plan stands
    ],
)
def test_a_budget_fits_the_plan_as_before(planned, minutes, seconds_per_step, fitted):
    assert fit_to_budget(planned, minutes, seconds_per_step) == fitted


@pytest.mark.parametrize(
    "settings, per_epoch, planned, warmup, stop_at",
    [
        ({}, 10, 30, 3, 30),
        ({"epochs": 1, "warmup_fraction": 0.25}, 7, 7, 1, 7),
        ({"steps": 7}, 10, 30, 3, 7),
        ({"schedule_steps": 12}, 10, 12, 1, 12),
        ({"steps": 4, "schedule_steps": 10, "warmup_fraction": 0.25}, 99, 10, 2, 4),
        ({"steps": 50, "schedule_steps": 10}, 99, 10, 1, 10),
    ],
)
def test_the_plan_spans_the_schedule_steps_else_the_epochs(
    settings, per_epoch, planned, warmup, stop_at
):
    for refit in (True, False):
        s = Schedule.plan(TrainingConfig(**settings), per_epoch, refit_warmup=refit)
        assert (s.planned, s.warmup, s.stop_at) == (planned, warmup, stop_at)


def test_a_budget_shortens_the_plan_and_the_warmup_only_where_asked():
    cfg = TrainingConfig(warmup_fraction=0.25, minutes=0.3)
    shrinks = Schedule.plan(cfg, 10, refit_warmup=True)
    keeps = Schedule.plan(cfg, 10, refit_warmup=False)
    for s in (shrinks, keeps):
        s.fit(cfg.minutes, 1.0)
        assert (s.planned, s.stop_at) == (18, 18)
    assert (shrinks.warmup, keeps.warmup) == (4, 7)
    assert shrinks.factor(4) == 1.0 and keeps.factor(4) == pytest.approx(5 / 7)


# -- the settings -----------------------------------------------------------------------------

EMBEDDER_DEFAULTS = {
    "seed": 13,
    "max_length": 128,
    "negatives": 1,
    "negative_pool": 30,
    "learning_rate": 2e-5,
    "warmup_fraction": 0.1,
    "epochs": 3,
    "minutes": 15.0,
    "steps": None,
    "schedule_steps": None,
    "dev_fraction": 0.2,
    "batch_size": 16,
    "scale": 20.0,
    "depth": 50,
}
RERANKER_DEFAULTS = {
    **{k: v for k, v in EMBEDDER_DEFAULTS.items() if k not in ("batch_size", "scale", "depth")},
    "negatives": 7,
    "learning_rate": 3e-5,
    "minutes": 20.0,
    "groups_per_step": 2,
    "rerank_depth": 20,
    "layers": None,
    "distill_weight": 0.5,
}


def test_each_trainer_keeps_its_defaults():
    assert dict(vars(EmbedderTrainConfig())) == EMBEDDER_DEFAULTS
    assert dict(vars(TrainConfig())) == RERANKER_DEFAULTS
    assert isinstance(EmbedderTrainConfig(), TrainingConfig)
    assert isinstance(TrainConfig(), TrainingConfig)


def test_the_shared_checks_apply_to_both_and_each_keeps_its_own():
    for make in (EmbedderTrainConfig, TrainConfig):
        with pytest.raises(ValueError) as e:
            make(max_length=8, epochs=0, minutes=0, steps=0, schedule_steps=0, dev_fraction=1)
        for field in ("max_length", "epochs", "minutes", "steps", "schedule_steps", "dev_frac"):
            assert field in str(e.value)
    assert EmbedderTrainConfig(negatives=0).negatives == 0
    with pytest.raises(ValueError, match="negatives must be >= 1"):
        TrainConfig(negatives=0)
    with pytest.raises(ValueError, match="warmup_fraction"):
        EmbedderTrainConfig(warmup_fraction=1.0)
    assert TrainConfig(warmup_fraction=1.0).warmup_fraction == 1.0  # never checked there
    assert TrainingConfig().budgeted and not TrainingConfig(steps=3).budgeted
    assert not TrainingConfig(schedule_steps=3).budgeted


def test_the_names_tests_and_callers_import_from_the_trainers_are_the_shared_ones():
    assert embedder_train.lr_factor is lr_factor
    assert embedder_train.fit_to_budget is fit_to_budget
    assert reranker_train.split_queries is split_queries


def test_a_record_replays_the_steps_and_the_schedule(tmp_path):
    stats = embedder_train.TrainStats(steps=17, planned_steps=18)
    assert replay(TrainConfig(epochs=2, seed=5), stats) == (
        "--steps 17 --schedule-steps 18 --epochs 2 --seed 5"
    )
    check_out_folder(tmp_path / "new", force=False)
    (tmp_path / "x").write_text("")
    check_out_folder(tmp_path, force=True)
    with pytest.raises(ConfigurationError, match="not empty"):
        check_out_folder(tmp_path, force=False)


def test_a_record_keeps_its_order_the_steps_the_trainers_counts_then_how_it_ended():
    # The stats share their loop's fields (training.LoopStats); the record (and `--json`) keeps
    # the order each trainer's stats had before they shared them.
    assert list(embedder_train.TrainStats().as_dict()) == [
        "steps", "planned_steps", "epochs_started", "examples_seen", "passages_seen",
        "seconds", "stopped_by", "loss_curve",
    ]  # fmt: skip
    assert list(reranker_train.TrainStats().as_dict()) == [
        "steps", "planned_steps", "groups_seen", "pairs_seen", "seconds", "stopped_by",
        "loss_curve",
    ]  # fmt: skip


# -- both trainers, step by step --------------------------------------------------------------


def _tiny_encoder() -> Any:
    import torch

    class TinyEncoder(torch.nn.Module):
        """A bag of characters, shaped like a sentence-transformers model for ``train``."""

        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.emb = torch.nn.EmbeddingBag(64, 8)
            self.max_seq_length = 256

        def preprocess(self, texts):  # type: ignore[no-untyped-def]
            ids = [[ord(c) % 64 for c in t][: self.max_seq_length] or [0] for t in texts]
            offsets = list(itertools.accumulate([0] + [len(i) for i in ids[:-1]]))
            flat = [x for i in ids for x in i]
            return {"ids": torch.tensor(flat), "offsets": torch.tensor(offsets)}

        def forward(self, features):  # type: ignore[no-untyped-def]
            return {"sentence_embedding": self.emb(features["ids"], features["offsets"])}

    return TinyEncoder()


def _tiny_cross_encoder() -> tuple[Any, Any]:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    def tokenizer(queries, passages, **kw):  # type: ignore[no-untyped-def]
        pairs = zip(queries, passages, strict=True)
        return {
            "input_ids": torch.tensor([[2, len(q) % 60 + 3, len(p) % 60 + 3, 1] for q, p in pairs])
        }

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, num_labels=1,
    )  # fmt: skip
    return BertForSequenceClassification(cfg), tokenizer


def _run(kind: str, monkeypatch: pytest.MonkeyPatch, **settings: Any) -> tuple[dict, list]:
    """Train on 40 items, 4 a step (10 steps an epoch), at learning rate 1 (so the rate is the
    schedule's factor) on a clock that ticks one second a reading; the stats and the rate of
    every optimizer step."""
    import torch

    rates: list[float] = []

    class Recording(torch.optim.AdamW):
        def step(self, closure=None):  # type: ignore[no-untyped-def]
            rates.append(self.param_groups[0]["lr"])
            return super().step(closure)

    clock = itertools.count(1.0)
    monkeypatch.setattr(torch.optim, "AdamW", Recording)
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(clock)))
    if kind == "embedder":
        examples = [
            embedder_train.Example(
                f"q{i}", f"query {i}", f"D{i}", f"passage {i}", ((f"N{i}", "n"),)
            )
            for i in range(40)
        ]
        cfg = EmbedderTrainConfig(batch_size=4, learning_rate=1.0, **settings)
        stats = embedder_train.train(_tiny_encoder(), examples, {}, cfg).as_dict()
    else:
        groups = [
            reranker_train.Group(f"q{i}", f"query {i}", f"passage {i}", (f"neg {i}",))
            for i in range(40)
        ]
        cfg = TrainConfig(groups_per_step=4, negatives=1, learning_rate=1.0, **settings)
        model, tokenizer = _tiny_cross_encoder()
        stats = reranker_train.train(model, tokenizer, groups, cfg).as_dict()
    stats["loss_curve"] = [step for step, _ in stats["loss_curve"]]
    return stats, rates


_WARM7 = [1 / 7, 2 / 7, 3 / 7, 4 / 7, 5 / 7, 6 / 7]
_DECAY11 = [1.0, 1.0, *(k / 11 for k in range(10, 0, -1))]
_STEPS7 = [1 / 3, 2 / 3, 1.0, 1.0, 26 / 27, 25 / 27, 24 / 27]
# (scenario, trainer): (steps, planned, stopped by, seconds, loss curve steps, rate per step)
RUNS: dict[tuple[str, str], tuple[int, int, str, float, list[int], list[float]]] = {
    # 30 planned, warm-up 7; the budget (18 s at 1 s a step) cuts the plan to 18 after step 5.
    ("budget", "embedder"): (
        18, 18, "time budget", 19.0, [10, 18],
        [*_WARM7, *(k / 14 for k in range(12, 0, -1))],
    ),  # the warm-up shrinks to 4: decay from step 6
    ("budget", "reranker"): (
        18, 18, "time budget", 19.0, [18],
        [*_WARM7, 1.0, 1.0, *(k / 11 for k in range(10, 0, -1))],
    ),  # the warm-up stays 7
    # 30 planned, warm-up 15; the budget cuts the plan to 12.
    ("budget_long", "embedder"): (
        12, 12, "time budget", 13.0, [10, 12],
        [*(k / 15 for k in range(1, 7)), 1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6],
    ),
    ("budget_long", "reranker"): (
        12, 12, "time budget", 13.0, [12], [k / 15 for k in range(1, 13)],
    ),  # never warmed up
    ("replay", "embedder"): (4, 10, "steps", 5.0, [4], [0.5, 1.0, 1.0, 0.875]),
    ("replay", "reranker"): (4, 10, "steps", 5.0, [4], [0.5, 1.0, 1.0, 0.875]),
    ("schedule", "embedder"): (12, 12, "planned steps", 13.0, [10, 12], _DECAY11),
    ("schedule", "reranker"): (12, 12, "planned steps", 13.0, [12], _DECAY11),
    ("steps", "embedder"): (7, 30, "steps", 8.0, [7], _STEPS7),
    ("steps", "reranker"): (7, 30, "steps", 8.0, [7], _STEPS7),
}  # fmt: skip
SETTINGS = {
    "budget": {"warmup_fraction": 0.25, "minutes": 0.3},
    "budget_long": {"warmup_fraction": 0.5, "minutes": 0.2},
    "replay": {"warmup_fraction": 0.25, "steps": 4, "schedule_steps": 10},
    "schedule": {"warmup_fraction": 0.1, "schedule_steps": 12},
    "steps": {"steps": 7},
}


@pytest.mark.parametrize("scenario, kind", list(RUNS), ids=[f"{k}-{s}" for s, k in RUNS])
def test_each_trainer_takes_the_steps_and_rates_it_took_before(scenario, kind, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    steps, planned, stopped_by, seconds, curve, rates = RUNS[scenario, kind]
    stats, got = _run(kind, monkeypatch, **SETTINGS[scenario])
    assert (stats["steps"], stats["planned_steps"], stats["stopped_by"]) == (
        steps,
        planned,
        stopped_by,
    )
    assert (stats["seconds"], stats["loss_curve"]) == (seconds, curve)
    assert got == pytest.approx(rates, abs=1e-9)
    seen = (
        ("examples_seen", "passages_seen") if kind == "embedder" else ("groups_seen", "pairs_seen")
    )
    assert [stats[k] for k in seen] == [4 * steps, 8 * steps]
    if kind == "embedder":
        assert stats["epochs_started"] == -(-steps // 10)
