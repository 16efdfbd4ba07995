"""Waiting out a shard that is still starting. Pure policy, no I/O of its own.

A read (get, count, search) of an index whose primary shard has not started yet answers 503
(``no_shard_available_action_exception``, ``search_phase_execution_exception``): an index that
another writer created a moment ago, on a busy node, or a node that is recovering. That is worth
waiting for, for a bounded time; any other answer is not retried here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from tenacity import retry, retry_if_exception, stop_after_delay, wait_exponential

from hybrid_es.errors import EngineError

_F = TypeVar("_F", bound=Callable[..., Any])

SHARD_START_WAIT_S = 60
"""The longest a read waits for a starting shard before its 503 is raised."""


def shard_starting(exc: BaseException) -> bool:
    """A 503: a shard that is still starting (a busy or recovering node)."""
    return isinstance(exc, EngineError) and exc.status == 503


def while_shards_start(fn: _F) -> _F:
    """Retry ``fn`` on a 503 for up to :data:`SHARD_START_WAIT_S` seconds, backing off."""
    wrapped = retry(
        retry=retry_if_exception(shard_starting),
        stop=stop_after_delay(SHARD_START_WAIT_S),
        wait=wait_exponential(multiplier=0.2, max=5),
        reraise=True,
    )(fn)
    return cast(_F, wrapped)
