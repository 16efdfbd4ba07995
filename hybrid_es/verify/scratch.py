"""The scratch objects of a writing run: a chunks index and a corpus-state index under the
deployment's own prefixes (``<chunks>-t-verify-<tag>-a``, the index of the scratch tenant
``verify-<tag>-a``, and ``<corpus_state>-verify-<tag>``), made
by the installed templates, holding :mod:`~hybrid_es.verify.corpus` ingested through the library's
own ``Ingestor`` with a model-free embedder; and, where the checks make them, a role and a
credential (``dls``).

Every object's removal is registered *before* the object is made, and :meth:`Scratch.remove`
runs them all, newest first, with signals held (``interrupt.held``), on every way out of the
``with`` block: so nothing is left behind, even when a run is interrupted half-way through
making something. A removal that finds nothing to remove is not a problem; one that fails is
reported (``problems``), never hidden.

A run removes only what it made: an object that exists already under a scratch name (a tag
chosen again, a run killed before its clean-up) is neither used nor removed, and the run stops
there with a ConfigurationError that names it (:func:`taken`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import CHUNKS_TEMPLATE, load_templates, vector_field_problem
from hybrid_es.cluster.trace_storage import missing_properties
from hybrid_es.errors import ConfigurationError, EngineError
from hybrid_es.evaluation.metering import HashEmbedder
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal
from hybrid_es.retrieval.door import control_reads
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout
from hybrid_es.verify.corpus import (
    RESTRICTED,
    SUPERSEDED,
    VISIBLE,
    ScratchCorpus,
    scratch_corpus,
)
from hybrid_es.verify.interrupt import held

INFIX = "-verify-"
"""In the name of every scratch object (indices, roles, users, API keys)."""
SINGLE_SHARD = {"settings": {"index": {"number_of_shards": 1}}}
"""The scratch chunks index has one shard (OpenSearch 2.19 fuses per shard: a comparison of
native and client fusion over more than one would compare different things); its mappings and
analyzers are the installed template's."""

Step = Callable[[str], None]


