"""Items 1 and 2: the cluster's native fusion equals hybrid-es's client fusion of the same legs.

The searcher runs every scratch query for each scratch tenant twice, ``fusion="native"`` and
``fusion="client"``, and :func:`~hybrid_es.verify.compare.compare_fusion` holds the answers side by
side: ids, order, fused scores within the tolerance, per-leg ranks. Whether the cluster can fuse
natively at all is asked read-only first (``capabilities.native_fusion_works``, the searcher's own
probe), so a read-only run still says whether the item could pass here.
"""

from __future__ import annotations

from hybrid_es.cluster.capabilities import native_fusion_works
from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import HybridEsError
from hybrid_es.models import SearchResponse
from hybrid_es.retrieval.searcher import FusionMethod, FusionMode, HybridSearcher
from hybrid_es.verify.compare import TOLERANCE, Ranked, compare_fusion
from hybrid_es.verify.report import Check, failed, passed, skipped, unavailable
from hybrid_es.verify.scratch import Scratch

ITEM = {"rrf": 1, "linear": 2}
TOP_K = 50
_MODES: tuple[FusionMode, FusionMode] = ("native", "client")
ES_LINEAR = (
    "hybrid-es fuses linear client-side because Elasticsearch's linear retriever normalises "
    "differently"
)


def native_why_not(engine: Engine, method: FusionMethod) -> str:
    """Why the cluster cannot fuse ``method`` natively ("" when it can). Read-only."""
    if engine.flavor != "opensearch" and method == "linear":
        return ES_LINEAR
    works, why = native_fusion_works(engine, method)
    return "" if works else why.removeprefix(f"{method}: ")


def check_fusion(
    engine: Engine, method: FusionMethod, scratch: Scratch | None, *, alpha: float
) -> Check:
    """Item 1 (``rrf``) or 2 (``linear``, at the configured dense weight ``alpha``)."""
    item = ITEM[method]
    why = native_why_not(engine, method)
    if why:
        return unavailable(item, why)
    if scratch is None:
        return skipped(item, f"a scratch index to compare on (native {method} runs here)")
    try:
        native, client = (
            HybridSearcher(
                engine,
                scratch.embedder,
                index=scratch.index,
                corpus_state_index=scratch.layout.corpus_state,
                fusion=mode,
                fusion_method=method,
                alpha=alpha,
            )
            for mode in _MODES
        )
        return _compare_all(item, method, scratch, native, client)
    except HybridEsError as exc:
        return failed(item, f"a search failed: {exc.message[:300]}")


def _compare_all(
    item: int, method: str, scratch: Scratch, native: HybridSearcher, client: HybridSearcher
) -> Check:
    problems: list[str] = []
    searches = hits = ties = 0
    largest = 0.0
    for caller in scratch.corpus.callers:
        for n, query in enumerate(scratch.corpus.queries, 1):
            a = native.search(query, caller, top_k=TOP_K, rerank=False, now=scratch.now)
            b = client.search(query, caller, top_k=TOP_K, rerank=False, now=scratch.now)
            searches, hits = searches + 1, hits + len(b.hits)
            where = f"{caller.tenant}, query {n}"
            if a.fusion_path != f"native-{method}":
                problems.append(f"{where}: the native search took {a.fusion_path}")
                continue
            result = compare_fusion(_ranked(a), _ranked(b), TOLERANCE)
            ties, largest = ties + result.ties, max(largest, result.largest)
            problems += [f"{where}: {p}" for p in result.problems]
    summary = (
        f"{searches} searches (2 tenants x {len(scratch.corpus.queries)} queries, top {TOP_K}), "
        f"{hits} hits; largest score difference {largest:.1e}; {ties} tie groups compared as sets"
    )
    if problems:
        return failed(item, f"native {method} differs from client {method}", [summary, *problems])
    if not hits:
        return failed(item, "inconclusive: the scratch searches found nothing", [summary])
    return passed(
        item,
        f"the same ids in the same order, fused scores within {TOLERANCE:g}, the same per-leg "
        "ranks",
        [summary],
    )


def _ranked(response: SearchResponse) -> list[Ranked]:
    return [(h.chunk_id, h.fused_score, h.sparse_rank, h.dense_rank) for h in response.hits]
