"""The external cross-encoder that reranks the fused pool (sentence-transformers ``CrossEncoder``).

Configured by a model name (where a hub is reachable) or a local folder; loaded lazily, on CPU.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from hybrid_es.embedder import quiet_transformers
from hybrid_es.errors import ModelError


class CrossEncoderReranker:
    """Scores (query, passage) pairs; higher is more relevant. Passages are truncated to
    ``max_length`` tokens together with the query."""

    def __init__(self, model: str, *, max_length: int = 256, batch_size: int = 32) -> None:
        self.model_name = model
        self.max_length = max_length
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    quiet_transformers()
                    from sentence_transformers import CrossEncoder

                    self._model = CrossEncoder(
                        self.model_name, max_length=self.max_length, device="cpu"
                    )
                except Exception as exc:
                    raise ModelError(
                        f"cannot load cross-encoder {self.model_name!r}: {exc}",
                        hint="point HYBRID_ES_RERANKER_MODEL at a local CrossEncoder folder "
                        "(see `hybrid-es reranker train`) or a hub name where one is reachable",
                    ) from exc
        return self._model

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
