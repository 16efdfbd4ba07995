"""The fusion path a search takes and why (``retrieval.fusion``), and the checks on its
``_msearch`` answers (``retrieval.answers``): pure, so every case is spelled out here."""

from __future__ import annotations

from typing import Any

import pytest

from hybrid_es.errors import (
    BadQueryError,
    CapabilityMissingError,
    HybridEsError,
    SearchTimeoutError,
)
from hybrid_es.retrieval.answers import HybridUnderDls, check_answers, sent_digest
from hybrid_es.retrieval.fusion import choose_path, client_side, fallback_kind, per_shard

YES = lambda method: (True, "")  # noqa: E731
NO = lambda method: (False, f"{method}: Basic licence; fused client-side")  # noqa: E731


def never(method: str) -> tuple[bool, str]:
    raise AssertionError("the engine need not be asked")


@pytest.mark.parametrize(
    ("pipeline", "fusion", "method", "alpha", "native", "path"),
    [
        ("bm25", "native", "rrf", 0.4, never, "bm25-only"),
        ("dense", "auto", "linear", "spread", never, "dense-only"),
        ("hybrid", "client", "rrf", 0.4, never, "client-rrf"),
        ("hybrid", "auto", "linear", "spread", never, "client-linear"),
        ("hybrid", "client", "linear", "spread", never, "client-linear"),
        ("hybrid", "auto", "linear", 0.4, YES, "native-linear"),
        ("hybrid", "auto", "linear", 0.4, NO, "client-linear"),
        ("hybrid", "auto", "rrf", "spread", YES, "native-rrf"),  # the weight is linear's only
        ("hybrid", "native", "rrf", 0.4, YES, "native-rrf"),
    ],
)
def test_the_path_follows_pipeline_mode_method_weight_and_engine(
    pipeline: str, fusion: str, method: str, alpha: Any, native: Any, path: str
) -> None:
    assert choose_path(pipeline, fusion, method, alpha, native)[0] == path


def test_each_reason_says_what_decided() -> None:
    assert (
        "per-query dense weight (spread"
        in choose_path("hybrid", "auto", "linear", "spread", never)[1]
    )
    path, reason = choose_path("hybrid", "auto", "linear", 0.4, NO)
    assert reason == (
        "auto: the cluster cannot run min-max linear fusion (dense weight 0.4) natively "
        "(Basic licence), fused client-side"
    )
    assert fallback_kind(path, reason) == "no-native"
    for spread_path, spread_reason in [choose_path("hybrid", "auto", "linear", "spread", never)]:
        assert fallback_kind(spread_path, spread_reason) is None  # a design choice, not a fallback
    with pytest.raises(CapabilityMissingError, match="Basic licence"):
        choose_path("hybrid", "native", "rrf", 0.4, NO)


def test_per_shard_fusion_falls_back_under_auto_and_is_kept_under_native() -> None:
    path, reason = per_shard("native-rrf", "auto: runs natively", 3, "auto")
    assert path == "client-rrf" and fallback_kind(path, reason) == "per-shard"
    path, reason = per_shard("native-linear", "native asked", 3, "native")
    assert path == "native-linear" and "fused per shard over 3 shards" in reason
    assert (
        client_side("native-linear") == "client-linear"
        and client_side("client-rrf") == "client-rrf"
    )
    assert fallback_kind("bm25-only", "the embedder x was not trained on cjk text") == "script-gate"


def _error(reason: str, status: int = 400) -> dict[str, Any]:
    return {"status": status, "error": {"type": "x", "reason": reason}}


def test_an_answer_that_is_not_whole_is_raised() -> None:
    check_answers([{"hits": {"hits": []}, "_shards": {"failed": 0}}], url="u", dls_suggest=False)
    with pytest.raises(BadQueryError, match="more clauses than the cluster allows"):
        check_answers(
            [_error("too_many_clauses: maxClauseCount is set to 1024")], url="u", dls_suggest=False
        )
    with pytest.raises(SearchTimeoutError):
        check_answers([{"timed_out": True}], url="u", dls_suggest=False)
    with pytest.raises(HybridEsError, match="2 shard"):
        check_answers([{"_shards": {"failed": 2}}], url="u", dls_suggest=False)
    with pytest.raises(HybridEsError):
        check_answers([_error("something else")], url="u", dls_suggest=False)


def test_the_digest_is_keyed_and_follows_the_bodies() -> None:
    pairs = [("i", {"query": {"match_all": {}}})]
    assert sent_digest(b"k", pairs) == sent_digest(b"k", [("i", {"query": {"match_all": {}}})])
    assert sent_digest(b"k", pairs) != sent_digest(b"other", pairs)
    assert sent_digest(b"k", pairs) != sent_digest(b"k", [("j", {"query": {"match_all": {}}})])
    assert len(sent_digest(b"k", pairs)) == 64
    assert issubclass(HybridUnderDls, Exception)
