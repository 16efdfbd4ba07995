"""The bulk writes of an ingest: the actions a batch sends (pure builders, every id under the
tenant's key: ``hybrid_es.identity``) and one bulk pass that sends them and lists the items that
failed, with their reasons.

A pass is safe to repeat whole, and is repeated when the cluster could not be reached
(``cluster.retries.on_connection_failure``): index actions carry deterministic ids, updates set
fixed values, and a delete whose target is already gone has done its job. Items rejected with 429
are resent by the client's bulk helper (``cluster.retries.BULK_BACKOFF``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.retries import BULK_BACKOFF, on_connection_failure, unanswered
from hybrid_es.errors import translate_es_error
from hybrid_es.identity import chunk_key, local_chunk_id
from hybrid_es.ingest.batch import PreparedBatch

BULK_CHUNK = 500
"""Actions per request of the bulk helper."""
Sent = tuple[list[dict[str, Any]], float]
"""What sending a batch gives: its failed items, and the milliseconds the request took."""


def index_actions(
    records: Sequence[dict[str, Any]], vectors: Iterable[Iterable[float]], index: str, tenant: str
) -> list[dict[str, Any]]:
    """An index action per chunk record, with its vector, under the tenant's key."""
    actions = []
    for r, v in zip(records, vectors, strict=True):
        source = {**r, "embedding": [float(x) for x in v]}
        key = chunk_key(tenant, r["chunk_id"])
        actions.append({"_op_type": "index", "_index": index, "_id": key, "_source": source})
    return actions


def audit_actions(
    copies: Iterable[dict[str, Any]], index: str, tenant: str
) -> list[dict[str, Any]]:
    """An index action per audit copy (``plan.audit_copy``), under the tenant's key."""
    return [
        {
            "_op_type": "index",
            "_index": index,
            "_id": chunk_key(tenant, c["chunk_id"]),
            "_source": c,
        }
        for c in copies
    ]


def retire_actions(
    supersede: Iterable[tuple[str, dict[str, Any]]],
    deletes: Iterable[str],
    index: str,
    tenant: str,
    *,
    stamp: str,
) -> list[dict[str, Any]]:
    """The updates that close superseded chunks, then the deletes of vanished ones. Every update
    stamps ``ingested_at`` (``stamp``): a record's last write, which a rebuild's catch-up reads
    (``ingest.rebuild``)."""
    return [
        *(
            {
                "_op_type": "update",
                "_index": index,
                "_id": chunk_key(tenant, cid),
                "doc": {**upd, "ingested_at": stamp},
            }
            for cid, upd in supersede
        ),
        *(
            {"_op_type": "delete", "_index": index, "_id": chunk_key(tenant, cid)}
            for cid in deletes
        ),
    ]


def deleted_marks(keys: Iterable[str], index: str, *, stamp: str) -> list[dict[str, Any]]:
    """Updates that mark the chunks under ``keys`` deleted (kept for audit, filtered out), and
    stamp their ``ingested_at`` (``stamp``), as every write does."""
    return [
        {
            "_op_type": "update",
            "_index": index,
            "_id": k,
            "doc": {"deleted": True, "ingested_at": stamp},
        }
        for k in keys
    ]


def send_prepared(client: Engine, batch: PreparedBatch) -> Sent:
    """One ingest batch's bulk request (the write-behind's sender, on its thread): the failed
    items and the milliseconds it took."""
    t = time.perf_counter()
    failed = send_bulk(client, batch.actions)
    return failed, round((time.perf_counter() - t) * 1000.0, 3)


def send_bulk(client: Engine, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send ``actions``; the items that failed (op, id, status, reason). A request that got no
    answer, or any other error of the client, is raised translated (``hybrid_es.errors``)."""
    if not actions:
        return []
    try:
        return _send_once(client, actions)
    except Exception as exc:
        raise translate_es_error(exc, url=client.url, what="bulk indexing") from exc


@on_connection_failure
def _send_once(client: Engine, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One pass over ``actions``; the failed items.

    A request that got no answer is raised (and retried whole when the cluster could not be
    reached): elasticsearch-py's helper raises it, opensearch-py's reports it as a failure of
    every item of the chunk, with the exception, which is raised here instead."""
    failed: list[dict[str, Any]] = []
    for ok, item in client.streaming_bulk(
        actions,
        chunk_size=BULK_CHUNK,
        raise_on_error=False,
        raise_on_exception=False,
        **BULK_BACKOFF,
    ):
        if ok:
            continue
        ((op, info),) = item.items()
        exc = info.get("exception")
        if isinstance(exc, Exception) and unanswered(exc):
            raise exc
        if op == "delete" and info.get("status") == 404:
            continue
        failed.append(
            {
                "op": op,
                "id": local_chunk_id(str(info.get("_id"))),
                "status": info.get("status"),
                "reason": str(info.get("error"))[:500],
            }
        )
    return failed
