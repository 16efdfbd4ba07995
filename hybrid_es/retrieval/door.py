"""The one door to the chunks indices: every body that reads one is checked for its policy here.

Each read names the policy its body must carry: the search policy of
``policy.policy_filter`` (the caller's ACL, validity, deletion, embargo, scope and filter), or,
for an owner's own bookkeeping (ingest's skip and delete reads, the model check, training data),
:func:`tenant_policy`, the one clause that keeps a read inside the tenant. The engine dialect's
``assert_policy`` then refuses a body in which any leaf (a ``standard`` query, a ``knn``, a
``hybrid`` sub-query) lacks that policy in its filter, before anything is sent. Only then does
the request pass (``cluster.guard.opened``): the engine refuses any body read of a guarded chunks
index that did not come this way, so a module cannot go around the door
(``tests/unit/test_door.py``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from hybrid_es.cluster.async_engine import AsyncEngine
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.guard import opened
from hybrid_es.retrieval.dialects import Dialect, dialect_for

log = logging.getLogger(__name__)


@contextlib.contextmanager
def control_reads(why: str) -> Iterator[None]:
    """Reads with no policy, for ``hybrid-es verify``'s controls only: on its scratch index of
    generated records, what the engine answers with no filter (or under a DLS credential alone),
    which is what shows that the filter, or the role, keeps records out. ``why`` is logged at
    debug level. ``tests/unit/test_door.py`` lets no module outside ``hybrid_es/verify`` use it."""
    log.debug("control read without the policy: %s", why)
    with opened():
        yield


def tenant_policy(tenant: str) -> dict[str, Any]:
    """The policy of an owner's own reads: the tenant's records, whatever their state."""
    return {"term": {"tenant": tenant}}


def tenant_body(tenant: str, *clauses: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A body reading the tenant's records that match ``clauses`` (``top``: ``size``,
    ``_source``, ...), with :func:`tenant_policy` in its filter."""
    return {"query": {"bool": {"filter": [tenant_policy(tenant), *clauses]}}, **top}


class ChunksDoor:
    """Reads of chunks indices over ``engine``, each body checked against its policy first."""

    def __init__(self, engine: Engine, dialect: Dialect | None = None) -> None:
        self.engine = engine
        self.dialect = dialect or dialect_for(engine.flavor)

    def check(self, body: dict[str, Any], policy: dict[str, Any]) -> int:
        """``assert_policy``: the number of leaves checked; PolicyViolationError when a leaf
        lacks ``policy`` or the body holds anything that could score around it."""
        return self.dialect.assert_policy(body, policy)

    def search(
        self,
        index: str,
        body: dict[str, Any],
        policy: dict[str, Any],
        *,
        what: str = "search",
        opaque_id: str | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        self.check(body, policy)
        with opened():
            return self.engine.search(index, body, what=what, opaque_id=opaque_id, **params)

    def msearch(
        self,
        searches: list[tuple[str, dict[str, Any]]],
        policy: dict[str, Any],
        *,
        opaque_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """Several ``(index, body)`` searches in one request, every body checked first."""
        lines: list[dict[str, Any]] = []
        for index, body in searches:
            self.check(body, policy)
            lines += [{"index": index}, body]
        with opened():
            return self.engine.msearch(lines, opaque_id=opaque_id)

    def count(self, index: str, query: dict[str, Any], policy: dict[str, Any]) -> int:
        self.check({"query": query}, policy)
        with opened():
            return self.engine.count(index, query)

    def size(self, index: str) -> int:
        """How many records ``index`` holds, every tenant's: a number and nothing of any record,
        the one read with no policy (the ingest's model check asks whether an index is empty
        before it trusts the template's default model)."""
        with opened():
            return self.engine.count(index)

    def scan(
        self, index: str, body: dict[str, Any], policy: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        """Every hit of ``body`` (scrolled). The door is open while a page is fetched, never
        while the caller holds a hit (a generator shares its caller's context)."""
        self.check(body, policy)
        hits = self.engine.scan(index, body)
        while True:
            with opened():
                hit = next(hits, None)
            if hit is None:
                return
            yield hit


class AsyncChunksDoor:
    """The door of an :class:`~hybrid_es.cluster.async_engine.AsyncEngine` (the async searcher's
    ``_msearch``): the same check of every body before anything is sent."""

    def __init__(self, engine: AsyncEngine, dialect: Dialect | None = None) -> None:
        self.engine = engine
        self.dialect = dialect or dialect_for(engine.flavor)

    async def msearch(
        self,
        searches: list[tuple[str, dict[str, Any]]],
        policy: dict[str, Any],
        *,
        opaque_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """Several ``(index, body)`` searches in one request, every body checked first. The
        passage is open in this task's context only (each asyncio task has its own)."""
        lines: list[dict[str, Any]] = []
        for index, body in searches:
            self.dialect.assert_policy(body, policy)
            lines += [{"index": index}, body]
        with opened():
            return await self.engine.msearch(lines, opaque_id=opaque_id)