class Scratch:
    """A run's scratch objects: names, the corpus, and the removal of everything made."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        *,
        tag: str | None = None,
        now: datetime | None = None,
        on_step: Step | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.tag = tag or uuid.uuid4().hex[:8]
        self.now = now or datetime.now(UTC)
        base = settings.layout()
        # One index per tenant by name (whatever the deployment's tenancy), so that a tenant
        # reader role names the scratch chunks index exactly; both tenants' records go into the
        # first tenant's (``index``), ``<chunks>-t-verify-<tag>-a``.
        self.layout = IndexLayout(
            chunks=base.chunks,
            packets=f"{base.packets}{INFIX}{self.tag}",
            traces=f"{base.traces}{INFIX}{self.tag}",
            corpus_state=f"{base.corpus_state}{INFIX}{self.tag}",
            namespace=base.namespace,
        )
        self.corpus: ScratchCorpus = scratch_corpus(self.tag, self.now)
        self.index = self.layout.chunks_for(self.corpus.tenants[0])
        self.embedder = HashEmbedder()
        self.records: dict[str, tuple[str, str, int]] = {}
        """Stored key -> (tenant, document id, version) of every scratch chunk."""
        self.made: list[str] = []
        self.problems: list[str] = []
        self.mapping_problems: list[str] = []
        self._undo: list[tuple[str, Callable[[], None]]] = []
        self._step = on_step or (lambda _: None)

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    # -- making -------------------------------------------------------------------------------

    def step(self, text: str) -> None:
        """Tell the caller what the run does now (``on_step``)."""
        self._step(text)

    def undo(self, what: str, action: Callable[[], None]) -> None:
        """Register how to remove ``what``; call it before making ``what``."""
        self._undo.append((what, action))

    def make(
        self,
        what: str,
        make: Callable[[], object],
        undo: Callable[[], None],
        *,
        exists: Callable[[], bool] | None = None,
    ) -> None:
        """Make ``what`` with its removal registered first. ``exists``, asked before anything
        is registered, and a ``make`` that answers False (a create that found the name taken)
        mean that ``what`` is not this run's: ConfigurationError (:func:`taken`), and it is
        left alone. When the cluster refuses it (an answer with a 4xx status), nothing was made
        and the removal is dropped again; on no answer (a timeout, an interruption) it stays,
        since the object may exist (and ``exists`` said it did not a moment before)."""
        if exists is not None and exists():
            raise taken(what, self.tag)
        self.undo(what, undo)
        try:
            made = make()
        except EngineError as exc:
            if exc.status is not None and 400 <= exc.status < 500:
                self._undo.remove((what, undo))
            raise
        if made is False:
            self._undo.remove((what, undo))
            raise taken(what, self.tag)
        self.made.append(what)

    def create(self) -> None:
        """Create the two scratch indices from the installed templates and ingest the corpus
        (each tenant's documents as that tenant). Raises the engine's error when the
        credentials may not (an AuthenticationError with status 403)."""
        for index, body in ((self.index, SINGLE_SHARD), (self.layout.corpus_state, None)):
            self._step(f"creating scratch index {index}")
            # create_index answers False when the name is taken (the create is refused, never
            # a reuse); asking first as well keeps a create that gets no answer from leaving a
            # removal registered for an index that was there before the run.
            self.make(
                f"index {index}",
                functools.partial(self.engine.create_index, index, body),
                functools.partial(self.engine.delete_index, index),
                exists=functools.partial(self.engine.index_exists, index),
            )
        self.mapping_problems = self._mapping_problems()
        self._step(f"ingesting {len(self.corpus.documents)} scratch documents of two tenants")
        ingestor = Ingestor(
            self.engine,
            self.embedder,
            index=self.index,
            corpus_state=CorpusState(self.engine, self.layout.corpus_state),
        )
        for tenant in self.corpus.tenants:
            who = Principal(tenant=tenant, user_id="verify-ingest")
            ingestor.ingest(self.corpus.of(tenant), who, now=self.now)
        with control_reads("verify: every generated record of the scratch index"):
            hits = list(
                self.engine.scan(
                    self.index,
                    {"query": {"match_all": {}}, "_source": ["tenant", "doc_id", "version"]},
                )
            )
        for h in hits:
            src = h["_source"]
            self.records[h["_id"]] = (str(src["tenant"]), str(src["doc_id"]), int(src["version"]))

    def _mapping_problems(self) -> list[str]:
        """What the scratch chunks index lacks of the chunks template in es_templates (the
        installed template is older than the files, or another template won), and a vector field
        this engine cannot serve. Also sizes the embedder to the mapping's vectors."""
        (mapping,) = self.engine.get_mapping(self.index).values()
        have = mapping.get("properties", {})
        chunks = next(
            t
            for t in load_templates("standard", self.settings.templates_dir, self.engine.flavor)
            if t.key == CHUNKS_TEMPLATE
        )
        want = chunks.body["template"]["mappings"]["properties"]
        problems = [f"lacks the field {name}" for name in sorted(missing_properties(want, have))]
        vector = have.get("embedding")
        if vector:
            why = vector_field_problem(self.engine.flavor, vector)
            problems += [why] if why else []
            dims = vector.get("dims", vector.get("dimension"))
            if dims:
                self.embedder.dims = int(dims)
        dynamic = chunks.body["template"]["mappings"].get("dynamic")
        if dynamic is not None and str(mapping.get("dynamic")) != str(dynamic):
            problems.append(f"has dynamic {mapping.get('dynamic')!r}, not {dynamic!r}")
        return problems

    # -- what the checks ask ---------------------------------------------------------------

    def forbidden(self) -> dict[str, str]:
        """Stored key -> why the first tenant's caller must never meet it: every record of the
        other tenant, and the first tenant's restricted records."""
        a = self.corpus.tenants[0]
        out: dict[str, str] = {}
        for key, (tenant, doc_id, version) in self.records.items():
            if tenant != a:
                out[key] = RESTRICTED["verify-other-tenant"]
            elif doc_id in RESTRICTED and (doc_id, version) != (SUPERSEDED, 2):
                out[key] = RESTRICTED[doc_id]
        return out

    def with_phrase(self) -> set[str]:
        """The keys of the records that hold the phrase (the restricted ones and the visible
        one): a search for the phrase without the policy finds them."""
        return {k for k, (_, doc_id, v) in self.records.items() if _holds_phrase(doc_id, v)}

    def visible(self) -> set[str]:
        """The key of the first tenant's own record with the phrase."""
        a = self.corpus.tenants[0]
        return {k for k, (t, doc_id, _) in self.records.items() if t == a and doc_id == VISIBLE}

    def tenant_of(self, key: str) -> str | None:
        record = self.records.get(key)
        return record[0] if record else None

    # -- removing -------------------------------------------------------------------------------

    def remove(self) -> None:
        """Remove every object made, newest first, with SIGINT and SIGTERM held until done."""
        with held():
            while self._undo:
                what, action = self._undo.pop()
                try:
                    action()
                except EngineError as exc:
                    if exc.status != 404:
                        self.problems.append(f"{what}: {exc.message[:200]}")
                except Exception as exc:  # a removal must not stop the others
                    self.problems.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")
            if self.made:
                self._step("removed the scratch objects")


def taken(what: str, tag: str) -> ConfigurationError:
    """The error for a scratch object that exists already: not this run's, so neither used nor
    removed. The message says it all (a report keeps only the message)."""
    return ConfigurationError(
        f"the scratch {what} exists already, so it was neither used nor removed (a run removes "
        f"only what it made): choose another tag than {tag!r}, or remove it if an earlier run "
        "left it",
        hint="choose another tag (a run without one draws a random tag)",
    )


def describe(scratch: Scratch) -> list[str]:
    """Detail lines for the report: what was made (and removed), and what was ingested."""
    lines = [f"made and removed: {', '.join(scratch.made)}"] if scratch.made else []
    if scratch.records:
        tenants = " and ".join(scratch.corpus.tenants)
        lines.append(f"{len(scratch.records)} chunks of tenants {tenants} in {scratch.index}")
    return lines


def _holds_phrase(doc_id: str, version: int) -> bool:
    return doc_id == VISIBLE or (doc_id in RESTRICTED and (doc_id, version) != (SUPERSEDED, 2))
