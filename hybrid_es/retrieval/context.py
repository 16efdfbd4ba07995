"""What one search runs with: the searcher's configuration, taken when the search starts.

Each stage of a search (``prepare``, ``retrieve``, ``head_read``, ``stages``, ``search_run``)
takes a :class:`SearchContext` and the request, and calls only what the context holds: the
engine and its chunks door, the retrieval parameters, the fusion settings, the query vectors,
the reranker, the per-index checks. No stage holds or calls back into the searcher that started
it, so a reader follows a search downwards, stage by stage.

The context is made afresh for every search (``HybridSearcher.context``), so a setting changed
between searches (the evaluation pipeline, the reranker, a hook attached after the searcher was
made) is followed. A few members are shared and learn while the searcher lives: what the
engine's fusion turned out to be (``FusionFindings``), the query vectors' cache, which indices
and tenants were checked (``IndexChecks``, ``known_tenants``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.encoders.reranker import Reranker
from hybrid_es.metadata_fields import FilterableFields
from hybrid_es.models import Pipeline, Principal
from hybrid_es.retrieval.answers import Answers
from hybrid_es.retrieval.dialects import Dialect
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.fusion import Alpha, FusionFindings, FusionMethod, FusionMode
from hybrid_es.retrieval.index_checks import IndexChecks
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.query_vectors import QueryVectors
from hybrid_es.tenancy import IndexLayout

if TYPE_CHECKING:
    from hybrid_es.retrieval.observers import OnError, OnResponse


@dataclass(frozen=True)
class SearchContext:
    """One search's configuration (module docstring)."""

    client: Engine
    door: ChunksDoor
    """The only way the search's bodies reach a chunks index (``retrieval.door``)."""
    answers: Answers
    """Sends a stage's bodies through the door and checks what comes back (``answers``)."""
    dialect: Dialect
    layout: IndexLayout
    params: RetrievalParams
    filterable_fields: FilterableFields
    pipeline: Pipeline
    fusion: FusionMode
    fusion_method: FusionMethod
    alpha: Alpha
    found: FusionFindings
    embedders: Embedders
    vectors: QueryVectors
    reranker: Reranker | None
    checks: IndexChecks
    corpus_state: CorpusState
    known_tenants: set[str]
    hash_key: bytes
    on_response: OnResponse | None
    on_error: OnError | None

    def index_for(self, principal: Principal) -> str:
        """The chunks index this caller searches."""
        return self.layout.chunks_for(principal.tenant)

    def embedder_for(self, index: str) -> Embedder:
        """The embedder of ``index``, as the prepare stage's model check found it."""
        return self.embedders.recorded(index, self.checks.model_of.get(index))
