"""Adapting the bi-encoder to a dataset end to end: what ``hybrid-es embedder train`` runs.

Ingest the collection with the first-stage embedder (unchanged documents skipped), read its
chunks back as embedded, run our own first stage (hybrid RRF) over the training queries and
mine hard negatives from it, fine-tune (``embedder_train``), score held-out queries before and
after, and save a sentence-transformers folder whose ``hybrid_es_embedder.json`` records how it
was made, the held-out numbers and how to replay it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.evaluation.collection import (
    EVAL_PRINCIPAL,
    EVAL_TENANT,
    Collection,
    default_index,
    ingest_collection,
)
from hybrid_es.evaluation.embedder_train import (
    METADATA_FILE,
    SERVE_MAX_LENGTH,
    EmbedderTrainConfig,
    Passage,
    encode,
    heldout_ndcg,
    load_model,
    mine_examples,
    relevant_docs,
    top_chunks,
    train,
)
from hybrid_es.evaluation.progress import NoProgress, Progress, training_steps
from hybrid_es.evaluation.reranker_train import Candidate
from hybrid_es.evaluation.training import check_out_folder, judged_queries, machine, replay
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.door import ChunksDoor, tenant_policy


@dataclass(frozen=True)
class TrainedEmbedder:
    """The saved model's folder and its training record."""

    out: Path
    metadata: dict[str, Any]


def read_passages(es: Engine | Any, index: str) -> tuple[list[Passage], Any]:
    """Every live chunk of the evaluation tenant, ordered by chunk id, and its stored vector
    (a float32 matrix, or None when the index does not return them all)."""
    engine = as_engine(es)
    body = {
        "query": {
            "bool": {
                "filter": [{"term": {"tenant": EVAL_TENANT}}],
                "must_not": [{"term": {"deleted": True}}],
            }
        },
        "_source": ["chunk_id", "doc_id", "chunk_no", "search_payload", "embedding"],
    }
    rows = []
    for h in ChunksDoor(engine).scan(index, body, tenant_policy(EVAL_TENANT)):
        s = h["_source"]
        p = Passage(
            str(s["chunk_id"]),
            str(s["doc_id"]),
            int(s.get("chunk_no") or 0),
            str(s.get("search_payload") or ""),
        )
        rows.append((p, s.get("embedding")))
    rows.sort(key=lambda r: r[0].chunk_id)
    passages = [p for p, _ in rows]
    vectors = [v for _, v in rows]
    if not rows or any(not v for v in vectors):
        return passages, None
    return passages, np.asarray(vectors, dtype=np.float32)


def same_model(embedder: Embedder, base: str) -> bool:
    """Whether ``base`` is the model the first-stage embedder (and so the index) uses."""
    path = getattr(embedder, "model_path", None)
    if path is None:
        return False
    try:
        return bool(Path(path).resolve() == Path(base).resolve())
    except OSError:
        return False


def first_stage(
    col: Collection,
    queries: dict[str, str],
    train_ids: list[str],
    dev_ids: list[str],
    depth: int,
    progress: Progress,
) -> tuple[dict[str, list[Candidate]], dict[str, list[str]]]:
    """Hybrid RRF's top ``depth`` for the training queries (what negatives are mined from) and
    the BM25 leg's top ``depth`` chunk ids for the held-out ones."""
    step = progress.stage("first stage", len(train_ids) + len(dev_ids), note="hybrid RRF, BM25")
    ranked, _ = col.first_stage(queries, train_ids, depth=depth, progress=step.advance)
    bm25 = bm25_chunks(col, queries, dev_ids, depth)
    step.advance(len(dev_ids))
    return ranked, bm25


def bm25_chunks(
    col: Collection, queries: dict[str, str], qids: list[str], depth: int
) -> dict[str, list[str]]:
    """The BM25 leg's top ``depth`` chunk ids per query, as the searcher ranks them."""
    searcher = col.searcher(pipeline="bm25")
    out: dict[str, list[str]] = {}
    for qid in qids:
        resp = searcher.search(
            queries[qid], EVAL_PRINCIPAL, RequestScope(), top_k=depth, rerank=False
        )
        out[qid] = [h.chunk_id for h in resp.hits]
    return out


def dense_chunks(
    qvecs: Any, pvecs: Any, qids: list[str], passages: list[Passage], depth: int
) -> dict[str, list[str]]:
    rows = top_chunks(qvecs, pvecs, depth)
    return {q: [passages[i].chunk_id for i in r] for q, r in zip(qids, rows, strict=True)}


