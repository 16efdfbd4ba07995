"""A Haystack ``@component`` retriever over :class:`~hybrid_es.HybridSearcher`.

The caller's principal is a mandatory input of ``run``, so a pipeline passes it per run::

    retriever = HybridEsRetriever(document_store=store, top_k=5,
                                  filters={"field": "meta.team", "operator": "==", "value": "ops"})
    pipeline.add_component("retriever", retriever)
    pipeline.run({"retriever": {"query": question, "principal": principal}})

A run without one is refused (by the pipeline as a missing input, or by the component:
PolicyViolationError); the query text is never read for it, and the store's own principal (its
writer) is never used to search. The output ``documents`` are Haystack
:class:`~haystack.Document` objects with the chunk text, ``score`` (rerank score, else fused),
the document's own metadata (under the names the user gave) and the hit's provenance under
``meta["hybrid_es"]``.

**Filters** are Haystack 2.x filters on ``meta.<declared field>``
(:mod:`hybrid_es.adapters.haystack_filters`), given at init, per run, or both: ``filter_policy``
decides, as in Haystack's own retrievers (``apply_filter_policy``): ``REPLACE`` (the default)
uses the run's filters when given, else the init ones; ``MERGE`` ANDs them. A filter only narrows
what the principal may read (it sits inside the policy filter), and a bad one is refused before
any request (init filters at construction, where the declared fields are known).

**Serialisation**: the searcher is not serialised as an object but as how to build it: the
document store it came from (``HybridEsDocumentStore.to_dict``), or the
:class:`~hybrid_es.settings.Settings` (credentials as ``Secret`` environment variable
references, never inline). A retriever given a bare ``HybridSearcher`` runs, but ``to_dict``
refuses it, saying how to make it serialisable.
"""

# No ``from __future__ import annotations``: Haystack builds the component's input sockets from
# run()'s annotations, which stay real types here rather than strings to resolve.

import asyncio
from collections.abc import Mapping
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.document_stores.types import FilterPolicy
from haystack.document_stores.types.filter_policy import apply_filter_policy
from haystack.utils import Secret, deserialize_secrets_inplace

from hybrid_es.adapters import provenance
from hybrid_es.adapters.haystack_filters import check_haystack_filters
from hybrid_es.adapters.haystack_store import (
    HybridEsDocumentStore,
    build_settings,
    default_secrets,
    settings_to_dict,
)
from hybrid_es.errors import BadQueryError, ConfigurationError
from hybrid_es.metadata_fields import FilterableField
from hybrid_es.models import Principal, RequestScope, SearchResponse
from hybrid_es.retrieval.async_searcher import AsyncHybridSearcher
from hybrid_es.retrieval.searcher import MAX_TOP_K, HybridSearcher
from hybrid_es.settings import Settings

WHERE = "HybridEsRetriever.run(query, principal)"


