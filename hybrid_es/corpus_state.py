"""The per-tenant corpus watermark: a counter that moves on every ingest, correction, supersede
and delete. Packets record it and are refreshed when it moves.

Reads use GET, which is real-time, so writes need not wait for a refresh. Moves use optimistic
concurrency (``if_seq_no``/``if_primary_term``) and retry on conflict, so two
writers never lose an increment; no scripting module is needed.
"""

from __future__ import annotations

from datetime import UTC, datetime

from elasticsearch import ApiError, ConflictError, Elasticsearch, NotFoundError
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_random_exponential

from hybrid_es.errors import UnknownTenantError, translate_es_error


def _retryable(exc: BaseException) -> bool:
    """A lost optimistic-concurrency race, a full write queue (429) or a shard still starting
    (503, e.g. the state index another writer has just created): try again."""
    return isinstance(exc, ConflictError) or (
        isinstance(exc, ApiError) and exc.meta is not None and exc.meta.status in (429, 503)
    )


class CorpusState:
    def __init__(self, client: Elasticsearch, index: str = "hybrid-es-corpus-state") -> None:
        self.client = client
        self.index = index

    def watermark(self, tenant: str) -> int:
        """The tenant's current watermark. Raises UnknownTenantError when it has none."""
        try:
            doc = self.client.get(index=self.index, id=tenant)
        except NotFoundError as exc:
            raise UnknownTenantError(
                f"tenant {tenant!r} has no corpus state", hint="ingest documents for it first"
            ) from exc
        except Exception as exc:
            raise translate_es_error(exc, what="reading the corpus watermark") from exc
        return int(doc["_source"]["watermark"])

    def bump(self, tenant: str, change: str) -> int:
        """Move the watermark by one and return the new value.

        Raises an EngineError subclass (never a transport exception) when the cluster fails.
        """
        try:
            return self._bump(tenant, change)
        except Exception as exc:  # conflicts that outlast the retries included
            raise translate_es_error(exc, what="moving the corpus watermark") from exc

    @retry(
        retry=retry_if_exception(_retryable),
        stop=stop_after_attempt(20),
        wait=wait_random_exponential(multiplier=0.01, max=0.5),
        reraise=True,
    )
    def _bump(self, tenant: str, change: str) -> int:
        now = datetime.now(UTC).isoformat()
        try:
            doc = self.client.get(index=self.index, id=tenant)
        except NotFoundError:
            self.client.index(
                index=self.index,
                id=tenant,
                op_type="create",
                document={
                    "tenant": tenant,
                    "watermark": 1,
                    "updated_at": now,
                    "last_change": change,
                },
            )
            return 1
        value = int(doc["_source"]["watermark"]) + 1
        self.client.index(
            index=self.index,
            id=tenant,
            if_seq_no=doc["_seq_no"],
            if_primary_term=doc["_primary_term"],
            document={
                "tenant": tenant,
                "watermark": value,
                "updated_at": now,
                "last_change": change,
            },
        )
        return value
