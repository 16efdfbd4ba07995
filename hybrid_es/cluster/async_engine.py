"""The engine seam's async half: the search's hot path (one ``_msearch``) on the async client of
either engine (elasticsearch-py's ``AsyncElasticsearch``, opensearch-py's ``AsyncOpenSearch``;
both need ``aiohttp``).

It serves :class:`~hybrid_es.retrieval.async_searcher.AsyncHybridSearcher`, which keeps every
other call (the first checks of a tenant, bootstrap, ingest) on the blocking
:class:`~hybrid_es.cluster.engine.Engine` it was built beside. The same guard holds: a body read
of a guarded chunks index that did not come through the policy door is refused before it is
sent (``cluster.guard``), and errors are the package's own (``errors.translate_es_error``).
"""

from __future__ import annotations

import json
from typing import Any

from hybrid_es.cluster import guard as chunks_guard
from hybrid_es.cluster.client import (
    SpanSafeAsyncElasticsearch,
    build_client,
    es_client_kwargs,
    opensearch_client_kwargs,
    orjson_serializers,
)
from hybrid_es.cluster.engine import Engine, Flavor
from hybrid_es.errors import ConfigurationError, translate_es_error
from hybrid_es.settings import Settings

NDJSON = "application/x-ndjson"


class AsyncEngine:
    """``_msearch`` over an async client. Build one with :func:`async_engine_for`; close it with
    :meth:`close` (the client's connection pool) from the loop that used it."""

    def __init__(self, raw: Any, flavor: Flavor, *, url: str = "") -> None:
        self.raw = raw
        self.flavor: Flavor = flavor
        self.url = url
        self.guarded: tuple[str, ...] = ()
        self.guarded_traces: tuple[str, ...] = ()

    def guard(self, *chunks_bases: str) -> None:
        """As :meth:`Engine.guard`: body reads of these chunks indices only through the door."""
        self.guarded = tuple(dict.fromkeys((*self.guarded, *(b for b in chunks_bases if b))))

    def guard_traces(self, *traces_bases: str) -> None:
        """As :meth:`Engine.guard_traces`: body reads of these traces indices only through the
        traces door."""
        bases = (*self.guarded_traces, *(b for b in traces_bases if b))
        self.guarded_traces = tuple(dict.fromkeys(bases))

    async def msearch(
        self, searches: list[dict[str, Any]], *, opaque_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Several searches in one request (header, body, ...): their responses."""
        chunks_guard.check("/_msearch", self.guarded, searches)
        chunks_guard.check("/_msearch", self.guarded_traces, searches, door="traces")
        ndjson = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in searches)
        try:
            if self.flavor == "elasticsearch":
                client = self.raw.options(opaque_id=opaque_id) if opaque_id else self.raw
                resp = await client.msearch(searches=searches)
                body = resp.body
            else:
                headers = {"content-type": NDJSON}
                if opaque_id:
                    headers["x-opaque-id"] = opaque_id
                body = await self.raw.transport.perform_request(
                    "POST", "/_msearch", body=ndjson, headers=headers
                )
        except Exception as exc:
            raise translate_es_error(exc, url=self.url, what="search") from exc
        return list(body["responses"])

    async def close(self) -> None:
        await self.raw.close()


def async_engine_for(engine: Engine, settings: Settings) -> AsyncEngine:
    """An async engine to the cluster ``engine`` talks to (its flavour, already probed), with
    the connection settings of ``settings`` and ``engine``'s guard. Raises ConfigurationError
    when the async client cannot be built (``aiohttp`` missing, a refused option)."""
    try:
        if engine.flavor == "elasticsearch":
            kwargs = {"serializers": orjson_serializers(), **es_client_kwargs(settings)}
            raw = build_client(SpanSafeAsyncElasticsearch, kwargs, settings, "AsyncElasticsearch")
        else:
            from opensearchpy import AsyncOpenSearch

            raw = build_client(
                AsyncOpenSearch, opensearch_client_kwargs(settings), settings, "AsyncOpenSearch"
            )
    except ImportError as exc:
        raise ConfigurationError(
            f"the async {engine.name} client cannot be built: {exc}",
            hint="install aiohttp (pip install aiohttp), which both async clients need",
        ) from exc
    out = AsyncEngine(raw, engine.flavor, url=engine.url)
    out.guard(*engine.guarded)
    out.guard_traces(*engine.guarded_traces)
    return out
