"""MiniLM on ONNX Runtime: the same model, tokenizer and pooling as the sentence-transformers
embedder, run without torch's per-call overhead (and, for ``onnx-int8``, on int8 weights).

Tokenisation is the model's own ``tokenizer.json`` (Hugging Face ``tokenizers``, cut to the same
256-token window), pooling the attention-masked mean, then L2 normalisation: what
sentence-transformers' ``Transformer -> Pooling(mean) -> Normalize`` does. Two sessions share the
file: queries run on ``query_threads`` intra-op threads (one by default, see ``encoders.embedder``
on why one), passages on all cores in batches sorted by length, as sentence-transformers batches
them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_es.encoders.base import (
    DEFAULT_EMBED_THREADS,
    HEAD_CHARS_PER_TOKEN,
    LazyModel,
    Vectors,
)
from hybrid_es.encoders.onnx_build import built_model


class OnnxEmbedder:
    """A BERT-style sentence embedder (mean pooling, normalised) on ONNX Runtime.

    ``model_id`` names the vector space (the model), ``variant`` how it was run: variants of one
    model are interchangeable within a stated cosine (``encoders.onnx_build``), so an index keeps
    its model id whichever variant wrote it and records the variant beside it.
    """

    def __init__(
        self,
        model_dir: str,
        *,
        model_id: str,
        variant: str,
        dims: int,
        batch_size: int = 32,
        max_seq_length: int = 256,
        query_threads: int | None = DEFAULT_EMBED_THREADS,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.model_path = model_dir
        """The weights' folder, as the torch embedder names it (a trainer's base is compared
        with it: ``evaluation.embedder_job.same_model``)."""
        self.model_id = model_id
        self.variant = variant
        self.dims = dims
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.query_threads = query_threads
        self.passage_embedder: Any = None
        """Another embedder of the same vectors that embeds passages instead (None: this one).
        The float32 variant hands ingest's batches to torch: same vectors (cosine 1.00000), and
        torch's batched GEMMs embedded SciFact passages faster here (docs/evaluation.md, "A
        cheaper query encoder"); int8 embeds its own."""
        self.scripts: frozenset[str] | None = None
        self.alone = variant == "onnx-int8"
        """Each text encoded on its own (int8). The int8 graph quantises its activations per
        request, one scale over every text and pad of the batch, so in a batch a text's vector
        depends on the texts beside it (up to 0.02 a component): the same question or passage
        would get another vector, and another ranking, with other company. Alone, a text always
        gets the same vector; SciFact passages cost about 10 % more on a quiet machine, and less
        under load (docs/evaluation.md, "One text at a time")."""
        self._model = LazyModel(
            self._open,
            what=f"{variant} embedding model {model_dir!r}",
            hint="pip install '.[models]', or HYBRID_ES_EMBED_RUNTIME=torch",
        )

    def _open(self) -> tuple[Any, Any, Any]:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        query, path = built_session(ort, self.model_dir, self.variant, self.query_threads or 0)
        passages = ort_session(ort, path, os.cpu_count() or 1)
        # No truncation in the tokenizer itself (count_tokens needs the whole count): _encode
        # keeps the first max_seq_length - 1 ids and the closing [SEP], as truncation would.
        tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return tok, query, passages

    def _encode(self, session: Any, texts: list[str]) -> Vectors:
        tok = self._model.get()[0]
        cap = self.max_seq_length
        rows = [
            e.ids if len(e.ids) <= cap else [*e.ids[: cap - 1], e.ids[-1]]
            for e in tok.encode_batch(texts)
        ]
        n = max((len(r) for r in rows), default=0)
        ids = np.zeros((len(texts), n), dtype=np.int64)
        mask = np.zeros((len(texts), n), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return np.asarray(pooled / norms, dtype=np.float32)

    def _encode_each(self, session: Any, texts: list[str]) -> Vectors:
        """:meth:`_encode` of ``texts`` as one batch, or (:attr:`alone`) each text alone."""
        if not self.alone or len(texts) < 2:
            return self._encode(session, texts)
        return np.concatenate([self._encode(session, [t]) for t in texts])

    def embed_queries(self, texts: list[str]) -> Vectors:
        # As the torch embedder: what is surely past the window is cut before tokenizing.
        head = HEAD_CHARS_PER_TOKEN * self.max_seq_length
        return self._encode_each(self._model.get()[1], [t[:head] for t in texts])

    def embed_passages(self, texts: list[str]) -> Vectors:
        if self.passage_embedder is not None:
            return self.passage_embedder.embed_passages(texts)  # type: ignore[no-any-return]
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        session = self._model.get()[2]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        out = np.empty((len(texts), self.dims), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._encode_each(session, [texts[i] for i in batch])
        return out

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without [CLS]/[SEP] (for chunking), untruncated."""
        tok = self._model.get()[0]
        return len(tok.encode(text, add_special_tokens=False).ids) if text else 0

    def truncates(self, text: str) -> bool:
        """Whether the model reads only the start of the query ``text`` (as the torch
        embedder's)."""
        window = self.max_seq_length - 2
        if len(text) <= window:
            return False
        head = HEAD_CHARS_PER_TOKEN * self.max_seq_length
        return len(text) > head or self.count_tokens(text) > window


def built_session(ort: Any, model_dir: Path, variant: str, threads: int) -> tuple[Any, Path]:
    """A session (:func:`ort_session`) of ``variant``'s file, built first when missing or stale
    (``onnx_build.built_model``), and the file's path. A file ONNX Runtime cannot open is stale
    too: it is built again, once."""
    path = built_model(model_dir, variant)
    try:
        return ort_session(ort, path, threads), path
    except Exception:
        path = built_model(model_dir, variant, rebuild=True)
        return ort_session(ort, path, threads), path


def ort_session(ort: Any, path: Path, threads: int) -> Any:
    """An ONNX Runtime CPU session of ``path`` on ``threads`` intra-op threads (0: ORT's own
    choice), fully optimised, that does not spin between calls."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # No spinning between calls: a query thread that spins steals the core the engine needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
