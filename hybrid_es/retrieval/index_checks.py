"""What the searcher checks of a chunks index once, before it trusts it: the types of the fields
its policy filter reads, the embedding model and dimension its vectors came from, and the
filterable fields its mapping holds.

The policy fields must be mapped as the chunks template maps them (``cluster.policy_fields``):
an index whose ``acl_groups`` is ``text`` would have the engine score records outside the
caller's scope. They are read from the mapping, or, for a caller who may not read mappings,
from ``_field_caps``, which ``read`` allows; a caller who may read neither is refused.

The model is read from the index mapping's ``_meta``; a caller whose credentials may not read
mappings (a document-level-security reader) is checked against the ``embedding_model`` stored on
a chunk it may read instead (through the chunks door, under the tenant). A caller who may read no
chunk at all cannot be wrongly answered (every search is empty) and is checked again on the next
search. A filter on a declared field the index does not map with the declared type is refused:
the engine would match nothing (or, for ``$ne``, everything) in silence.

:func:`check_vectors` is the model rule itself, which the ingest applies before its first write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.policy_fields import (
    POLICY_FIELDS,
    check_mapped,
    field_types_by_index,
    field_types_from_caps,
)
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders, reindex_command
from hybrid_es.errors import AuthenticationError, ConfigurationError, EngineError, ModelError
from hybrid_es.metadata_fields import FilterableField, fields_from_mapping
from hybrid_es.models import Principal
from hybrid_es.retrieval.door import ChunksDoor, tenant_body, tenant_policy
from hybrid_es.retrieval.filters import filter_summary


class IndexChecks:
    """The checks done once per chunks index (policy fields, model) and per field set
    (filters)."""

    def __init__(self) -> None:
        self.policy_checked: set[str] = set()
        """The indices whose policy fields were found mapped as the chunks template maps them."""
        self.model_checked: set[str] = set()
        self.model_of: dict[str, str | None] = {}
        """Per checked index, the model its mapping or a chunk records (None: none recorded)."""
        self.mapped_filters: dict[str, list[tuple[str, Any]]] = {}
        """Per index, the ``meta_filter`` mapping of each index behind it, where readable."""
        self.physical_of: dict[str, frozenset[str]] = {}
        """Per checked name (an alias), the indices that were behind it when it was checked: a
        search that meets another one has met a new generation (``cluster.generations``)."""

    def forget(self, index: str) -> None:
        """Drop what was checked of ``index``: the next search checks it again (its alias moved
        to another generation, with perhaps another model or mapping)."""
        for checked in (self.policy_checked, self.model_checked):
            checked.discard(index)
        for cached in (self.model_of, self.mapped_filters, self.physical_of):
            cached.pop(index, None)

    def moved(self, index: str, seen: set[str]) -> bool:
        """Whether answers from the indices ``seen`` show that ``index`` no longer points where
        it did when it was checked."""
        behind = self.physical_of.get(index)
        return behind is not None and bool(seen - behind)

    def check_model(
        self,
        client: Engine,
        door: ChunksDoor,
        index: str,
        principal: Principal,
        embedders: Embedders,
    ) -> Embedder:
        """The embedder of ``index``: the one its mapping (or, for a caller who may not read
        mappings, a chunk) records. A fixed embedder is refused (ModelError) for an index whose
        vectors came from another model or dimension; ``auto`` takes the recorded model
        (``embedder_choice``). AuthenticationError when the cluster refuses both the mapping and
        a chunk. An index that records no model yet (nothing written) is read again next time.
        First refuses (ConfigurationError) an index whose policy fields are not mapped as the
        chunks template maps them (:meth:`check_policy_fields`)."""
        if index in self.model_checked:
            return embedders.recorded(index, self.model_of.get(index))
        try:
            mappings = client.get_mapping(index)
        except EngineError as exc:
            if exc.status == 403:
                self._check_policy_fields_on_caps(client, index)
                return self._model_on_a_chunk(door, index, principal, embedders)
            raise
        self.check_policy_fields(client, index, mappings)
        self.mapped_filters[index] = meta_filters(mappings)
        self.physical_of[index] = frozenset(mappings)
        metas = {name: m.get("_meta", {}) for name, m in mappings.items()}
        models = sorted(
            {str(m["embedding_model"]) for m in metas.values() if m.get("embedding_model")}
        )
        if len(models) > 1 and embedders.auto:
            raise ModelError(
                f"the indices behind {index} were built with different models "
                f"({', '.join(models)})",
                hint="search each index alone, or rebuild them with one model: "
                f"{reindex_command(principal.tenant, models[0])}",
            )
        embedder = embedders.recorded(index, models[0] if models else None)
        for name, meta in metas.items():
            check_vectors(
                name,
                embedder,
                model=meta.get("embedding_model"),
                dims=meta.get("embedding_dims"),
                tenant=principal.tenant,
            )
        if models or not embedders.auto:
            self.model_of[index] = models[0] if models else None
            self.model_checked.add(index)
        return embedder

    def check_policy_fields(
        self, client: Engine, index: str, mappings: dict[str, Any] | None = None
    ) -> None:
        """Refuse (ConfigurationError naming the index, the fields and their types) a chunks
        index that maps a field of the policy filter otherwise than the chunks template, or
        not at all: the engine would compare it otherwise than the re-check. Checked once per
        index; ``mappings``: its ``get_mapping`` answer, where already read. A caller who may
        not read the mapping is checked on ``_field_caps``; AuthenticationError (403) when the
        cluster refuses both."""
        if index in self.policy_checked:
            return
        if mappings is None:
            try:
                mappings = client.get_mapping(index)
            except EngineError as exc:
                if exc.status != 403:
                    raise
                self._check_policy_fields_on_caps(client, index)
                return
        check_mapped(index, field_types_by_index(mappings))
        self.policy_checked.add(index)

    def _check_policy_fields_on_caps(self, client: Engine, index: str) -> None:
        """:meth:`check_policy_fields` for a caller who may not read the mapping."""
        if index in self.policy_checked:
            return
        try:
            caps = client.field_caps(index, POLICY_FIELDS)
        except AuthenticationError as exc:
            raise AuthenticationError(
                f"cannot check how {index} maps the policy fields: the credentials may read "
                "neither its mapping nor its field capabilities",
                hint="grant view_index_metadata or read on the chunks index",
                status=exc.status,
            ) from exc
        check_mapped(index, field_types_from_caps(caps))
        self.policy_checked.add(index)

    def _model_on_a_chunk(
        self, door: ChunksDoor, index: str, principal: Principal, embedders: Embedders
    ) -> Embedder:
        """The embedder of the model stored on one chunk the caller may read, checked; the
        default (and checked again next time) when the caller may read none."""
        try:
            resp = door.search(
                index,
                tenant_body(principal.tenant, size=1, _source=["embedding_model"]),
                tenant_policy(principal.tenant),
                what="checking the model on a chunk",
            )
        except AuthenticationError as exc:
            raise AuthenticationError(
                f"cannot check which model built {index}: the credentials may read neither its "
                "mapping nor its chunks",
                hint="grant view_index_metadata or read on the chunks index",
                status=exc.status,
            ) from exc
        hits = resp["hits"]["hits"]
        if not hits:
            return embedders.default
        model = hits[0].get("_source", {}).get("embedding_model")
        embedder = embedders.recorded(index, model)
        check_model_id(index, model, embedder, tenant=principal.tenant)
        if hits[0].get("_index"):
            self.physical_of[index] = frozenset({str(hits[0]["_index"])})
        self.model_of[index] = model
        self.model_checked.add(index)
        return embedder

    def check_filter_mapped(
        self,
        client: Engine,
        index: str,
        filters: Mapping[str, Any] | None,
        declared: Sequence[FilterableField],
    ) -> None:
        """Refuse a filter on a declared field that the index does not map with the declared
        type (declared after the last bootstrap, or mapped otherwise), where the caller may read
        the mapping. The mapping read by :meth:`check_model` is read again once before refusing
        (a bootstrap since may have added the field). Raises ConfigurationError naming the field
        and index."""
        used = sorted(
            {e.split(":", 1)[0] for e in filter_summary(filters) if not e.startswith("$")}
        )
        problem = self._filter_mapping_problem(index, used, declared)
        if problem is not None:
            try:
                mappings = client.get_mapping(index)
            except EngineError:
                mappings = None
            if mappings is not None:
                self.mapped_filters[index] = meta_filters(mappings)
                problem = self._filter_mapping_problem(index, used, declared)
        if problem is not None:
            raise ConfigurationError(
                problem,
                hint="run `hybrid-es bootstrap --force` with the same "
                "HYBRID_ES_FILTERABLE_FIELDS (for a changed type, re-create the index first), "
                "then re-ingest",
            )

    def _filter_mapping_problem(
        self, index: str, used: list[str], declared: Sequence[FilterableField]
    ) -> str | None:
        types = {f.name: f.type for f in declared}
        for name, meta_filter in self.mapped_filters.get(index, []):
            mapped = {f.name: f.type for f in fields_from_mapping(meta_filter, index=name)}
            for field in used:
                if mapped.get(field) != types[field]:
                    have = mapped.get(field)
                    return f"{field} is declared filterable as {types[field]}, but index " + (
                        f"{name} maps it as {have}" if have else f"{name} does not map it"
                    )
        return None


def check_model_id(
    index: str, model: Any, embedder: Embedder, *, tenant: str | None = None
) -> None:
    """Refuse (ModelError) an index recorded as built by another model than ``embedder``'s; the
    hint names the command that rebuilds it with ``embedder`` (``tenant``: whose index it is,
    where known)."""
    if model is not None and model != embedder.model_id:
        raise ModelError(
            f"index {index} was built with {model} but the embedder is {embedder.model_id}",
            hint="use the index's embedder (HYBRID_ES_EMBEDDER=auto takes it from the index), "
            f"or rebuild it with this one: {reindex_command(tenant, embedder.model_id)}",
        )


def meta_filters(mappings: dict[str, Any]) -> list[tuple[str, Any]]:
    """Each index's ``meta_filter`` mapping (None where it has none), from ``get_mapping``."""
    return [(name, m.get("properties", {}).get("meta_filter")) for name, m in mappings.items()]


