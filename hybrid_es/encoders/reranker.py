"""The external cross-encoder that reranks the fused pool (sentence-transformers ``CrossEncoder``).

Configured by a model name (where a hub is reachable) or a local folder; loaded lazily, on CPU.
A folder written by ``hybrid-es reranker train`` carries ``hybrid_es_reranker.json``: the
sequence length it was trained at and the blend weight chosen on held-out queries, which become
this reranker's defaults (explicit arguments win).

Precision: ``onnx-int8`` (the default): the model's graph exported, fused and quantised to int8
on ONNX Runtime (``encoders.onnx_reranker``, built once into the model cache), which on the 2-core
build machine reranked 20 SciFact passages in 125 / 146 ms p50 / p95 against torch int8's 165 /
192, its reranked nDCG@10 no lower on any shared collection (docs/evaluation.md, "The
cross-encoder on the fused graph"); ``onnx`` (the same graph in float32, torch's scores within
1e-5); and on torch ``fp32`` (the reference), ``bf16`` (autocast; slower than fp32 here) or
``int8`` (dynamic quantisation of the Linear layers). Measured by ``scripts/bench_rerank.py``.
Cheaper still is a smaller model: ``hybrid-es reranker train --layers 4 --teacher MODEL`` distils
a 4-layer student from a trained 6-layer cross-encoder: it reranked the same 20 SciFact passages in
117 instead of 153 ms p95, at nDCG@10 0.7307 against 0.7242 on the MiniLM first stage and 0.006
below the teacher on the adapted one (docs/evaluation.md).
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from hybrid_es.encoders.embedder import LazyModel, quiet_transformers, torch_threads
from hybrid_es.text.analysis import dominant_script

Precision = Literal["fp32", "bf16", "int8", "onnx", "onnx-int8"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "bf16", "int8", "onnx", "onnx-int8")
DEFAULT_PRECISION: Precision = "onnx-int8"
"""The fused int8 graph on ONNX Runtime: on the 2-core machine it reranked SciFact's top 20 in
125 / 146 ms p50 / p95 against torch int8's 165 / 192, and no shared collection's reranked
nDCG@10 lost by the switch (docs/evaluation.md, "The cross-encoder on the fused graph")."""


def default_precision(model: str) -> Precision:
    """:data:`DEFAULT_PRECISION` for a local model folder, whose graph is built from its weights;
    torch ``int8`` for a hub name, whose weights sentence-transformers fetches itself."""
    return DEFAULT_PRECISION if Path(model).is_dir() else "int8"


METADATA_FILE = "hybrid_es_reranker.json"


@runtime_checkable
class Reranker(Protocol):
    """What the searcher's rerank stage needs: scores for (query, passage) pairs, the blend
    weight and the gate. :class:`CrossEncoderReranker` is the product's; tests plug in a scorer
    whose ranking is known."""

    model_name: str
    weight: float
    scripts: frozenset[str] | None

    def covers(self, query: str) -> tuple[bool, str]: ...

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


def rerank_passage(source: Mapping[str, Any]) -> str:
    """The text a chunk shows the cross-encoder: its title, then the chunk itself.

    The same function feeds training and serving, so the model sees at query time what it was
    trained on. Extractive context headers (identifier lists) are left out: they help BM25 find
    the chunk but spend the cross-encoder's short token budget on noise.
    """
    title = str(source.get("title") or "").strip()
    text = str(source.get("raw_chunk_text") or source.get("search_payload") or "").strip()
    if title and not text.startswith(title):
        return f"{title}\n{text}"
    return text


def read_metadata(model: str) -> dict[str, Any]:
    """The training metadata of a local model folder, or {} (a hub name, or a foreign model)."""
    path = Path(model) / METADATA_FILE
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else {}


class CrossEncoderReranker:
    """Scores (query, passage) pairs; higher is more relevant. Passages are truncated to
    ``max_length`` tokens together with the query.

    ``weight`` is the cross-encoder's share when its scores are blended with the fused scores
    (1.0: the cross-encoder's order alone; see :func:`hybrid_es.retrieval.fusion.blend`).
    ``threads``: torch threads of one ``score`` call, in the calling thread (None or 0: the
    thread's current count; see :func:`~hybrid_es.encoders.embedder.torch_threads`).
    """

    def __init__(
        self,
        model: str,
        *,
        max_length: int | None = None,
        batch_size: int = 32,
        precision: Precision | None = None,
        weight: float | None = None,
        threads: int | None = None,
    ) -> None:
        if precision is not None and precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        meta = read_metadata(model)
        self.model_name = model
        self.max_length = int(max_length or meta.get("max_length") or 256)
        self.batch_size = batch_size
        self.precision: Precision = precision or default_precision(model)
        """None: :func:`default_precision` (ONNX int8 for a folder, torch int8 for a hub name)."""
        self.threads = threads
        self.weight = float(weight if weight is not None else meta.get("blend_weight", 1.0))
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"weight must lie in [0, 1], got {self.weight}")
        self.metadata = meta
        scripts = meta.get("scripts")
        self.scripts: frozenset[str] | None = frozenset(scripts) if scripts else None
        """Scripts the model was trained on (from its metadata); None: no gate (hub models)."""
        self._model = LazyModel(
            self._open,
            what=f"cross-encoder {model!r}",
            hint="point HYBRID_ES_RERANKER_MODEL at a local CrossEncoder folder (see "
            "`hybrid-es reranker train`) or a hub name where one is reachable",
        )

    def _open(self) -> Any:
        quiet_transformers()
        if self.precision.startswith("onnx"):
            from hybrid_es.encoders.onnx_reranker import OnnxCrossEncoder

            return OnnxCrossEncoder(
                self.model_name, self.precision, max_length=self.max_length, threads=self.threads
            )
        import torch
        from sentence_transformers import CrossEncoder

        ce = CrossEncoder(self.model_name, max_length=self.max_length, device="cpu")
        if self.precision == "int8":
            # torch.ao's eager quantisation is deprecated upstream in favour of torchao, but is
            # what this torch ships and measures fastest here; its notices are not ours to show.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                warnings.filterwarnings("ignore", message=".*quantiz", category=UserWarning)
                torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
                    ce.model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True
                )
        return ce

    def covers(self, query: str) -> tuple[bool, str]:
        """Whether this model should rerank ``query``, and the query's script.

        A model trained by ``hybrid-es reranker train`` records the scripts of its training
        queries; a query in another script (a Chinese question for a model trained on English
        claims) is not reranked: measured on XQuAD-zh, such reranking cost 0.04 nDCG@10.
        """
        script = dominant_script(query)
        return (self.scripts is None or script in self.scripts), script

    def _load(self) -> Any:
        return self._model.get()

    def load(self) -> None:
        """Load the model now (before anything is timed)."""
        self._load()

    @contextlib.contextmanager
    def _precision(self) -> Iterator[None]:
        if self.precision != "bf16":
            yield
            return
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16):
            yield

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in input order."""
        if not passages:
            return []
        model = self._load()
        pairs = [(query, p) for p in passages]
        if self.precision.startswith("onnx"):
            return model.predict(pairs, batch_size=self.batch_size)  # type: ignore[no-any-return]
        with torch_threads(self.threads), self._precision():
            scores = model.predict(
                pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
            )
        return [float(s) for s in scores]
