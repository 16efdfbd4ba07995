"""A search as a sequence of effects, run blocking or awaited: the one search core of
:class:`~hybrid_es.retrieval.searcher.HybridSearcher` and
:class:`~hybrid_es.retrieval.async_searcher.AsyncHybridSearcher`.

The searcher's stages are generators (``HybridSearcher.search_steps``). Where a stage needs the
cluster it yields :class:`Msearch` (bodies for one ``_msearch``, sent through the chunks door);
where it needs the CPU for long (loading or running a model, the first checks of a tenant) it
yields :class:`Compute`. Everything else (fusion, the policy re-check, assembly, the telemetry
spans) runs inside the generator itself. :func:`run` carries the effects out in the calling
thread; :func:`arun` awaits the ``_msearch`` on an async client and runs the computations in a
worker thread, so the event loop is never blocked by a model. The decisions are the same code
either way: only the I/O differs.

An exception raised by an effect is thrown into the generator at the ``yield`` that asked for
it, so a stage handles its own failures (a native fusion refused at query time, OpenSearch's
hybrid query refused for a DLS user) as it would around a plain call.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from hybrid_es.retrieval.stages import Prepared

T = TypeVar("T")


@dataclass(frozen=True)
class Msearch:
    """Send ``searches`` (bodies for ``req.index``, each checked against ``req.policy`` by the
    door) in one ``_msearch``; the result is ``(responses, digest)``."""

    searches: list[dict[str, Any]]
    req: Prepared


@dataclass(frozen=True)
class Compute:
    """Run ``fn`` (a model, or the blocking first checks of a tenant); the result is its value."""

    fn: Callable[[], Any]


Effect = Msearch | Compute
Steps = Generator[Effect, Any, T]


def run(steps: Steps[T], msearch: Callable[[Msearch], Any]) -> T:
    """Carry out ``steps`` blocking, in the calling thread; the generator's return value."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = steps.throw(error) if error is not None else steps.send(result)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        result, error = None, None
        try:
            result = msearch(effect) if isinstance(effect, Msearch) else effect.fn()
        except BaseException as exc:
            error = exc


async def arun(
    steps: Steps[T],
    msearch: Callable[[Msearch], Awaitable[Any]],
    executor: Executor | None = None,
) -> T:
    """Carry out ``steps`` on the event loop: ``_msearch`` awaited, computations in a worker
    thread of ``executor`` (default: the loop's own pool), in a copy of the caller's context;
    the generator's return value."""
    loop = asyncio.get_running_loop()
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = steps.throw(error) if error is not None else steps.send(result)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        result, error = None, None
        try:
            if isinstance(effect, Msearch):
                result = await msearch(effect)
            else:
                context = contextvars.copy_context()
                result = await loop.run_in_executor(executor, context.run, effect.fn)
        except BaseException as exc:
            error = exc
