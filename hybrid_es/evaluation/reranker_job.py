"""Training a reranker for a dataset end to end: what ``hybrid-es reranker train`` runs.

Ingest the collection (unchanged documents skipped), run our own first stage (hybrid RRF) over
the judged queries, mine hard negatives from it, fine-tune (``reranker_train``), choose the
blend weight on held-out queries, and save a CrossEncoder folder whose
``hybrid_es_reranker.json`` records how it was made, the held-out table and how to replay it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.reranker import METADATA_FILE, CrossEncoderReranker, rerank_passage
from hybrid_es.errors import ConfigurationError
from hybrid_es.evaluation.collection import (
    EVAL_TENANT,
    Collection,
    default_index,
    ingest_collection,
)
from hybrid_es.evaluation.progress import NoProgress, Progress, training_steps
from hybrid_es.evaluation.reranker_train import (
    Candidate,
    Group,
    TrainConfig,
    TrainStats,
    choose_weight,
    init_model,
    keep_layers,
    mine_groups,
    train,
    with_teacher,
)
from hybrid_es.evaluation.training import check_out_folder, judged_queries, machine, replay
from hybrid_es.retrieval.door import ChunksDoor, tenant_policy
from hybrid_es.text.analysis import dominant_script


@dataclass(frozen=True)
class TrainedReranker:
    """The saved model's folder, its metadata and the held-out nDCG@10 by blend weight."""

    out: Path
    metadata: dict[str, Any]
    table: dict[float, float]


def train_reranker(
    es: Engine | Any,
    embedder: Embedder,
    dataset: Path,
    out: Path,
    cfg: TrainConfig,
    *,
    base: str,
    teacher: str | None = None,
    split: str = "train",
    embedder_name: str = "minilm",
    index: str | None = None,
    state_index: str = "hybrid-es-corpus-state-eval",
    url: str = "",
    force: bool = False,
    command: str = "",
    progress: Progress | None = None,
) -> TrainedReranker:
    """Train and save a reranker for ``dataset``'s ``split``; see the module docstring.

    ``cfg.layers`` keeps that many of ``base``'s layers; ``teacher`` (a cross-encoder folder)
    scores every group once, and its logits become ``cfg.distill_weight`` of the loss.
    ``es`` is an engine, or a client it wraps. Raises ConfigurationError when ``out`` is not
    empty and ``force`` is not set (nothing is done), IngestError when the dataset cannot be read.
    """
    import torch  # noqa: F401  (as before: without torch, fail before any work)

    progress = progress or NoProgress()
    check_out_folder(out, force)
    if cfg.layers:
        check_layers(base, cfg.layers)
    qrels, queries, train_ids, dev_ids = judged_queries(dataset, split, cfg)
    index = index or default_index(dataset, embedder_name)
    col, ranked = first_stage(
        es, embedder, dataset, index, state_index, url, qrels, queries, progress
    )
    groups, skipped = mine_groups(
        train_ids,
        queries,
        qrels,
        ranked,
        first_chunks(col.es, index, qrels, ranked),
        negatives=cfg.negatives,
        negative_pool=cfg.negative_pool,
        seed=cfg.seed,
    )
    if teacher:
        groups = distil_targets(groups, teacher, cfg.max_length, progress)
    model, tokenizer, stats = fine_tune(base, groups, cfg, progress)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    weight, table, n_dev = held_out_weight(out, cfg, dev_ids, queries, qrels, ranked, progress)
    meta: dict[str, Any] = {
        "format": "hybrid-es-reranker/1",
        "base_model": base,
        "layers": model.config.num_hidden_layers,
        "teacher": teacher,
        "dataset": str(dataset),
        "split": split,
        "first_stage": f"hybrid RRF (client), embedder {embedder.model_id}, top 50",
        "config": dict(vars(cfg)),
        "max_length": cfg.max_length,
        "scripts": sorted({dominant_script(queries[q]) for q in train_ids if q in queries}),
        "train_queries": len(train_ids),
        "dev_queries": n_dev,
        "groups": len(groups),
        "skipped": skipped,
        "training": stats.as_dict(),
        "machine": machine(),
        "dev_ndcg10_by_weight": {str(w): round(v, 4) for w, v in table.items()},
        "blend_weight": weight,
        "command": command,
        "replay": replay(cfg, stats),
    }
    (out / METADATA_FILE).write_text(json.dumps(meta, indent=2))
    return TrainedReranker(out, meta, table)


