"""What an ingest checks once, before its first write: that every index name of its layout is
one its namespace's templates shape (``cluster.names``); and of a chunks index, before its first
write to it: that an installed template maps a new index of its name as a chunks index, that it
maps the fields of the policy filter as the chunks template does (``cluster.policy_fields``),
that its vector field can hold this embedder's vectors on this engine, which model writes it,
and which filterable metadata fields its mapping declares.

The model rule is the searcher's own (``retrieval.index_checks.check_vectors``): an index holds
the vectors of one model and dimension. An empty index takes the embedder's model id and
dimension into its mapping ``_meta`` before anything is written to it, so a later writer or
searcher finds it recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.generations import create, current
from hybrid_es.cluster.names import KINDS, check_names
from hybrid_es.cluster.policy_fields import check_mapped, check_new_index, field_types
from hybrid_es.cluster.retries import on_connection_failure, while_shards_start
from hybrid_es.cluster.templates import load_templates, vector_dims, vector_field_problem
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.errors import ConfigurationError, EngineError, IndexMissingError, translate_es_error
from hybrid_es.metadata_fields import FilterableFields, fields_from_mapping
from hybrid_es.namespace import namespace_of
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.index_checks import check_vectors
from hybrid_es.tenancy import IndexLayout


class WriteChecks:
    """Per chunks index, the result of its check (done once): the embedder that writes it and
    the filterable fields it maps."""

    def __init__(self) -> None:
        self.checked: set[str] = set()
        self.embedder_of: dict[str, Embedder] = {}
        self.filterable: dict[str, FilterableFields] = {}
        """Per index, the filterable metadata fields its mapping holds (``meta_filter``)."""
        self.names_checked: set[IndexLayout] = set()
        self.physical_of: dict[str, str] = {}
        """Per index, the physical index its name stood for when it was checked (a generation
        behind its alias, ``cluster.generations``)."""

    def check_names(self, layout: IndexLayout, corpus_state: str) -> None:
        """Refuse (ConfigurationError naming the setting; nothing written), once per layout, an
        index name that the templates of the layout's namespace would not shape
        (:func:`check_layout_names`)."""
        if layout not in self.names_checked:
            check_layout_names(layout, corpus_state)
            self.names_checked.add(layout)

    def moved(self, client: Engine, index: str) -> bool:
        """Whether ``index`` now stands for another physical index than when it was checked (a
        rebuild switched its alias since); if so its check is forgotten, to be made again. Asked
        by a writer run once it has begun: a switch waits for the runs in flight, so the answer
        holds until the run ends. False where the credentials may not read aliases."""
        checked = self.physical_of.get(index)
        if checked is None:
            return False
        try:
            now = current(client, index)
        except EngineError as exc:
            if exc.status != 403:
                raise
            return False
        if now is None or now.index == checked:
            return False
        for cache in (self.embedder_of, self.filterable, self.physical_of):
            cache.pop(index, None)
        self.checked.discard(index)
        return True

    def embedder_for(self, index: str, embedders: Embedders) -> Embedder:
        """The embedder that writes ``index`` (as :meth:`check_model` found or chose it)."""
        return self.embedder_of.get(index) or embedders.default

    def check_model(
        self,
        client: Engine,
        door: ChunksDoor,
        embedders: Embedders,
        index: str,
        texts: Sequence[str] = (),
    ) -> Embedder:
        """The embedder that writes ``index``; refuses, before any write, an index whose vectors
        come from another model or size (ModelError), or whose vector field this engine cannot
        serve (ConfigurationError; OpenSearch: a k-NN engine other than lucene). Also refuses
        (ConfigurationError) an index that maps a field of the policy filter otherwise than the
        chunks template, and, before creating a missing index, a name whose new index no
        installed template would map so (``cluster.policy_fields``).

        An empty index takes the embedder's model id and dimension into its mapping ``_meta``:
        the fixed one, or (``auto``) the one chosen from ``texts``, the first documents to be
        written (no texts: nothing is chosen or recorded yet). The filterable metadata fields the
        index maps (``meta_filter``, as bootstrap put them) are the ones whose values every
        document writes: the mapping is the declaration.
        """
        if index in self.checked:
            return self.embedder_for(index, embedders)
        try:
            props, meta, count, physical = _mapping(client, door, index)
        except Exception as exc:
            raise translate_es_error(exc, url=client.url, what=f"checking {index}") from exc
        check_mapped(index, {index: field_types(props)}, writing=True)
        vector_field = props.get("embedding", {})
        _refuse_field(client, index, vector_field)
        recorded = meta.get("embedding_model") if count else None
        if recorded is not None:
            embedder, reason = embedders.recorded(index, recorded), None
        elif embedders.auto and not texts:
            return embedders.default  # nothing to choose from yet: decided by the first write
        else:
            choice = embedders.for_documents(texts)
            embedder, reason = choice.embedder, choice.reason
        check_vectors(index, embedder, model=recorded, dims=vector_dims(vector_field), writing=True)
        filterable = fields_from_mapping(props.get("meta_filter"), index=index)
        if meta.get("embedding_model") != embedder.model_id or reason is not None:
            try:
                _put_meta(client, index, embedder, reason)
            except Exception as exc:
                raise translate_es_error(
                    exc, url=client.url, what=f"recording the model on {index}"
                ) from exc
        self.filterable[index] = filterable
        self.embedder_of[index] = embedder
        self.physical_of[index] = physical
        self.checked.add(index)
        return embedder


def check_layout_names(layout: IndexLayout, corpus_state: str) -> None:
    """Refuse (``cluster.names.check_names``: ConfigurationError naming the setting to change)
    a packets, traces or corpus state name (``corpus_state``: the index the ingest's corpus
    state writes) that the shipped templates of ``layout``'s namespace would not shape, and a
    chunks name of the hybrid-es family (``hybrid-es-*``, ``hybrid-es.<ns>-*``) that is not the
    namespace's own chunks name. Any other chunks name is checked against the templates
    installed (:func:`~hybrid_es.cluster.policy_fields.check_new_index`), which takes a
    template of the user's own for it as well. Pure: reads the template files only."""
    kinds = [k for k in KINDS if k != "chunks" or namespace_of(layout.chunks) is not None]
    layout = replace(layout, corpus_state=corpus_state)
    check_names(layout, load_templates(namespace=layout.namespace), kinds)