@component
class HybridEsRetriever:
    """Permission-safe hybrid retrieval as a Haystack component.

    The searcher comes from one of: ``searcher`` (an object: runs, does not serialise),
    ``document_store`` (a :class:`HybridEsDocumentStore`: its searcher), or ``settings`` (a
    Settings, a mapping of its fields, or None for the environment's ``HYBRID_ES_*``, with
    ``secrets`` for the credentials). ``scope`` is the default request scope and ``top_k`` the
    default number of documents (both may be given per run), ``rerank`` whether the searcher's
    cross-encoder reorders the fused head, ``filters``/``filter_policy`` as in the module
    docstring. The component holds no principal: ``run`` takes one.
    """

    def __init__(
        self,
        searcher: HybridSearcher | None = None,
        *,
        document_store: HybridEsDocumentStore | None = None,
        settings: Settings | Mapping[str, Any] | None = None,
        secrets: Mapping[str, Secret] | None = None,
        scope: RequestScope | Mapping[str, Any] | None = None,
        top_k: int = 10,
        rerank: bool = True,
        filters: dict[str, Any] | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
        async_searcher: AsyncHybridSearcher | None = None,
    ) -> None:
        if not 1 <= top_k <= MAX_TOP_K:
            raise BadQueryError(f"top_k must be 1..{MAX_TOP_K}, got {top_k}")
        if searcher is not None and document_store is not None:
            raise ConfigurationError(
                "give a searcher or a document_store, not both (the store's searcher is used)"
            )
        self.document_store = document_store
        self.settings_spec = settings
        self.secrets = dict(default_secrets() if secrets is None else secrets)
        self._searcher = searcher
        self._given_searcher = searcher is not None or async_searcher is not None
        self.async_searcher = async_searcher
        if async_searcher is not None and searcher is None and document_store is None:
            self._searcher = async_searcher.searcher
        self.scope = (
            scope
            if scope is None or isinstance(scope, RequestScope)
            else RequestScope.model_validate(scope)
        )
        self.top_k = top_k
        self.rerank = rerank
        self.filters = filters
        self.filter_policy = (
            filter_policy
            if isinstance(filter_policy, FilterPolicy)
            else FilterPolicy.from_str(filter_policy)
        )
        self._settings: Settings | None = None
        check_haystack_filters(filters, self._declared())

    def _declared(self) -> tuple[FilterableField, ...]:
        """The declared filterable fields, without connecting where they are in the settings."""
        store = self.document_store
        if self._searcher is not None or (store is not None and store.has_searcher):
            return self.searcher.filterable_fields
        return (store.settings if store is not None else self.settings).filterable_fields

    @property
    def settings(self) -> Settings:
        """The settings this retriever's searcher is built from (resolved on first use)."""
        if self._settings is None:
            self._settings = build_settings(self.settings_spec, self.secrets)
        return self._settings

    @property
    def searcher(self) -> HybridSearcher:
        """The searcher runs go through (the store's, or built from the settings on first
        use)."""
        if self._searcher is None:
            if self.document_store is not None:
                self._searcher = self.document_store.searcher
            else:
                from hybrid_es.deployment import HybridEs

                self._searcher = HybridEs(self.settings).searcher
        return self._searcher

    def warm_up(self) -> None:
        """Load the searcher's models (Haystack calls this before a pipeline's first run), so
        that the first query does not pay for loading them."""
        self.searcher.warm_up(rerank=self.rerank)

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        principal: Principal,
        filters: dict[str, Any] | None = None,
        scope: RequestScope | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """Search as ``principal``, narrowed by the init and run ``filters`` (per the filter
        policy); returns ``{"documents": [...]}`` in rank order. Raises PolicyViolationError
        without a principal, HaystackFilterError for a bad filter (before any request)."""
        provenance.require_principal(principal, WHERE)
        ask = self._ask(query, principal, filters, scope, top_k)
        return {"documents": _documents(*provenance.search(self.searcher, **ask))}

    def _ask(
        self,
        query: str,
        principal: Principal,
        filters: dict[str, Any] | None,
        scope: RequestScope | None,
        top_k: int | None,
    ) -> dict[str, Any]:
        """One run's search, the component's defaults and filter policy applied."""
        return {
            "query": query,
            "principal": principal,
            "scope": scope or self.scope,
            "top_k": self.top_k if top_k is None else top_k,
            "rerank": self.rerank,
            "where": WHERE,
            "filters": self._neutral(filters),
        }

    def _neutral(self, filters: dict[str, Any] | None) -> dict[str, Any] | None:
        """The init and run filters merged by the policy, in the neutral grammar (checked)."""
        merged = apply_filter_policy(self.filter_policy, self.filters, filters)
        return check_haystack_filters(merged, self.searcher.filterable_fields)

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        principal: Principal,
        filters: dict[str, Any] | None = None,
        scope: RequestScope | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """:meth:`run` for AsyncPipeline: awaited on the ``async_searcher`` when the retriever
        has one, else the blocking search in a worker thread."""
        if self.async_searcher is None:
            return await asyncio.to_thread(self.run, query, principal, filters, scope, top_k)
        provenance.require_principal(principal, WHERE)
        ask = self._ask(query, principal, filters, scope, top_k)
        return {"documents": _documents(*await provenance.asearch(self.async_searcher, **ask))}

    def to_dict(self) -> dict[str, Any]:
        """Haystack serialisation: how to build the searcher (the store, or the settings and
        the secrets' references) and the retrieval options. Raises ConfigurationError for a
        retriever given a bare HybridSearcher."""
        if self._given_searcher:
            raise ConfigurationError(
                "this HybridEsRetriever was given a searcher object (HybridSearcher or "
                "AsyncHybridSearcher), which cannot be serialised",
                hint="build it from a document store (document_store=...) or from settings "
                "(settings=...) to save it in a pipeline",
            )
        spec = self.settings_spec
        return default_to_dict(
            self,
            document_store=None if self.document_store is None else self.document_store.to_dict(),
            settings=settings_to_dict(spec) if isinstance(spec, Settings) else spec,
            secrets={k: v.to_dict() for k, v in self.secrets.items()},
            scope=None if self.scope is None else self.scope.model_dump(mode="json"),
            top_k=self.top_k,
            rerank=self.rerank,
            filters=self.filters,
            filter_policy=self.filter_policy.value,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HybridEsRetriever":
        """The retriever :meth:`to_dict` describes."""
        params = data.get("init_parameters", {})
        secrets = dict(params.get("secrets") or {})
        deserialize_secrets_inplace(secrets, keys=list(secrets))
        params["secrets"] = secrets
        if params.get("document_store") is not None:
            params["document_store"] = HybridEsDocumentStore.from_dict(params["document_store"])
        return default_from_dict(cls, data)


def _documents(caller: Principal, response: SearchResponse) -> list[Document]:
    return [
        Document(
            id=hit.chunk_id,
            content=hit.text,
            score=provenance.score(hit),
            meta=provenance.metadata(hit, response, caller),
        )
        for hit in response.hits
    ]
