"""Reading documents from files. Bad lines are reported with their line number, never dropped
silently; the rest continues unless ``fail_fast``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from hybrid_es.documents import Document
from hybrid_es.errors import IngestError


@dataclass
class LoadReport:
    errors: list[IngestError] = field(default_factory=list)


def load_jsonl(
    path: Path, *, report: LoadReport, tenant: str | None = None, fail_fast: bool = False
) -> Iterator[Document]:
    """Documents from a JSON-lines file; ``tenant`` fills documents that name none."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc}") from exc
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            err = IngestError(
                f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})",
                line=n,
                hint="re-encode the file as UTF-8",
            )
        else:
            try:
                data = json.loads(text)
                if not isinstance(data, dict):
                    raise ValueError("a line must hold a JSON object")
                if tenant and "tenant" not in data:
                    data["tenant"] = tenant
                yield Document.model_validate(data)
                continue
            except json.JSONDecodeError as exc:
                err = IngestError(f"{path}: malformed JSON: {exc.msg} (column {exc.colno})", line=n)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'document'}: {e['msg']}"
                    for e in exc.errors()
                )
                err = IngestError(f"{path}: invalid document: {problems}", line=n)
            except ValueError as exc:
                err = IngestError(f"{path}: {exc}", line=n)
        if fail_fast:
            raise err
        report.errors.append(err)
