"""A trained cross-encoder on ONNX Runtime: the graph ``encoders.onnx_build`` exports and fuses
from the model's folder (``onnx``), quantised to int8 (``onnx-int8``), scoring (query, passage)
pairs as sentence-transformers' ``CrossEncoder.predict`` does.

The pairs are tokenized by the folder's own tokenizer as ``CrossEncoder`` tokenizes them (the
two texts together, the longer cut first down to ``max_length`` tokens), and the logit goes
through the activation ``CrossEncoder`` would apply: the one the folder's config names, else a
sigmoid for a one-label model. A model with several labels, or an activation other than a
sigmoid or the identity, is refused rather than scored differently from torch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_es.errors import ModelError

_ACTIVATIONS = {
    "torch.nn.modules.activation.Sigmoid": "sigmoid",
    "torch.nn.Sigmoid": "sigmoid",
    "torch.nn.modules.linear.Identity": "identity",
    "torch.nn.Identity": "identity",
}


def activation(config: dict[str, Any]) -> str:
    """``sigmoid`` or ``identity``: what ``CrossEncoder.predict`` applies to this model's logit."""
    labels = len(config.get("id2label") or {}) or int(config.get("num_labels", 1))
    if labels != 1:
        raise ModelError(
            f"the cross-encoder has {labels} labels; the ONNX precisions score one-label models",
            hint="HYBRID_ES_RERANKER_PRECISION=int8 (torch)",
        )
    named = (config.get("sentence_transformers") or {}).get("activation_fn")
    named = named or config.get("sbert_ce_default_activation_function")
    if named is None:
        return "sigmoid"
    if named not in _ACTIVATIONS:
        raise ModelError(
            f"the cross-encoder's activation {named!r} is not one the ONNX precisions apply",
            hint="HYBRID_ES_RERANKER_PRECISION=int8 (torch)",
        )
    return _ACTIVATIONS[named]


class OnnxCrossEncoder:
    """Scores pairs with the ``variant`` (``onnx`` or ``onnx-int8``) of the cross-encoder in
    ``model_dir``, on ``threads`` intra-op threads (None: every core)."""

    def __init__(self, model_dir: str, variant: str, *, max_length: int, threads: int | None):
        import onnxruntime as ort
        from transformers import AutoTokenizer

        from hybrid_es.encoders.onnx_embedder import built_session

        folder = Path(model_dir)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.activation = activation(config)
        self.max_length = max_length
        self.session = built_session(ort, folder, variant, threads or os.cpu_count() or 1)[0]
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))

    def predict(self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32) -> list[float]:
        out: list[float] = []
        for start in range(0, len(pairs), batch_size):
            batch = pairs[start : start + batch_size]
            enc = self.tokenizer(
                [q for q, _ in batch],
                [p for _, p in batch],
                truncation=True,
                max_length=self.max_length,
                padding=True,
                return_tensors="np",
            )
            ids = enc["input_ids"].astype(np.int64)
            types = enc.get("token_type_ids")
            feeds = {
                "input_ids": ids,
                "attention_mask": enc["attention_mask"].astype(np.int64),
                "token_type_ids": (np.zeros_like(ids) if types is None else types.astype(np.int64)),
            }
            logits = np.asarray(self.session.run(None, feeds)[0], dtype=np.float64)[:, 0]
            if self.activation == "sigmoid":
                logits = 1.0 / (1.0 + np.exp(-logits))
            out.extend(float(x) for x in logits)
        return out
