"""Syncing an existing index, measured: what ``scripts/bench_sync.py`` runs (issue 38), and the
legacy index that it and the tests build.

The legacy index is a plain index with a mapping and field names of its own, as a team's
existing search index would have: ``ref`` (the document id), ``headline``, ``abstract``,
``readers`` (the ACL as one comma-separated string), ``org`` (the tenant) and ``updated`` (last
modified), in two shards. :data:`LEGACY_FIELD_MAP` is what ``--map`` says to read it.

The table: one full sync of SciFact from the legacy index (every chunk embedded) against the
same collection ingested from its files (the chunks compared, and nDCG@10 of both indices on
the test queries), then a sync with nothing changed, then 1 % of the records changed and 1 %
deleted: a changes pass (embeds only the changed) and a full pass (marks exactly the deleted);
and the read alone in one slice and in ``--slices`` slices (processes), against the encoder
alone, from which the per-core figures and the projection to N machines are worked out.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.ingest.documents import Document

LEGACY_FIELD_MAP = {
    "ref": "id",
    "headline": "title",
    "abstract": "body",
    "readers": "acl_groups",
    "org": "tenant",
    "updated": "modified",
}
"""``--map`` for the legacy index: its own field names onto the document's."""
READERS = ("researchers", "staff")
"""The ACL groups of every record (``readers: "researchers, staff"``)."""
LEGACY_INDEX = {
    "settings": {"number_of_shards": 2, "number_of_replicas": 0},
    "mappings": {
        "dynamic": "strict",
        "properties": {
            "ref": {"type": "keyword"},
            "headline": {"type": "text"},
            "abstract": {"type": "text"},
            "readers": {"type": "keyword"},
            "org": {"type": "keyword"},
            "updated": {"type": "date"},
        },
    },
}
"""The legacy index's own settings and mapping (no hybrid-es template applies to it)."""
START = datetime(2026, 1, 1, tzinfo=UTC)


def legacy_record(doc: Document, *, tenant: str, updated: datetime = START) -> dict[str, Any]:
    """A document as the legacy index holds it."""
    return {
        "ref": doc.id,
        "headline": doc.title,
        "abstract": doc.body,
        "readers": ", ".join(READERS),
        "org": tenant,
        "updated": updated.isoformat(),
    }


def record_id(doc_id: str) -> str:
    """The legacy index's own ``_id`` of a record (not the document id: that is ``ref``)."""
    return f"rec-{doc_id}"


def load_legacy(
    engine: Engine,
    index: str,
    docs: Iterable[Document],
    *,
    tenant: str,
    extra: Sequence[tuple[str, dict[str, Any]]] = (),
) -> int:
    """Create ``index`` with :data:`LEGACY_INDEX` and write ``docs`` into it, the n-th last
    modified n seconds after :data:`START` (plus ``extra`` ``(_id, record)`` pairs as they are),
    refreshed; how many records."""
    engine.create_index(index, LEGACY_INDEX)
    actions = [
        {
            "_op_type": "index",
            "_index": index,
            "_id": record_id(d.id),
            "_source": legacy_record(d, tenant=tenant, updated=START + timedelta(seconds=n)),
        }
        for n, d in enumerate(docs)
    ]
    actions += [{"_op_type": "index", "_index": index, "_id": i, "_source": r} for i, r in extra]
    engine.bulk(actions, refresh="true", chunk_size=500)
    return len(actions)


def change_records(
    engine: Engine, index: str, docs: Iterable[Document], *, tenant: str, at: datetime
) -> list[str]:
    """Change the abstract of each record of ``docs`` (a sentence added) and its ``updated``,
    each record written again whole (no script: the test node has no scripting module); the
    ids."""
    ids = []
    actions = []
    for d in docs:
        rec = legacy_record(d, tenant=tenant, updated=at)
        rec["abstract"] += " Revised after review."
        actions.append(
            {"_op_type": "index", "_index": index, "_id": record_id(d.id), "_source": rec}
        )
        ids.append(d.id)
    if actions:
        engine.bulk(actions, refresh="true")
    return ids


def delete_records(engine: Engine, index: str, doc_ids: Iterable[str]) -> list[str]:
    """Delete the records of ``doc_ids`` from the legacy index; the ids."""
    ids = list(doc_ids)
    if ids:
        engine.bulk(
            [{"_op_type": "delete", "_index": index, "_id": record_id(i)} for i in ids],
            refresh="true",
        )
    return ids


def every_hundredth(ids: Sequence[str], offset: int) -> list[str]:
    """1 % of ``ids``: every hundredth, from ``offset``."""
    return list(ids[offset::100])


# -- the measured table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One measured step: what it did and how long it took."""

    step: str
    seconds: float
    read: int = 0
    written: int = 0
    unchanged: int = 0
    deleted: int = 0
    chunks: int = 0
    embedded: int = 0
    note: str = ""

    @property
    def records_per_second(self) -> float:
        return self.read / self.seconds if self.seconds else 0.0

    @property
    def chunks_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds else 0.0


def table(rows: Sequence[Row]) -> list[str]:
    """The rows as a Markdown table."""
    out = [
        "| step | read | written | unchanged | deleted | chunks embedded | seconds | "
        "records/s | chunks/s | note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        out.append(
            f"| {r.step} | {r.read:,} | {r.written:,} | {r.unchanged:,} | {r.deleted:,} | "
            f"{r.embedded:,} | {r.seconds:.1f} | {r.records_per_second:,.0f} | "
            f"{r.chunks_per_second:,.1f} | {r.note} |"
        )
    return out


def projection(
    *, per_core_chunks: float, read_records_per_s: float, chunks_per_record: float, cores: int
) -> list[str]:
    """What N machines of ``cores`` cores would sync, on paper: each core embeds
    ``per_core_chunks`` chunks a second (measured: the encoder alone on one thread), and reads
    and checks ``read_records_per_s`` records a second where nothing is to be embedded
    (measured: a full pass over a synced index, per core). A projection, not a measurement: the
    source's reads and the target's bulk writes are taken to keep up, one slice per core."""
    out = [
        "| machines | cores | slices | chunks/s (embedding) | records/s | "
        "SciFact (5,183 records) | 1M records |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for machines in (1, 2, 4, 8, 16):
        c = machines * cores
        chunks = per_core_chunks * c
        records = min(chunks / chunks_per_record, read_records_per_s * c)
        out.append(
            f"| {machines} | {c} | {c} | {chunks:,.0f} | {records:,.0f} | "
            f"{_duration(5183 / records)} | {_duration(1_000_000 / records)} |"
        )
    return out


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")


def later(minutes: int) -> datetime:
    return START + timedelta(minutes=minutes)


def now_s() -> float:
    return time.perf_counter()


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
