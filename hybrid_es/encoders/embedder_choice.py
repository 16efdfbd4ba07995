"""Which embedder serves each chunks index: one configured model, or ``auto``.

``auto`` (``HYBRID_ES_EMBEDDER=auto``, the default) chooses per chunks index, once, from the
scripts of the first documents written to it: the English MiniLM when they are Latin text, the
multilingual e5 when at least :data:`AUTO_SHARE` of them are in a script MiniLM was not trained on
(Chinese, Japanese, Korean). The choice is recorded in the index mapping's ``_meta``
(``embedding_model``, and ``embedding_choice``: why), and from then on the index's own record
decides: a search embeds its query with the model that built the index it reads, and an ingest
writes with it. An index never changes model in place; a configured model that differs from an
index's is refused with the command that rebuilds it with that model (``hybrid-es reindex
--embedder``: its next generation, from the records already stored).

Why per index and not one multilingual model for everything (docs/evaluation.md, "The default
embedder"): on Chinese, e5 lifts the default pipeline by +0.0099 nDCG@10 (p 3e-5), where MiniLM
leaves 1,179 of 1,181 questions to BM25; on English prose MiniLM embeds a query in a third to a
half of e5's time, and e5 ingests 8x slower.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hybrid_es.encoders.embedder import (
    DEFAULT_EMBED_THREADS,
    DEFAULT_RUNTIME,
    MINILM_INT8_ID,
    MINILM_RUNTIME_OF,
    MINILM_SCRIPTS,
    RETIRED_INT8_IDS,
    E5Embedder,
    Embedder,
    make_embedder,
)
from hybrid_es.errors import ModelError
from hybrid_es.text.analysis import dominant_script

AUTO = "auto"
ENGLISH = "minilm"
MULTILINGUAL = "e5"
AUTO_SHARE = 0.1
"""The share of an index's first documents in a script MiniLM cannot read from which ``auto``
takes the multilingual model: one in ten. Below it, such documents (and questions in their
script) are answered by BM25 alone, and each response says so (``fusion_reason``). A judgement,
not a measurement: it weighs a tenth of the questions losing their dense leg against every
question paying e5's query time (2-4x MiniLM's)."""
SAMPLE = 64
"""Documents whose scripts decide (the first batch of the first ingest)."""


@dataclass(frozen=True)
class Choice:
    """The embedder chosen for a new index, and why (stored as ``_meta.embedding_choice``)."""

    embedder: Embedder
    reason: str
    name: str
    """``minilm`` or ``e5`` (auto), or the fixed embedder's model id."""


