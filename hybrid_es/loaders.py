"""Reading documents from files: JSON lines, a BEIR-layout corpus, or a folder of text files.

Bad input is reported with its file and line number, never dropped silently; the rest continues
unless ``fail_fast``, which raises the first problem as IngestError. Rejected: a malformed line, a
document without tenant or id, non-UTF-8 text, an empty document, a document over
``MAX_DOCUMENT_CHARS`` characters, the same document (tenant, id, version) twice.

Formats (``load_documents`` picks one from the path when asked for ``auto``):

- ``jsonl``: a file, one :class:`~hybrid_es.documents.Document` as a JSON object per line.
- ``beir``: a folder with ``corpus.jsonl`` (``_id``, ``title``, ``text``); one tenant for all.
- ``folder``: a folder of ``.txt``/``.md`` files, searched recursively (hidden entries skipped).
  The id is the file's path under the folder (``contracts/kyo-h12.md``), the title the first
  Markdown ``#`` heading or else the file name, ``metadata.path`` the path. A sidecar
  ``<file name>.meta.json`` beside a file (``kyo-h12.md.meta.json``) holds a JSON object of any
  other Document fields (tenant, version, acl_groups, valid_from, ...; not ``body``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from hybrid_es.beir import read_corpus
from hybrid_es.code_outline import CODE_SUFFIXES
from hybrid_es.documents import MAX_DOCUMENT_BYTES, Document, validation_summary
from hybrid_es.errors import IngestError

Format = Literal["auto", "jsonl", "beir", "folder"]
TEXT_SUFFIXES = (".txt", ".md", ".markdown")
SIDECAR_SUFFIX = ".meta.json"


@dataclass
class LoadReport:
    errors: list[IngestError] = field(default_factory=list)
    documents: int = 0
    ignored_files: list[str] = field(default_factory=list)
    """Files in a folder that were not read (other suffixes); listed, not errors."""


class _Seen:
    """Rejects a second document with the same (tenant, id, version) in one load: which of the
    two is meant cannot be told, and writing both would mix their chunks."""

    def __init__(self) -> None:
        self.where: dict[tuple[str, str, int], str] = {}

    def check(self, doc: Document, here: str) -> None:
        key = (doc.tenant, doc.id, doc.version)
        if key in self.where:
            raise ValueError(
                f"document {doc.id!r} version {doc.version} of tenant {doc.tenant!r} is also at "
                f"{self.where[key]}; give it a new version or remove one"
            )
        self.where[key] = here


def _emit(
    docs: Iterable[Document | IngestError], report: LoadReport, fail_fast: bool
) -> Iterator[Document]:
    for item in docs:
        if isinstance(item, IngestError):
            if fail_fast:
                raise item
            report.errors.append(item)
        else:
            report.documents += 1
            yield item


def load_jsonl(
    path: Path, *, report: LoadReport, tenant: str | None = None, fail_fast: bool = False
) -> Iterator[Document]:
    """Documents from a JSON-lines file; ``tenant`` fills documents that name none."""
    return _emit(_jsonl_items(path, tenant), report, fail_fast)


def _jsonl_items(path: Path, tenant: str | None) -> Iterator[Document | IngestError]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc}") from exc
    seen = _Seen()
    with fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                yield IngestError(
                    f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})",
                    line=n,
                    hint="re-encode the file as UTF-8",
                )
                continue
            try:
                data = json.loads(text)
                if not isinstance(data, dict):
                    raise ValueError("a line must hold a JSON object")
                if tenant and "tenant" not in data:
                    data["tenant"] = tenant
                doc = Document.model_validate(data)
                seen.check(doc, f"line {n}")
                yield doc
            except json.JSONDecodeError as exc:
                yield IngestError(f"{path}: malformed JSON: {exc.msg} (column {exc.colno})", line=n)
            except ValidationError as exc:
                yield IngestError(f"{path}: invalid document: {validation_summary(exc)}", line=n)
            except ValueError as exc:
                yield IngestError(f"{path}: {exc}", line=n)


def load_beir(
    root: Path, *, report: LoadReport, tenant: str | None, fail_fast: bool = False
) -> Iterator[Document]:
    """The documents of a BEIR corpus (``root/corpus.jsonl``), all of ``tenant``."""
    if not tenant:
        raise IngestError(
            f"{root}: a BEIR corpus names no tenant", hint="pass --tenant for its documents"
        )
    errors: list[IngestError] = []

    def items() -> Iterator[Document | IngestError]:
        for doc in read_corpus(root, tenant=tenant, errors=errors):
            yield from _drain(errors)
            yield doc
        yield from _drain(errors)

    return _emit(items(), report, fail_fast)


def _drain(errors: list[IngestError]) -> Iterator[IngestError]:
    while errors:
        yield errors.pop(0)


def load_folder(
    root: Path,
    *,
    report: LoadReport,
    tenant: str | None = None,
    fail_fast: bool = False,
    suffixes: Iterable[str] = TEXT_SUFFIXES,
) -> Iterator[Document]:
    """Documents from the files under ``root`` with one of ``suffixes``, in path order;
    ``tenant`` fills documents whose sidecar names none."""
    if not root.is_dir():
        raise IngestError(f"{root} is not a folder")
    wanted = tuple(s.lower() for s in suffixes)
    files: list[Path] = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or not p.is_file():
            continue
        if p.name.endswith(SIDECAR_SUFFIX):
            if not p.with_name(p.name[: -len(SIDECAR_SUFFIX)]).is_file():
                report.errors.append(
                    IngestError(f"{p}: sidecar without its file {p.name[: -len(SIDECAR_SUFFIX)]}")
                )
            continue
        if p.suffix.lower() in wanted:
            files.append(p)
        else:
            report.ignored_files.append(rel.as_posix())
    seen = _Seen()
    return _emit((_folder_item(root, p, tenant, seen) for p in files), report, fail_fast)


def _folder_item(root: Path, path: Path, tenant: str | None, seen: _Seen) -> Document | IngestError:
    rel = path.relative_to(root).as_posix()
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            return IngestError(
                f"{path}: {size} bytes, over the {MAX_DOCUMENT_BYTES}-byte limit for one document",
                hint="split it into several documents",
            )
        raw = path.read_bytes()
    except OSError as exc:
        return IngestError(f"cannot read {path}: {exc}")
    try:
        body = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return IngestError(
            f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})",
            hint="re-encode the file as UTF-8",
        )
    meta: dict[str, Any] = {}
    sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
    if sidecar.is_file():
        try:
            loaded = json.loads(sidecar.read_bytes().decode("utf-8-sig"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            return IngestError(f"{sidecar}: not a readable UTF-8 JSON object: {exc}")
        if not isinstance(loaded, dict):
            return IngestError(f"{sidecar}: must hold a JSON object of Document fields")
        if "body" in loaded:
            return IngestError(f"{sidecar}: must not set body; the body is the file {path.name}")
        meta = loaded
    data: dict[str, Any] = {
        "id": rel,
        "title": _title(body, path),
        "source_type": "code" if path.suffix.lower() in CODE_SUFFIXES else "document",
        **meta,
        "body": body,
        "metadata": {"path": rel, **(meta.get("metadata") or {})},
    }
    if tenant and "tenant" not in data:
        data["tenant"] = tenant
    try:
        doc = Document.model_validate(data)
        seen.check(doc, str(path))
    except ValidationError as exc:
        hint = "pass --tenant, or set tenant in the sidecar" if "tenant" not in data else None
        return IngestError(f"{path}: invalid document: {validation_summary(exc)}", hint=hint)
    except ValueError as exc:
        return IngestError(f"{path}: {exc}")
    return doc


def _title(body: str, path: Path) -> str:
    if path.suffix.lower() in (".md", ".markdown"):
        for line in body.splitlines()[:50]:
            if line.startswith("# "):
                return line[2:].strip().strip("#").strip()
    return path.stem


def detect_format(path: Path) -> Literal["jsonl", "beir", "folder"]:
    """``beir`` for a folder holding corpus.jsonl, ``folder`` for another folder, else ``jsonl``."""
    if path.is_dir():
        return "beir" if (path / "corpus.jsonl").is_file() else "folder"
    return "jsonl"


def load_documents(
    path: Path,
    *,
    report: LoadReport,
    format: Format = "auto",
    tenant: str | None = None,
    fail_fast: bool = False,
    suffixes: Iterable[str] = TEXT_SUFFIXES,
) -> Iterator[Document]:
    """Documents from ``path`` in the given (or detected) format. Raises IngestError when the
    path itself cannot be read or does not fit the format."""
    if not path.exists():
        raise IngestError(f"{path} does not exist")
    fmt = detect_format(path) if format == "auto" else format
    if fmt == "jsonl":
        if path.is_dir():
            raise IngestError(f"{path} is a folder, not a JSONL file", hint="use --format folder")
        return load_jsonl(path, report=report, tenant=tenant, fail_fast=fail_fast)
    if fmt == "beir":
        return load_beir(path, report=report, tenant=tenant, fail_fast=fail_fast)
    return load_folder(path, report=report, tenant=tenant, fail_fast=fail_fast, suffixes=suffixes)
