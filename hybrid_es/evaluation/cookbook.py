"""The Anthropic contextual-retrieval cookbook's layout (``codebase_chunks.json`` +
``evaluation_set.jsonl``): documents that bring their own chunks, and questions judged by golden
chunks. Pass@k, the cookbook's metric (the share of a question's golden chunks in the top k), is
chunk-level Recall@k, so the set evaluates like a BEIR collection whose "documents" are chunks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hybrid_es.identity import chunk_id
from hybrid_es.ingest.chunking import Chunk
from hybrid_es.ingest.documents import Document

CHUNKS_FILE = "codebase_chunks.json"
QUESTIONS_FILE = "evaluation_set.jsonl"


@dataclass
class Codebase:
    docs: list[Document]
    chunks: dict[str, list[Chunk]]
    queries: list[tuple[str, set[str]]]
    """(question, golden chunk ids)."""

    def as_judged(self) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
        """(queries, qrels) keyed ``cb-0001``... with gain 1 for every golden chunk."""
        queries = {f"cb-{i:04d}": q for i, (q, _) in enumerate(self.queries, 1)}
        qrels = {f"cb-{i:04d}": dict.fromkeys(g, 1) for i, (_, g) in enumerate(self.queries, 1)}
        return queries, qrels


def is_cookbook(root: Path) -> bool:
    return (root / CHUNKS_FILE).is_file() and (root / QUESTIONS_FILE).is_file()


def load_codebase(root: Path, *, tenant: str) -> Codebase:
    """Read the set; chunk ids are those the ingest writes (version 1, the cookbook's index)."""
    data = json.loads((root / CHUNKS_FILE).read_text(encoding="utf-8"))
    docs: list[Document] = []
    chunks: dict[str, list[Chunk]] = {}
    by_uuid: dict[str, str] = {}
    for d in data:
        doc = Document(
            id=d["doc_id"],
            tenant=tenant,
            body=d["content"],
            source_type="code",
            metadata={"uuid": d["original_uuid"]},
        )
        docs.append(doc)
        by_uuid[d["original_uuid"]] = doc.id
        cursor = 0
        out = []
        for c in d["chunks"]:
            start = doc.body.find(c["content"], cursor)
            out.append(
                Chunk(int(c["original_index"]), c["content"], (), start if start >= 0 else None)
            )
            cursor = max(cursor, start)
        chunks[doc.id] = out
    queries = []
    for line in (root / QUESTIONS_FILE).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            golden = {chunk_id(by_uuid[u], 1, int(i)) for u, i in row["golden_chunk_uuids"]}
            queries.append((row["query"], golden))
    return Codebase(docs, chunks, queries)
