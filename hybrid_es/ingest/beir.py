"""Reading a BEIR-layout collection (corpus, queries, qrels) for benchmarks and evaluation.

The layout (https://github.com/beir-cellar/beir)::

    <root>/corpus.jsonl        {"_id": ..., "title": ..., "text": ...}   one per line
    <root>/queries.jsonl       {"_id": ..., "text": ...}
    <root>/qrels/<split>.tsv   query-id <TAB> corpus-id <TAB> score, after one header line

Corpus entries become :class:`~hybrid_es.ingest.documents.Document` s of one tenant. Entries
with neither text nor title cannot be documents (the body may not be empty); they are counted,
not hidden.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hybrid_es.errors import IngestError
from hybrid_es.ingest.documents import Document, validation_summary
from hybrid_es.ingest.jsonlines import read_json_lines

Qrels = dict[str, dict[str, int]]
"""query id -> corpus id -> graded relevance (0 = judged not relevant)."""


def _jsonl(
    path: Path, errors: list[IngestError] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` per non-blank line. A line that cannot be read (see
    :mod:`hybrid_es.ingest.jsonlines`) or is not an object with an ``_id`` raises IngestError,
    or with ``errors`` given is appended there and skipped."""
    for n, data in read_json_lines(path):
        if not isinstance(data, IngestError) and (not isinstance(data, dict) or "_id" not in data):
            data = IngestError(f"{path}: a line must be a JSON object with an _id", line=n)
        if isinstance(data, IngestError):
            if errors is None:
                raise data
            errors.append(data)
            continue
        yield n, data


@dataclass
class CorpusReport:
    documents: int = 0
    empty: list[str] = field(default_factory=list)
    """ids of entries with neither title nor text (not turned into documents)."""


def read_corpus(
    root: Path,
    *,
    tenant: str,
    acl_groups: tuple[str, ...] | None = None,
    source_type: str = "document",
    report: CorpusReport | None = None,
    errors: list[IngestError] | None = None,
) -> Iterator[Document]:
    """The corpus as Documents: ``_id`` -> id, ``title`` -> title, ``text`` -> body.

    An entry without text but with a title uses the title as its body; one with neither is
    counted in ``report.empty``. Without ``errors`` the first bad line raises IngestError; with
    it, bad lines, empty entries and entries that are not valid documents (an over-long body)
    are appended there, each with its line number, and the rest continues.
    """
    report = report if report is not None else CorpusReport()
    path = root / "corpus.jsonl"
    for n, row in _jsonl(path, errors):
        doc_id = str(row["_id"]).strip()
        title = str(row.get("title") or "").strip()
        body = str(row.get("text") or "").strip() or title
        if not body:
            report.empty.append(doc_id)
            if errors is not None:
                errors.append(IngestError(f"{path}: document {doc_id!r} is empty", line=n))
            continue
        try:
            doc = Document(
                id=doc_id,
                tenant=tenant,
                title=title,
                body=body,
                acl_groups=acl_groups,
                source_type=source_type,
            )
        except ValidationError as exc:
            err = IngestError(
                f"{path}: invalid document {doc_id!r}: {validation_summary(exc)}", line=n
            )
            if errors is None:
                raise err from exc
            errors.append(err)
            continue
        report.documents += 1
        yield doc


def read_queries(root: Path) -> dict[str, str]:
    """query id -> query text, in file order."""
    return {
        str(row["_id"]): str(row.get("text") or "") for _, row in _jsonl(root / "queries.jsonl")
    }


def read_qrels(root: Path, split: str) -> Qrels:
    """The judgements of ``split`` (``qrels/<split>.tsv``, whose first line is a header)."""
    path = root / "qrels" / f"{split}.tsv"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc}") from exc
    qrels: Qrels = {}
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) < 3:
            raise IngestError(f"{path}: expected query-id, corpus-id, score", line=n)
        try:
            score = int(float(parts[2]))
        except ValueError as exc:
            raise IngestError(f"{path}: score {parts[2]!r} is not a number", line=n) from exc
        qrels.setdefault(parts[0].strip(), {})[parts[1].strip()] = score
    return qrels