def check_layers(base: str, layers: int) -> None:
    """Refuse, before any work, a layer count the base model does not have."""
    from transformers import AutoConfig

    have = int(AutoConfig.from_pretrained(base).num_hidden_layers)
    if layers > have:
        raise ConfigurationError(
            f"--layers {layers}: the base model {base} has {have} layers",
            hint=f"pass --layers between 1 and {have}",
        )


def first_stage(
    es: Engine | Any,
    embedder: Embedder,
    dataset: Path,
    index: str,
    state_index: str,
    url: str,
    qrels: dict[str, dict[str, int]],
    queries: dict[str, str],
    progress: Progress,
) -> tuple[Collection, dict[str, list[Candidate]]]:
    """The collection ingested (unchanged documents skipped) and its hybrid RRF top 50 for every
    judged query: what negatives are mined from and what the held-out queries rerank."""
    col = ingest_collection(
        es,
        embedder,
        dataset,
        index=index,
        state_index=state_index,
        url=url,
        progress=progress,
    )
    step = progress.stage("first stage", len(qrels), note="hybrid RRF top 50")
    ranked, _ = col.first_stage(queries, qrels, progress=step.advance)
    return col, ranked


def distil_targets(
    groups: list[Group], teacher: str, max_length: int, progress: Progress
) -> list[Group]:
    """The groups with the ``teacher`` cross-encoder's logits for their passages."""
    model, tokenizer = init_model(teacher)
    step = progress.stage("teacher", len(groups), note="scoring every group once")
    return with_teacher(groups, model, tokenizer, max_length, on_group=step.advance)


def fine_tune(
    base: str, groups: list[Group], cfg: TrainConfig, progress: Progress
) -> tuple[Any, Any, TrainStats]:
    """The model seeded from ``base`` (its first ``cfg.layers`` layers), trained on ``groups``."""
    import torch

    torch.manual_seed(cfg.seed)
    model, tokenizer = init_model(base)
    if cfg.layers:
        keep_layers(model, cfg.layers)
    on_step = training_steps(progress.stage("train"))
    return model, tokenizer, train(model, tokenizer, groups, cfg, on_step=on_step)


def held_out_weight(
    out: Path,
    cfg: TrainConfig,
    dev_ids: list[str],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    ranked: dict[str, list[Candidate]],
    progress: Progress,
) -> tuple[float, dict[float, float], int]:
    """The saved model scores the held-out queries' first-stage top ``cfg.rerank_depth``; the
    blend weight that scores best, the nDCG@10 table by weight, and how many queries it used."""
    ce = CrossEncoderReranker(str(out), max_length=cfg.max_length, weight=1.0, precision="fp32")
    dev = [q for q in dev_ids if q in ranked]
    step = progress.stage("held-out", len(dev), note=f"rerank top {cfg.rerank_depth}")
    scores: dict[str, list[float]] = {}
    for qid in dev:
        scores[qid] = ce.score(queries[qid], [c.text for c in ranked[qid][: cfg.rerank_depth]])
        step.advance()
    weight, table = choose_weight(qrels, ranked, scores) if scores else (1.0, {})
    return weight, table, len(scores)


def first_chunks(
    es: Engine | Any,
    index: str,
    qrels: dict[str, dict[str, int]],
    ranked: dict[str, list[Candidate]],
) -> dict[str, str]:
    """The first chunk's passage of every relevant document the first stage missed (``es``: an
    engine, or a client it wraps)."""
    engine = as_engine(es)
    found = {c.doc_id for cands in ranked.values() for c in cands}
    missing = sorted({d for docs in qrels.values() for d, g in docs.items() if g > 0} - found)
    out: dict[str, str] = {}
    for i in range(0, len(missing), 500):
        part = missing[i : i + 500]
        resp = ChunksDoor(engine).search(
            index,
            {
                "size": len(part),
                "query": {
                    "bool": {
                        "filter": [
                            {"term": {"tenant": EVAL_TENANT}},
                            {"terms": {"doc_id": part}},
                            {"term": {"chunk_no": 0}},
                        ]
                    }
                },
                "_source": {"excludes": ["embedding"]},
            },
            tenant_policy(EVAL_TENANT),
            what="reading first chunks",
        )
        for h in resp["hits"]["hits"]:
            out[h["_source"]["doc_id"]] = rerank_passage(h["_source"])
    return out