def check_vectors(
    index: str,
    embedder: Embedder,
    *,
    model: Any = None,
    dims: Any = None,
    writing: bool = False,
    tenant: str | None = None,
) -> None:
    """The model check that searching and ingesting share: refuse (ModelError) an index whose
    vectors have another dimension (``dims``: what its field or mapping records) or came from
    another model (``model``: the one it records) than ``embedder``'s; None: nothing recorded,
    nothing to refuse. ``writing``: the caller was about to write, so the message says nothing
    was, and the hint names the setting that takes the index's own model. Each hint names the
    command that rebuilds the index with ``embedder`` (``tenant``: whose index it is, where
    known)."""
    done = "; nothing was written" if writing else ""
    rebuild = f"or rebuild it with this one: {reindex_command(tenant, embedder.model_id)}"
    if dims is not None and int(dims) != embedder.dims:
        raise ModelError(
            f"index {index} holds {dims}-dimensional vectors but the embedder "
            f"{embedder.model_id} makes {embedder.dims}{done}",
            hint="use a matching embedder, or an index template with the right dims"
            if writing
            else f"use the embedder the index was built with, {rebuild}",
        )
    if not writing:
        check_model_id(index, model, embedder, tenant=tenant)
    elif model is not None and model != embedder.model_id:
        raise ModelError(
            f"index {index} holds vectors from {model}, not {embedder.model_id}{done}",
            hint="use the index's embedder (HYBRID_ES_EMBEDDER=auto takes it from the index), "
            f"{rebuild}, or ingest into a new index",
        )
