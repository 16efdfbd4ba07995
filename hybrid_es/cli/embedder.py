"""``hybrid-es embedder train``: the bi-encoder adapted to a collection with its judged queries."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from hybrid_es.cli.common import Json, RichProgress, client, console, emit_json, settings
from hybrid_es.cli.help import App
from hybrid_es.cli.reranker import (
    DatasetArgument,
    DevFractionOption,
    ForceOption,
    IndexOption,
    LearningRateOption,
    MinutesOption,
    NegativePoolOption,
    OutOption,
    ScheduleStepsOption,
    SeedOption,
    SplitOption,
    StepsOption,
    _packaged_minilm,
    check_out,
    training_config,
)

app = App(help="Adapt the dense embedder to a collection.")


# Long only for its typer options: the body parses them, calls
# evaluation.embedder_job.train_embedder once and prints the result.
@app.command("train")
def train_command(
    dataset: DatasetArgument,
    out: OutOption,
    split: SplitOption = "train",
    base: Annotated[
        str | None, typer.Option(help="Model to start from (default: packaged MiniLM).")
    ] = None,
    embedder: Annotated[
        str, typer.Option(help="First-stage embedder that mines negatives (minilm | a path).")
    ] = "minilm",
    minutes: MinutesOption = 15.0,
    steps: StepsOption = None,
    schedule_steps: ScheduleStepsOption = None,
    epochs: Annotated[int, typer.Option(help="Upper bound on passes over the examples.")] = 3,
    seed: SeedOption = 13,
    max_length: Annotated[int, typer.Option(help="Passage tokens while training.")] = 128,
    batch_size: Annotated[int, typer.Option(help="Queries per step (in-batch negatives).")] = 16,
    negatives: Annotated[int, typer.Option(help="Hard negatives per query.")] = 1,
    negative_pool: NegativePoolOption = 30,
    learning_rate: LearningRateOption = 2e-5,
    dev_fraction: DevFractionOption = 0.2,
    index: IndexOption = None,
    force: ForceOption = False,
    as_json: Json = False,
) -> None:
    """Mine hard negatives with hybrid RRF, fine-tune the bi-encoder, score held-out queries
    before and after, and save a sentence-transformers folder that --embedder can name."""
    from hybrid_es.encoders.embedder import make_embedder
    from hybrid_es.evaluation.embedder_job import train_embedder
    from hybrid_es.evaluation.embedder_train import EmbedderTrainConfig

    cfg = training_config(
        EmbedderTrainConfig,
        seed=seed,
        max_length=max_length,
        batch_size=batch_size,
        negatives=negatives,
        negative_pool=negative_pool,
        learning_rate=learning_rate,
        epochs=epochs,
        minutes=minutes,
        steps=steps,
        schedule_steps=schedule_steps,
        dev_fraction=dev_fraction,
    )
    check_out(out, force)
    first_stage = make_embedder(embedder)
    if base is None:
        base = getattr(first_stage, "model_path", None) or _packaged_minilm()
    s = settings()
    with RichProgress(disable=as_json) as progress:
        trained = train_embedder(
            client(s),
            first_stage,
            dataset,
            out,
            cfg,
            base=base,
            split=split,
            embedder_name=embedder,
            index=index,
            state_index=f"{s.corpus_state_index}-eval",
            url=s.redacted_url(),
            force=force,
            command="hybrid-es embedder " + " ".join(sys.argv[2:]),
            progress=progress,
        )
    if as_json:
        emit_json(trained.metadata)
        return
    _print(trained.metadata, out)


def _print(meta: dict[str, Any], out: Path) -> None:
    tr = meta["training"]
    console.print(
        f"trained {tr['steps']} steps ({tr['passages_seen']} passages, {tr['seconds']:.0f} s, "
        f"stopped by {tr['stopped_by']}) on {meta['examples']} examples from "
        f"{meta['train_queries']} queries; saved to {out}"
    )
    dev = meta["dev_ndcg10"]
    t = Table(title=f"held-out queries ({meta['dev_queries']}): nDCG@10")
    t.add_column("leg")
    t.add_column("before", justify="right")
    t.add_column("after", justify="right")
    for leg in ("dense", "hybrid"):
        if leg in dev["before"]:
            t.add_row(leg, f"{dev['before'][leg]:.4f}", f"{dev['after'][leg]:.4f}")
    console.print(t)
    console.print(meta["verdict"])
