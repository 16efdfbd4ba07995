"""Waiting out a starting shard: a 503 is retried, any other answer is raised at once."""

from __future__ import annotations

import pytest

from hybrid_es.cluster import retries
from hybrid_es.errors import EngineError


def test_a_503_is_retried_until_the_shard_answers():
    calls = []

    @retries.while_shards_start
    def read() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise EngineError("no shard available", status=503)
        return "doc"

    assert read() == "doc"
    assert len(calls) == 3


@pytest.mark.parametrize("status", [None, 400, 404, 429, 500])
def test_any_other_answer_is_raised_at_once(status):
    calls = []

    @retries.while_shards_start
    def read() -> str:
        calls.append(1)
        raise EngineError("refused", status=status)

    with pytest.raises(EngineError):
        read()
    assert len(calls) == 1