class Embedders:
    """The embedder of each chunks index: ``fixed`` (one configured model for every index) or,
    without one, ``auto``. ``make`` builds a named embedder (``minilm``, ``e5``; default
    :func:`make_embedder`), once per name and only when first asked for."""

    def __init__(
        self,
        fixed: Embedder | None = None,
        *,
        make: Callable[[str], Embedder] | None = None,
    ) -> None:
        self.fixed = fixed
        self._make = make or make_embedder
        self._made: dict[str, Embedder] = {}
        self.make_minilm: Callable[[str], Embedder] = lambda runtime: make_embedder(
            ENGLISH, runtime=runtime
        )
        """MiniLM on a given runtime: what serves an index that another runtime wrote
        (``MINILM_RUNTIME_OF``)."""

    @classmethod
    def of(cls, embedder: Embedder | Embedders) -> Embedders:
        """``embedder`` itself when it is a set, else the set fixed to it."""
        return embedder if isinstance(embedder, Embedders) else cls(embedder)

    @property
    def auto(self) -> bool:
        return self.fixed is None

    @property
    def name(self) -> str:
        """``auto``, or the fixed embedder's model id."""
        return AUTO if self.fixed is None else self.fixed.model_id

    @property
    def default(self) -> Embedder:
        """The fixed embedder, or (auto) the English one: what serves an index that records no
        model yet (an empty one: its searches find nothing whichever model embeds them)."""
        return self.fixed or self.named(ENGLISH)

    def named(self, name: str) -> Embedder:
        if name not in self._made:
            self._made[name] = self._make(name)
        return self._made[name]

    def loaded(self) -> list[Embedder]:
        """The embedders made so far (the fixed one, or those auto has needed)."""
        return [self.fixed] if self.fixed else list(self._made.values())

    def recorded(self, index: str, model_id: str | None) -> Embedder:
        """The embedder of ``index``, whose mapping records ``model_id`` (None: no model yet).
        Fixed: the fixed embedder (whether it matches is the index checks' to refuse), except
        that a fixed MiniLM serves an index another MiniLM runtime wrote on that runtime (the
        index's record decides: float32 indices stay float32 whatever the default runtime).
        Auto: the named embedder with that model id; ModelError for a model auto does not
        make."""
        if model_id is None:
            return self.default
        if self.fixed is not None:
            other_runtime = (
                self.fixed.model_id in MINILM_RUNTIME_OF
                and model_id in MINILM_RUNTIME_OF
                and model_id != self.fixed.model_id
            )
            return self._minilm_on(MINILM_RUNTIME_OF[model_id]) if other_runtime else self.fixed
        for name in (ENGLISH, MULTILINGUAL):
            if self.named(name).model_id == model_id:
                return self.named(name)
        if model_id in RETIRED_INT8_IDS:
            raise ModelError(
                f"index {index} was built with {model_id}, an int8 MiniLM of an earlier build "
                f"that this version does not make (its vectors are now {MINILM_INT8_ID})",
                hint="rebuild it from its records with this version's MiniLM: "
                f"{reindex_command(None, MINILM_INT8_ID)} (int8 with "
                "HYBRID_ES_EMBED_RUNTIME=onnx-int8, the default; onnx for float32)",
            )
        runtime = MINILM_RUNTIME_OF.get(model_id)
        if runtime is not None:  # MiniLM written on the other runtime: embed as it was written
            return self._minilm_on(runtime)
        raise ModelError(
            f"index {index} was built with {model_id}, which HYBRID_ES_EMBEDDER=auto does not "
            f"choose (it chooses {ENGLISH} or {MULTILINGUAL})",
            hint=f"set HYBRID_ES_EMBEDDER to that model's name or folder to use {index}",
        )

    def _minilm_on(self, runtime: str) -> Embedder:
        """MiniLM on ``runtime`` (made once), for an index that runtime wrote."""
        key = f"{ENGLISH}@{runtime}"
        if key not in self._made:
            self._made[key] = self.make_minilm(runtime)
        return self._made[key]

    def for_documents(self, texts: Iterable[str]) -> Choice:
        """The embedder for a new index whose first documents are ``texts`` (the first
        :data:`SAMPLE`)."""
        if self.fixed is not None:
            return Choice(self.fixed, "configured (HYBRID_ES_EMBEDDER)", self.fixed.model_id)
        sample = [t for t in texts][:SAMPLE]
        other = sum(1 for t in sample if dominant_script(t) not in MINILM_SCRIPTS)
        share = other / len(sample) if sample else 0.0
        if sample and share >= AUTO_SHARE:
            return Choice(
                self.named(MULTILINGUAL),
                f"auto: {other} of the first {len(sample)} documents are in a script "
                f"{ENGLISH} was not trained on (at least {AUTO_SHARE:.0%}): {MULTILINGUAL}",
                MULTILINGUAL,
            )
        return Choice(
            self.named(ENGLISH),
            f"auto: {other} of the first {len(sample)} documents are in a script other than "
            f"Latin (under {AUTO_SHARE:.0%}): {ENGLISH}",
            ENGLISH,
        )


def make_embedders(
    name: str = AUTO,
    *,
    query_threads: int | None = DEFAULT_EMBED_THREADS,
    runtime: str = DEFAULT_RUNTIME,
) -> Embedders:
    """``auto`` (chosen per index), or one fixed embedder by name (:func:`make_embedder`);
    ``runtime``: how MiniLM runs (``HYBRID_ES_EMBED_RUNTIME``)."""
    if name == AUTO:
        out = Embedders(
            make=lambda n: make_embedder(n, query_threads=query_threads, runtime=runtime)
        )
    else:
        out = Embedders(make_embedder(name, query_threads=query_threads, runtime=runtime))
    out.make_minilm = lambda r: make_embedder(ENGLISH, query_threads=query_threads, runtime=r)
    return out


def models_served(name: str) -> frozenset[str] | None:
    """The model ids an index may record for a deployment whose ``HYBRID_ES_EMBEDDER`` is
    ``name`` to search and write it as it is (anything else needs a rebuild with that embedder:
    ``hybrid-es reindex --embedder``); None for ``auto``, which takes each index's own model. A
    fixed MiniLM serves the records of both its runtimes (:meth:`Embedders.recorded`). Pure: no
    model is loaded."""
    if name == AUTO:
        return None
    if name == ENGLISH:
        return frozenset(MINILM_RUNTIME_OF)
    if name == MULTILINGUAL:
        return frozenset({E5Embedder.model_id})
    return frozenset({name})


def embedder_setting(model_id: str) -> str:
    """The ``HYBRID_ES_EMBEDDER`` (and ``hybrid-es reindex --embedder``) value that embeds with
    the model ``model_id`` records: ``minilm`` for either MiniLM runtime (which one is
    ``HYBRID_ES_EMBED_RUNTIME``'s), ``e5``, else the model's own name or folder. Pure."""
    if model_id in MINILM_RUNTIME_OF or model_id in RETIRED_INT8_IDS:
        return ENGLISH
    if model_id == E5Embedder.model_id:
        return MULTILINGUAL
    return model_id


def reindex_command(tenant: str | None, model_id: str) -> str:
    """The command that rebuilds a tenant's chunks index with the model ``model_id`` (``<tenant>``
    where the caller does not know it). Pure."""
    return (
        f"hybrid-es reindex --tenant {tenant or '<tenant>'} --embedder {embedder_setting(model_id)}"
    )
