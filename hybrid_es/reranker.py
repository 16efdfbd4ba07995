"""The external cross-encoder that reranks the fused pool (sentence-transformers ``CrossEncoder``).

Configured by a model name (where a hub is reachable) or a local folder; loaded lazily, on CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hybrid_es.embedder import LazyModel, quiet_transformers


class CrossEncoderReranker:
    """Scores (query, passage) pairs; higher is more relevant. Passages are truncated to
    ``max_length`` tokens together with the query."""

    def __init__(self, model: str, *, max_length: int = 256, batch_size: int = 32) -> None:
        self.model_name = model
        self.max_length = max_length
        self.batch_size = batch_size
        self._model = LazyModel(
            self._open,
            what=f"cross-encoder {model!r}",
            hint="point HYBRID_ES_RERANKER_MODEL at a local CrossEncoder folder or a hub name "
            "where one is reachable",
        )

    def _open(self) -> Any:
        quiet_transformers()
        from sentence_transformers import CrossEncoder

        return CrossEncoder(self.model_name, max_length=self.max_length, device="cpu")

    def _load(self) -> Any:
        return self._model.get()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in input order."""
        if not passages:
            return []
        scores = self._load().predict(
            [(query, p) for p in passages],
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return [float(s) for s in scores]
