"""Training a reranker for a dataset end to end: what ``hybrid-es reranker train`` runs.

Ingest the collection (unchanged documents skipped), run our own first stage (hybrid RRF) over
the judged queries, mine hard negatives from it, fine-tune (``reranker_train``), choose the
blend weight on held-out queries, and save a CrossEncoder folder whose
``hybrid_es_reranker.json`` records how it was made, the held-out table and how to replay it.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.errors import ConfigurationError
from hybrid_es.evaluation.collection import EVAL_TENANT, default_index, ingest_collection
from hybrid_es.evaluation.progress import NoProgress, Progress
from hybrid_es.evaluation.reranker_train import (
    Candidate,
    TrainConfig,
    choose_weight,
    init_model,
    mine_groups,
    split_queries,
    train,
)
from hybrid_es.ingest.beir import read_qrels, read_queries
from hybrid_es.retrieval.analysis import dominant_script
from hybrid_es.retrieval.embedder import Embedder
from hybrid_es.retrieval.reranker import METADATA_FILE, CrossEncoderReranker, rerank_passage


@dataclass(frozen=True)
class TrainedReranker:
    """The saved model's folder, its metadata and the held-out nDCG@10 by blend weight."""

    out: Path
    metadata: dict[str, Any]
    table: dict[float, float]


# Stays whole: the steps of one job in the order they run (ingest, first stage, mine, train,
# save, held-out weight, metadata); each step is one call, and the metadata records them all.
def train_reranker(
    es: Engine | Any,
    embedder: Embedder,
    dataset: Path,
    out: Path,
    cfg: TrainConfig,
    *,
    base: str,
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

    ``es`` is an engine, or a client it wraps. Raises ConfigurationError when ``out`` is not
    empty and ``force`` is not set (nothing is done), IngestError when the dataset cannot be read.
    """
    import torch

    progress = progress or NoProgress()
    if out.exists() and any(out.iterdir()) and not force:
        raise ConfigurationError(f"{out} is not empty", hint="pass --force to overwrite it")
    qrels = read_qrels(dataset, split)
    queries = read_queries(dataset)
    train_ids, dev_ids = split_queries(list(qrels), cfg.dev_fraction, cfg.seed)
    index = index or default_index(dataset, embedder_name)
    step = progress.stage("ingest")
    col = ingest_collection(
        es,
        embedder,
        dataset,
        index=index,
        state_index=state_index,
        url=url,
        on_total=lambda n: step.update(completed=0, total=n),
        progress=step.advance,
    )
    step = progress.stage("first stage", len(qrels), note="hybrid RRF top 50")
    ranked, _ = col.first_stage(queries, qrels, progress=step.advance)
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
    torch.manual_seed(cfg.seed)
    model, tokenizer = init_model(base)
    step = progress.stage("train")

    def on_step(n: int, planned: int, loss: float) -> None:
        step.update(completed=n, total=planned, note=f"loss {loss:.3f}")

    stats = train(model, tokenizer, groups, cfg, on_step=on_step)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    ce = CrossEncoderReranker(str(out), max_length=cfg.max_length, weight=1.0, precision="fp32")
    dev = [q for q in dev_ids if q in ranked]
    step = progress.stage("held-out", len(dev), note=f"rerank top {cfg.rerank_depth}")
    dev_scores: dict[str, list[float]] = {}
    for qid in dev:
        dev_scores[qid] = ce.score(queries[qid], [c.text for c in ranked[qid][: cfg.rerank_depth]])
        step.advance()
    weight, table = choose_weight(qrels, ranked, dev_scores) if dev_scores else (1.0, {})
    meta: dict[str, Any] = {
        "format": "hybrid-es-reranker/1",
        "base_model": base,
        "dataset": str(dataset),
        "split": split,
        "first_stage": f"hybrid RRF (client), embedder {embedder.model_id}, top 50",
        "config": dict(vars(cfg)),
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
        "command": command,
        "replay": f"--steps {stats.steps} --schedule-steps {stats.planned_steps} "
        f"--epochs {cfg.epochs} --seed {cfg.seed}",
    }
    (out / METADATA_FILE).write_text(json.dumps(meta, indent=2))
    return TrainedReranker(out, meta, table)


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
        resp = engine.search(
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
            what="reading first chunks",
        )
        for h in resp["hits"]["hits"]:
            out[h["_source"]["doc_id"]] = rerank_passage(h["_source"])
    return out
