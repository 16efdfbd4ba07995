"""A searcher's fusion: the configured mode, method and dense weight, checked when the searcher
is made, and what it finds out about its engine's fusion while it searches.

``fusion_choice`` decides each search's path from these; this module holds what that decision
reads. What the engine runs natively is found once per method (set by the caller, or probed
read-only on first use, ``cluster.capabilities.native_fusion_works``) and revised at query time
when the cluster refuses what the probe allowed; OpenSearch's ``hybrid`` query refused for a user
under document-level security turns on the suggest workaround (neural-search#1303) from then on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from hybrid_es.cluster.capabilities import native_fusion_works
from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import BadQueryError, ConfigurationError
from hybrid_es.retrieval import fusion as fusion_mod

FusionMode = Literal["auto", "native", "client"]
FusionMethod = Literal["rrf", "linear"]


def checked_alpha(
    alpha: fusion_mod.Alpha, fusion: FusionMode, method: FusionMethod
) -> fusion_mod.Alpha:
    """``alpha``, the dense weight of linear fusion, once it is a weight (BadQueryError
    otherwise) that ``fusion`` can fuse with: an explicit native linear fusion takes a fixed
    weight, never the spread weight read from each query's legs (ConfigurationError)."""
    try:
        alpha = fusion_mod.check_alpha(alpha)
    except ValueError as exc:
        raise BadQueryError(f"the dense weight of linear fusion: {exc}") from None
    if fusion == "native" and method == "linear" and alpha == fusion_mod.SPREAD:
        raise ConfigurationError(
            "native linear fusion takes a fixed dense weight, and the spread weight is "
            "chosen per query from the legs' scores (client-side)",
            hint="set a number as the weight (HYBRID_ES_FUSION_ALPHA=0.4, the best fixed "
            "one) to fuse natively, or use fusion 'auto'",
        )
    return alpha


@dataclass
class FusionFindings:
    """What a searcher has found out about its engine's fusion."""

    native: dict[str, tuple[bool, str]] = field(default_factory=dict)
    """Per method (``rrf``, ``linear``): whether the engine runs it natively, and why (not)."""
    dls_suggest: bool = False
    """Set once OpenSearch refused a hybrid query for a DLS user (neural-search#1303)."""

    @classmethod
    def told(cls, native_rrf: bool | None) -> FusionFindings:
        """Nothing found yet, or (``native_rrf`` given) both methods as the caller says."""
        if native_rrf is None:
            return cls()
        return cls({m: (native_rrf, "set by the caller") for m in ("rrf", "linear")})

    def native_probe(self, client: Engine, method: str) -> tuple[bool, str]:
        """Whether ``client``'s engine runs ``method`` natively, and why (not): probed once,
        read-only (``fusion_choice.NativeProbe``)."""
        if method not in self.native:
            self.native[method] = native_fusion_works(client, method)
        return self.native[method]

    def refused(self, method: str) -> None:
        """The cluster refused ``method`` at query time: fuse it client-side from now on."""
        self.native[method] = (False, "refused at query time")
