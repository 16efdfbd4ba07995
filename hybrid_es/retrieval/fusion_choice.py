"""Which fusion path a search takes, and why. Pure: what the engine can do comes in as a function.

The path (``SearchResponse.fusion_path``) follows from the evaluation pipeline, the configured
mode (``auto``, ``native``, ``client``), the method (``rrf``, ``linear``) and the dense weight
(a number, or ``spread``, which is read from the legs' scores and so always fuses client-side),
and from whether the engine runs the method natively (probed by the searcher). The reason says
which of these decided, in words a response and a trace can carry. :func:`fallback_kind` reads a
reason back as the fallback it names, for the metrics.
"""

from __future__ import annotations

from collections.abc import Callable

from hybrid_es.errors import CapabilityMissingError
from hybrid_es.models import FusionPath
from hybrid_es.retrieval.fusion import SPREAD, Alpha

NativeProbe = Callable[[str], tuple[bool, str]]
"""``method -> (runs natively, why not)``: the searcher's probe of the engine."""


def choose_path(
    pipeline: str, fusion: str, method: str, alpha: Alpha, native: NativeProbe
) -> tuple[FusionPath, str]:
    """The path and its reason; CapabilityMissingError for ``native`` on an engine without
    it. ``native`` is called only when the engine's answer matters."""
    if pipeline == "bm25":
        return "bm25-only", "BM25 leg only (evaluation pipeline)"
    if pipeline == "dense":
        return "dense-only", "kNN leg only (evaluation pipeline)"
    what = "rrf" if method == "rrf" else f"min-max linear fusion (dense weight {alpha})"
    client_path: FusionPath = "client-rrf" if method == "rrf" else "client-linear"
    native_path: FusionPath = "native-rrf" if method == "rrf" else "native-linear"
    if fusion == "client":
        return client_path, f"client-side {what} requested"
    if method == "linear" and alpha == SPREAD:
        # The weight is read from the legs' scores, which the engine's fusion cannot wait for:
        # spread fuses client-side on every engine (an explicit native is refused when the
        # searcher is made).
        return client_path, (
            "min-max linear fusion with a per-query dense weight (spread, from the legs' "
            "scores) runs client-side"
        )
    runs, why_not = native(method)
    if fusion == "native":
        if not runs:
            raise CapabilityMissingError(
                f"native {what} was requested but the cluster cannot run it: {why_not}",
                hint="use fusion='auto' or 'client' (a Basic licence, no rank-rrf module, "
                "or OpenSearch older than 2.19 or without neural-search)",
            )
        return native_path, f"native {what} requested"
    if runs:
        return native_path, f"auto: the cluster runs {what} natively"
    why = why_not.removeprefix(f"{method}: ").split("; fused client-side")[0]
    return client_path, f"auto: the cluster cannot run {what} natively ({why}), fused client-side"


def client_side(path: FusionPath) -> FusionPath:
    """The client-side path of the same method (``native-rrf`` -> ``client-rrf``)."""
    return "client-rrf" if path in ("native-rrf", "client-rrf") else "client-linear"


def per_shard(path: FusionPath, reason: str, shards: int, fusion: str) -> tuple[FusionPath, str]:
    """OpenSearch 2.19 fuses within each shard (RRF ranks and each leg's top list are per shard;
    neural-search#1718 makes them global in 3.5), so on a multi-shard index its result is not
    the fusion of the two legs. ``auto`` fuses the legs it already has client-side; an explicit
    ``native`` keeps the cluster's answer and says so."""
    if fusion == "native":
        return path, f"{reason}; fused per shard over {shards} shards (OpenSearch 2.19)"
    return client_side(path), (
        f"auto: the index has {shards} shards and OpenSearch 2.19 fuses per shard; "
        "fused client-side over the global legs"
    )


def fallback_kind(path: str, reason: str) -> str | None:
    """Why this search did not fuse as asked (one of ``telemetry.FALLBACKS``), from the reasons
    :func:`choose_path`, :func:`per_shard` and the searcher give; None when it did."""
    if path == "bm25-only" and "was not trained on" in reason:
        return "script-gate"
    if "refused at query time" in reason:
        return "native-refused"
    if "fuses per shard" in reason and path.startswith("client"):
        return "per-shard"
    if reason.startswith("auto: the cluster cannot run"):
        return "no-native"
    return None