def _refuse_field(client: Engine, index: str, vector_field: dict[str, Any]) -> None:
    """ConfigurationError for an index whose ``embedding`` field this engine cannot serve."""
    problem = vector_field_problem(client.flavor, vector_field)
    if problem is not None and not vector_field:
        problem = "it maps no `embedding` field (no hybrid-es index template applied to it)"
    if problem is not None:
        raise ConfigurationError(
            f"index {index} cannot hold hybrid-es vectors on {client.name}: {problem}; "
            "nothing was written",
            hint="run `hybrid-es bootstrap`, so that new chunks indices map `embedding` as a "
            "knn_vector with the lucene engine, then rebuild it from its records: `hybrid-es "
            "reindex --tenant <tenant>` (`hybrid-es bootstrap --check` names the command); or "
            "ingest into a new index",
        )


@on_connection_failure
def _mapping(
    client: Engine, door: ChunksDoor, index: str
) -> tuple[dict[str, Any], dict[str, Any], int, str]:
    """The index's mapped properties, its ``_meta``, its chunk count and the physical index
    its name stands for (created if missing,
    where an installed template would map it as a chunks index: ``check_new_index``; as
    generation 1 behind an alias of its name)."""
    try:
        client.get_mapping(index)
    except IndexMissingError:
        # Refused here, a name no template matches leaves no dynamically mapped index behind.
        # A credential that may not simulate templates (hybrid-es-ingest) skips this: the
        # mapping check after creating the index still refuses it before any write.
        check_new_index(client, index)
        # Generation 1 behind the alias ``index`` (``cluster.generations``), so that the index
        # can be rebuilt beside itself later. False when another writer created it first: that
        # is fine.
        create(client, index)
    # A concurrent writer may have created the index a moment ago: wait until its primary
    # shard has started, or the count below meets a 503 (returns at once when it has). The
    # wait is both servers' default, 30s: a `timeout` parameter is not sent, because
    # opensearch-py's transport takes one for its own socket timeout.
    client.health(index, wait_for_status="yellow")
    # Count before reading the model: every writer records its model before its first
    # write, so a count above zero is always read with that model already in the mapping
    # (read the other way round, a concurrent first writer's records could be counted
    # against the template's default model).
    count = _count(door, index)
    ((physical, mappings),) = client.get_mapping(index).items()
    return mappings.get("properties", {}), mappings.get("_meta", {}), count, physical


@while_shards_start
def _count(door: ChunksDoor, index: str) -> int:
    # A shard that is still starting (a busy or recovering node) answers 503 for a while.
    return door.size(index)


@on_connection_failure
def _put_meta(client: Engine, index: str, embedder: Embedder, reason: str | None) -> None:
    meta: dict[str, Any] = {"embedding_model": embedder.model_id, "embedding_dims": embedder.dims}
    if reason is not None:
        meta["embedding_choice"] = reason
    client.put_mapping(index, {"_meta": meta})
