"""The Haystack peer's document store: our chunks, copied into an index Haystack writes itself.

Runs in the peer's venv (``scripts/setup_peer.sh``: ``elasticsearch-haystack`` needs the 8.x
Elasticsearch client), inside :mod:`~benchmarks.peer_worker`; Haystack is
imported where it is used, so importing this module needs none of it.

Same chunks, same vectors: every live chunk of our evaluation tenant's index becomes one Haystack
``Document`` (id = our chunk id, ``content`` = our ``search_payload``: the extractive context
header then the chunk, ``meta.doc_id``, ``embedding`` = the vector we stored, from the same model
over the same text), written by Haystack's ``DocumentWriter`` into an
``ElasticsearchDocumentStore`` with Haystack's default mapping (``content`` a ``text`` field with
the ``standard`` analyzer, ``embedding`` a cosine ``dense_vector`` with Elasticsearch's default
index options for its dims). Nothing is re-chunked or re-embedded, so the two sides cannot drift
apart; an index already holding exactly these chunks (same count, same fingerprint) is reused.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from typing import Any

from hybrid_es.settings import Settings

BATCH = 500
"""Chunks per write."""


def open_store(index: str) -> tuple[Any, Any]:
    """An ``ElasticsearchDocumentStore`` on ``index`` (created with Haystack's default mapping when
    missing) and its client, connected by ``HYBRID_ES_*``.

    Haystack's store opens its client with ``GET /``, which the integ-test distribution does not
    serve (405). Where that fails, the store keeps the client it made, and the index is created here
    with the store's own default mapping, as the store would have done.
    """
    from elasticsearch import ApiError
    from haystack.utils import Secret
    from haystack_integrations.document_stores.elasticsearch import (  # type: ignore[import-not-found,unused-ignore]
        ElasticsearchDocumentStore,
    )

    s = Settings()
    auth: dict[str, Any] = {"request_timeout": s.request_timeout}
    if s.api_key:
        auth["api_key"] = Secret.from_token(s.api_key.get_secret_value())
    else:
        auth["api_key"] = None
        auth["api_key_id"] = None
        if s.username and s.password:
            auth["basic_auth"] = (s.username, s.password.get_secret_value())
    store = ElasticsearchDocumentStore(
        hosts=list(s.node_urls()), index=index, embedding_similarity_function="cosine", **auth
    )
    try:
        client = store.client
    except ApiError as exc:
        if exc.meta.status != 405 or store._client is None:
            raise
        client = store._client
        if not client.indices.exists(index=index):
            client.indices.create(index=index, mappings=store._default_mappings)
    return store, client


def our_chunks(client: Any, index: str, tenant: str, *, vectors: bool) -> Iterator[dict[str, Any]]:
    """Every live chunk of ``tenant`` in our ``index``, as stored (``_source``; with its
    ``embedding`` when ``vectors``), in chunk-id order."""
    from elasticsearch.helpers import scan

    fields = ["chunk_id", "doc_id", "search_payload"] + (["embedding"] if vectors else [])
    query = {
        "query": {"bool": {"filter": [{"term": {"tenant": tenant}}, {"term": {"deleted": False}}]}},
        "_source": {"includes": fields},
        "sort": [{"chunk_id": "asc"}],
    }
    for hit in scan(client, index=index, query=query, preserve_order=True, size=BATCH):
        yield hit["_source"]


def fingerprint(chunks: Iterator[dict[str, Any]]) -> tuple[int, str]:
    """(chunk count, 16 hex digits over every chunk's id and text): what a reused peer index must
    match."""
    h = hashlib.sha256()
    n = 0
    for c in chunks:
        n += 1
        h.update(f"{c['chunk_id']}\0{c['search_payload']}\0".encode())
    return n, h.hexdigest()[:16]


def index_state(client: Any, index: str) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """(document count, mapping ``_meta``, ``embedding`` field mapping) of the peer index."""
    client.indices.refresh(index=index)
    count = int(client.count(index=index)["count"])
    mapping = client.indices.get_mapping(index=index)[index]["mappings"]
    return count, mapping.get("_meta", {}), mapping.get("properties", {}).get("embedding", {})


def ensure_peer_index(index: str, source: str, tenant: str) -> tuple[Any, dict[str, Any]]:
    """The store on ``index`` holding our ``source`` index's chunks of ``tenant``, and a report
    (reused or written, how many, how long, the vectors' index options). Writes only when the
    index does not already hold exactly these chunks."""
    store, client = open_store(index)
    count, fp = fingerprint(our_chunks(client, source, tenant, vectors=False))
    if not count:
        raise SystemExit(f"{source} holds no chunks of tenant {tenant!r}: ingest the collection")
    meta = {"source_index": source, "tenant": tenant, "chunks": count, "fingerprint": fp}
    have, old_meta, _ = index_state(client, index)
    t = time.perf_counter()
    reused = have == count and old_meta == meta
    if not reused:
        if have:
            client.indices.delete(index=index)
            store.close()
            store, client = open_store(index)
        _write(store, our_chunks(client, source, tenant, vectors=True))
        client.indices.put_mapping(index=index, meta=meta)
    have, _, embedding = index_state(client, index)
    return store, {
        "name": index,
        "source_index": source,
        "reused": reused,
        "documents": have,
        "fingerprint": fp,
        "seconds": round(time.perf_counter() - t, 1),
        "vector_index_options": embedding.get("index_options", "default"),
    }


def _write(store: Any, chunks: Iterator[dict[str, Any]]) -> int:
    """Write ``chunks`` as Haystack Documents through Haystack's own writer."""
    from haystack import Document
    from haystack.components.writers import DocumentWriter
    from haystack.document_stores.types import DuplicatePolicy

    writer = DocumentWriter(store, policy=DuplicatePolicy.OVERWRITE)
    written, batch = 0, []
    for c in chunks:
        batch.append(
            Document(
                id=c["chunk_id"],
                content=c["search_payload"],
                meta={"doc_id": c["doc_id"]},
                embedding=c["embedding"],
            )
        )
        if len(batch) == BATCH:
            written += int(writer.run(batch)["documents_written"])
            batch = []
    if batch:
        written += int(writer.run(batch)["documents_written"])
    return written