@dataclass(frozen=True)
class HeldOut:
    """The held-out queries' nDCG@10, measured the same way before and after training: exact
    dense search over every passage, alone and fused with the index's BM25 top ``depth``."""

    qrels: dict[str, dict[str, int]]
    qids: list[str]
    texts: list[str]
    passages: list[Passage]
    bm25: dict[str, list[str]]
    depth: int

    def ndcg(self, vectors: Callable[[], tuple[Any, Any]]) -> tuple[dict[str, float], float]:
        """The scores with the (query, passage) vectors ``vectors()`` makes, and the seconds that
        took; nothing is encoded when there are no held-out queries."""
        if not self.qids:
            return {}, 0.0
        t = time.perf_counter()
        qvecs, pvecs = vectors()
        dense = dense_chunks(qvecs, pvecs, self.qids, self.passages, self.depth)
        doc_of = {p.chunk_id: p.doc_id for p in self.passages}
        return heldout_ndcg(self.qrels, dense, self.bm25, doc_of), time.perf_counter() - t

    def embedded_by(self, model: Any) -> tuple[dict[str, float], float]:
        """:meth:`ndcg` with ``model`` embedding the queries and every passage."""
        texts = [p.text for p in self.passages]
        return self.ndcg(lambda: (encode(model, self.texts), encode(model, texts)))

    def before(
        self, embedder: Embedder, base: str, model: Any, stored: Any
    ) -> tuple[dict[str, float], float, str]:
        """:meth:`ndcg` before training, and where its vectors came from: the index's ``stored``
        vectors where the index was built with ``base``, else ``model`` embeds them all."""
        if stored is not None and same_model(embedder, base):
            scores, seconds = self.ndcg(lambda: (embedder.embed_queries(self.texts), stored))
            return scores, seconds, "the index's stored vectors"
        return (*self.embedded_by(model), "embedded with the base model")


def save_model(model: Any, out: Path) -> None:
    """``model`` saved as a sentence-transformers folder at ``out``, with the searcher's passage
    window."""
    out.mkdir(parents=True, exist_ok=True)
    model.max_seq_length = SERVE_MAX_LENGTH
    model.save(str(out))


def held_out_record(
    before: dict[str, float],
    after: dict[str, float],
    before_from: str,
    seconds: tuple[float, float],
    depth: int,
) -> dict[str, Any]:
    """The metadata's held-out part: nDCG@10 before and after, and whether training paid."""
    improved = bool(after) and after["hybrid"] > before["hybrid"]
    return {
        "dev_ndcg10": {
            "before": before,
            "after": after,
            "before_from": before_from,
            "seconds": {"before": round(seconds[0], 1), "after": round(seconds[1], 1)},
            "note": "dense: exact search over every chunk; hybrid: client RRF of the index's "
            f"BM25 top {depth} and that dense top {depth}",
        },
        "improved": improved,
        "verdict": "improves the held-out hybrid nDCG@10"
        if improved
        else "does not improve the held-out hybrid nDCG@10: keep the base embedder",
    }


def train_embedder(
    es: Engine | Any,
    embedder: Embedder,
    dataset: Path,
    out: Path,
    cfg: EmbedderTrainConfig,
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
) -> TrainedEmbedder:
    """Train and save a bi-encoder for ``dataset``'s ``split``; see the module docstring.

    Raises ConfigurationError when ``out`` is not empty and ``force`` is not set (nothing is
    done), IngestError when the dataset cannot be read.
    """
    import torch

    progress = progress or NoProgress()
    check_out_folder(out, force)
    qrels, queries, train_ids, dev_ids = judged_queries(dataset, split, cfg)
    dev_ids = [q for q in dev_ids if queries.get(q, "").strip()]
    index = index or default_index(dataset, embedder_name)
    col = ingest_collection(
        es, embedder, dataset, index=index, state_index=state_index, url=url, progress=progress
    )
    col.es.refresh(index)
    passages, stored = read_passages(col.es, index)
    ranked, bm25 = first_stage(col, queries, train_ids, dev_ids, cfg.depth, progress)
    examples, skipped = mine_examples(
        train_ids,
        queries,
        qrels,
        ranked,
        passages,
        negatives=cfg.negatives,
        negative_pool=cfg.negative_pool,
        seed=cfg.seed,
    )
    torch.manual_seed(cfg.seed)
    model = load_model(base)
    held = HeldOut(qrels, dev_ids, [queries[q] for q in dev_ids], passages, bm25, cfg.depth)
    progress.stage("held-out before", note=f"{len(passages)} passages")
    before, before_s, before_source = held.before(embedder, base, model, stored)
    on_step = training_steps(progress.stage("train"))
    stats = train(model, examples, relevant_docs(qrels), cfg, on_step=on_step)
    progress.stage("held-out after", note=f"{len(passages)} passages")
    after, after_s = held.embedded_by(model)
    save_model(model, out)
    meta: dict[str, Any] = {
        "format": "hybrid-es-embedder/1",
        "base_model": base,
        "dataset": str(dataset),
        "split": split,
        "first_stage": f"hybrid RRF (client), embedder {embedder.model_id}, top {cfg.depth}",
        "index": index,
        "config": dict(vars(cfg)),
        "passages": len(passages),
        "train_queries": len(train_ids),
        "dev_queries": len(dev_ids),
        "examples": len(examples),
        "skipped": skipped,
        "training": stats.as_dict(),
        "machine": machine(),
        **held_out_record(before, after, before_source, (before_s, after_s), cfg.depth),
        "command": command,
        "replay": replay(cfg, stats),
    }
    (out / METADATA_FILE).write_text(json.dumps(meta, indent=2))
    return TrainedEmbedder(out, meta)
