"""Item 3: the policy filter sits inside both legs, on the cluster as well as in the bodies.

The searcher runs the phrase query (:data:`~hybrid_es.verify.corpus.PHRASE`) for the first
scratch tenant's caller, for each fusion method, through an engine that records every body it
sends. Each body must carry the caller's policy, built here independently, in every leaf
(``assert_policy`` of the engine's dialect). Then each body is sent again on its own, and no hit
of any leg (nor of the native fusion, nor of the records read) may be a record the caller must
never meet: another tenant's, a deleted one, one for another group, one under embargo, a
superseded version. The same two legs without the policy must find those records (the check is
not vacuous), and with it the caller's own record with the phrase.
"""

from __future__ import annotations

from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import HybridEsError, PolicyViolationError
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.dialects import dialect_for
from hybrid_es.retrieval.door import control_reads
from hybrid_es.retrieval.fusion import FIXED_ALPHA
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.searcher import FusionMethod, HybridSearcher
from hybrid_es.verify.corpus import PHRASE
from hybrid_es.verify.report import Check, failed, passed, skipped
from hybrid_es.verify.scratch import Scratch

ITEM = 3
NO_POLICY: dict[str, Any] = {"match_all": {}}
METHODS: tuple[FusionMethod, ...] = ("rrf", "linear")


class RecordingEngine(Engine):
    """The same cluster as ``inner``, keeping every search body the searcher sends
    (``bodies``: each ``_msearch`` body line, in order)."""

    def __init__(self, inner: Engine) -> None:
        super().__init__(inner.raw, url=inner.url, version=inner.version)
        self.flavor = inner.flavor
        self.inner = inner
        self.bodies: list[dict[str, Any]] = []

    def msearch(
        self, searches: list[dict[str, Any]], *, opaque_id: str | None = None, **params: Any
    ) -> list[dict[str, Any]]:
        self.bodies += searches[1::2]
        return super().msearch(searches, opaque_id=opaque_id, **params)

    def _send(
        self,
        method: str,
        path: str,
        params: dict[str, str],
        body: Any,
        opaque_id: str | None = None,
    ) -> Any:
        return self.inner._send(method, path, params, body, opaque_id)

    def with_options(self, *, request_timeout: float, max_retries: int) -> Engine:
        return self.inner.with_options(request_timeout=request_timeout, max_retries=max_retries)

    def _helpers(self) -> Any:
        return self.inner._helpers()


def kind_of(body: dict[str, Any]) -> str:
    """What a search body is: ``sparse``, ``dense``, ``native`` (the fused search) or
    ``records`` (the read of the fused head by key), in either engine's shape."""
    node = body.get("retriever") or body.get("query") or {}
    key = next(iter(node), "?")
    if key == "bool" and "retriever" not in body:
        filters = node["bool"].get("filter") or []
        if any(isinstance(f, dict) and "ids" in f for f in filters):
            return "records"
    return _KINDS.get(key, "native")


_KINDS = {"standard": "sparse", "bool": "sparse", "knn": "dense"}


def check_policy(engine: Engine, scratch: Scratch | None) -> Check:
    """Item 3 on the scratch records (skipped without them)."""
    if scratch is None:
        return skipped(ITEM, "scratch records outside the caller's scope")
    try:
        return _check(engine, scratch)
    except PolicyViolationError as exc:
        return failed(ITEM, f"the searcher refused its own body: {exc.message[:300]}")
    except HybridEsError as exc:
        return failed(ITEM, f"a search failed: {exc.message[:300]}")


def _check(engine: Engine, scratch: Scratch) -> Check:
    caller = scratch.corpus.callers[0]
    policy = policy_filter(caller, RequestScope(), scratch.now)
    recorder = RecordingEngine(engine)
    for method in METHODS:
        HybridSearcher(
            recorder,
            scratch.embedder,
            index=scratch.index,
            corpus_state_index=scratch.layout.corpus_state,
            fusion_method=method,
            alpha=FIXED_ALPHA,  # a fixed weight, so that a native linear body is sent and checked
        ).search(PHRASE, caller, RequestScope(), rerank=False, now=scratch.now)
    dialect = dialect_for(engine.flavor)
    problems: list[str] = []
    kinds: dict[str, int] = {}
    leaves = 0
    forbidden = scratch.forbidden()
    for body in recorder.bodies:
        kind = kind_of(body)
        kinds[kind] = kinds.get(kind, 0) + 1
        try:
            leaves += dialect.assert_policy(body, policy)
        except PolicyViolationError as exc:
            problems.append(f"a {kind} body lacks the caller's policy: {exc.message[:160]}")
            continue
        hits = _ids(engine, scratch.index, body)
        problems += [
            f"the {kind} body returned {key} ({forbidden[key]})" for key in hits if key in forbidden
        ]
        if kind == "sparse" and not scratch.visible() <= set(hits):
            problems.append("inconclusive: the sparse leg did not find the caller's own record")
    problems += [
        f"the searcher sent no {leg} leg" for leg in ("sparse", "dense") if leg not in kinds
    ]
    control = _control(engine, scratch)
    missed = sorted(k for k in scratch.with_phrase() if k not in control)
    if missed:
        problems.append(f"inconclusive: without the policy the legs did not find {missed}")
    sent = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    details = [
        f"bodies sent ({sent}) carry the caller's policy in all {leaves} leaves",
        f"without the policy the legs find {len(control & set(forbidden))} restricted records "
        f"({', '.join(sorted(set(forbidden[k] for k in control if k in forbidden)))}); with it, "
        "none",
    ]
    if problems:
        return failed(ITEM, problems[0], [*details, *problems[1:]])
    return passed(
        ITEM,
        "every body carries the policy in each leg, and no leg returns a restricted record",
        details,
    )


def _ids(engine: Engine, index: str, body: dict[str, Any]) -> list[str]:
    """The stored keys a body returns on its own (the raw results of that leg)."""
    with control_reads("verify: one leg on its own, on the scratch index"):
        resp = engine.search(index, body, what="verify: one leg on its own")
    return [str(h["_id"]) for h in resp["hits"]["hits"]]


def _control(engine: Engine, scratch: Scratch) -> set[str]:
    """What the two legs of the phrase query return without the policy."""
    dialect, params = dialect_for(engine.flavor), RetrievalParams()
    vector = [float(x) for x in scratch.embedder.embed_queries([PHRASE])[0]]
    bodies = [
        dialect.sparse_body(PHRASE, NO_POLICY, params),
        dialect.dense_body(vector, NO_POLICY, params),
    ]
    return {key for body in bodies for key in _ids(engine, scratch.index, body)}
