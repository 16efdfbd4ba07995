"""When a cluster call is tried again, and how: the package's retry policies in one place. Pure
policy, no I/O of its own.

- :func:`while_shards_start`: a read (get, count, search) of an index whose primary shard has
  not started yet answers 503 (``no_shard_available_action_exception``,
  ``search_phase_execution_exception``): an index that another writer created a moment ago, on a
  busy node, or a node that is recovering. That is worth waiting for, for a bounded time.
- :func:`on_connection_failure`: a call that got no answer because the cluster could not be
  reached (refused, unreachable) is tried again whole, a few times. Never on an answer (any
  status: the cluster decided), nor on a timeout (the cluster may still be working on it).
- :data:`BULK_BACKOFF`: the bulk helper's own back-off for items rejected with 429 (a full write
  queue), which it resends item by item.

Any other answer is raised at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from tenacity import (
    retry,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from hybrid_es.errors import (
    EngineError,
    EngineUnavailableError,
    SearchTimeoutError,
    translate_es_error,
)

_F = TypeVar("_F", bound=Callable[..., Any])

SHARD_START_WAIT_S = 60
"""The longest a read waits for a starting shard before its 503 is raised."""

CONNECT_ATTEMPTS = 4
"""How many times in all a call is sent when the cluster cannot be reached."""

BULK_BACKOFF: Final[dict[str, int]] = {"max_retries": 5, "initial_backoff": 1, "max_backoff": 30}
"""The client bulk helpers' back-off for 429-rejected items (``streaming_bulk`` keywords)."""


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


def unanswered(exc: BaseException) -> bool:
    """The request got no answer at all (refused, unreachable, timed out): an Engine's
    EngineUnavailableError, or the transport error of either client where a client helper is
    called raw (``translate_es_error`` is the one place that knows the clients' types, and
    opensearch-py, an optional extra, only when it is installed). An answer, even a 5xx, is not
    this: it carries its status."""
    err = translate_es_error(exc)
    return isinstance(err, EngineUnavailableError) and err.status is None


def unreachable(exc: BaseException) -> bool:
    """The cluster could not be reached: worth trying the whole call again. A timeout is not
    (the cluster may still be working on the request)."""
    return unanswered(exc) and not isinstance(translate_es_error(exc), SearchTimeoutError)


def on_connection_failure(fn: _F) -> _F:
    """Retry a whole call, up to :data:`CONNECT_ATTEMPTS` sends, when the cluster cannot be
    reached; never on an answer (4xx/5xx) nor a timeout. Only for calls safe to repeat whole."""
    wrapped = retry(
        retry=retry_if_exception(unreachable),
        stop=stop_after_attempt(CONNECT_ATTEMPTS),
        wait=wait_exponential(multiplier=0.5, max=8),
        reraise=True,
    )(fn)
    return cast(_F, wrapped)
