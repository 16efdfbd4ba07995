"""What every model here shares: loading lazily and once, the vector type, and the thread and
window constants (``encoders.embedder`` explains the choice of one query thread)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

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

    def ensure_loaded(self) -> float:
        """Load the model if it is not yet; the milliseconds this call spent loading it (0.0 when
        it was loaded already), so a search reports a first load apart from its embedding."""
        if self._model is not None:
            return 0.0
        t = time.perf_counter()
        self.get()
        return round((time.perf_counter() - t) * 1000, 3)


def needs_loading(model: object) -> bool:
    """Whether ``model`` loads lazily and has not loaded yet (its first use would load it)."""
    lazy = getattr(model, "_model", None)
    return isinstance(lazy, LazyModel) and lazy._model is None


def ensure_loaded(model: object) -> float:
    """Load ``model`` (an embedder or reranker) if it loads lazily and is not loaded yet; the
    milliseconds spent (0.0 otherwise: loaded already, or a model with nothing to load)."""
    lazy = getattr(model, "_model", None)
    return lazy.ensure_loaded() if isinstance(lazy, LazyModel) else 0.0


Vectors = NDArray[np.float32]

HEAD_CHARS_PER_TOKEN = 16
"""A query is cut to this many characters per token of the model's window before it is
tokenized: a token is rarely longer (English words average about five characters), so the cut
never reaches into what the model reads, and a very long query costs no more than the window."""

DEFAULT_EMBED_THREADS = 1
"""Torch threads of one query embedding (measured with ``scripts/bench_load.py``: see
``Settings.embed_threads``)."""
