"""The legs of one search: the bodies sent in its ``_msearch`` and what their answers hold. Pure.

A search sends the sparse leg (unless the path is kNN alone), the dense leg (when the query was
embedded) and, where the cluster fuses, the native fusion's body over both; the dialect
(``dialects``) writes each one, with the policy filter in every leaf. The answers come back in
the order sent: the native fusion's first, then the legs by name (:func:`searches`,
:func:`leg_answers`). Which legs read only the start of a long query is decided here too
(:func:`truncated_legs`), since it follows from the legs a path runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hybrid_es.cluster.templates import RankConstantAt
from hybrid_es.models import FusionPath
from hybrid_es.retrieval.candidates import local_id
from hybrid_es.retrieval.dialects import Dialect, NativeMethod, dls_suggest
from hybrid_es.retrieval.queries import SOURCE_EXCLUDES, RetrievalParams
from hybrid_es.retrieval.stages import Prepared
from hybrid_es.text.analysis import cap_terms

Bodies = dict[str, dict[str, Any]]
"""The legs' bodies by name (``sparse``, ``dense``), in the order they are sent."""


def leg_bodies(
    dialect: Dialect,
    path: FusionPath,
    vector: Sequence[float] | None,
    req: Prepared,
    params: RetrievalParams,
    *,
    alpha: float,
    rank_constant_at: RankConstantAt = "parameters",
    dls_workaround: bool = False,
    carry_records: bool = False,
) -> tuple[Bodies, dict[str, Any] | None]:
    """The legs' bodies by name, and the native fusion's body (None on a client-side path).

    ``alpha`` is the fixed dense weight a native linear fusion takes (``fusion.fixed_alpha``);
    ``dls_workaround`` adds OpenSearch's suggest section to the native body for a user under
    document-level security (neural-search#1303, ``dialects.dls_suggest``); ``carry_records``
    has every body return the records themselves (less the embedding) instead of ids and
    scores (``head_read.legs_carry_records``)."""
    legs: Bodies = {}
    if path != "dense-only":
        legs["sparse"] = dialect.sparse_body(req.text, req.policy, params)
    if vector is not None:
        legs["dense"] = dialect.dense_body(vector, req.policy, params)
    native = None
    if path in ("native-rrf", "native-linear") and vector is not None:
        method: NativeMethod = "rrf" if path == "native-rrf" else "linear"
        native = dialect.native(
            req.text, vector, req.policy, params, method, alpha, rank_constant_at
        )
        if dls_workaround:
            native["suggest"] = dls_suggest()
    if carry_records:
        for body in [*legs.values(), *([native] if native else [])]:
            body["_source"] = {"excludes": list(SOURCE_EXCLUDES)}
    return legs, native


def searches(legs: Bodies, native: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The bodies of one ``_msearch``: the native fusion's (when there is one) first, then the
    legs in order."""
    return ([native] if native is not None else []) + list(legs.values())


@dataclass(frozen=True)
class LegAnswers:
    """What the ``_msearch`` of :func:`searches` answered: the native fusion's response (None
    when none was sent) and each leg's hits by name."""

    fused: dict[str, Any] | None
    hits: dict[str, list[dict[str, Any]]]

    @property
    def sparse(self) -> list[dict[str, Any]]:
        return self.hits.get("sparse", [])

    @property
    def dense(self) -> list[dict[str, Any]]:
        return self.hits.get("dense", [])

    def ids(self) -> dict[str, tuple[str, ...]]:
        """The tenant-local chunk ids each leg returned, in rank order (a leg not sent: none)."""
        out: dict[str, tuple[str, ...]] = {"sparse": (), "dense": ()}
        out.update({n: tuple(local_id(h) for h in hs) for n, hs in self.hits.items()})
        return out


def leg_answers(
    names: Sequence[str], responses: Sequence[dict[str, Any]], native_sent: bool
) -> LegAnswers:
    """The responses to :func:`searches` (the legs named ``names``, after the native fusion's
    when ``native_sent``) read back by leg."""
    rest = list(responses)
    fused = rest.pop(0) if native_sent else None
    hits = {n: r["hits"]["hits"] for n, r in zip(names, rest, strict=True)}
    return LegAnswers(fused, hits)


def truncated_legs(
    text: str, path: FusionPath, max_query_terms: int, embedder: object
) -> tuple[str, ...]:
    """The legs of ``path`` that read only the start of the cleaned query ``text``: ``sparse``
    past ``max_query_terms`` terms (``queries.sparse_query``), ``dense`` past the embedder's
    token window (where the embedder says so: its ``truncates``)."""
    legs: list[str] = []
    if path != "dense-only" and cap_terms(text, max_query_terms)[1]:
        legs.append("sparse")
    truncates = getattr(embedder, "truncates", None)
    if path != "bm25-only" and callable(truncates) and truncates(text):
        legs.append("dense")
    return tuple(legs)
