"""Reading documents from files: JSON lines, a BEIR-layout corpus, or a folder of text files.

Every load is for one tenant, the caller's: a document that names no tenant gets it, and one
that names another tenant is refused by line (nothing of it is written).

Bad input is reported with its file and line number, never dropped silently; the rest continues
unless ``fail_fast``, which raises the first problem as IngestError. Rejected: a line that cannot
be read as JSON (malformed; not UTF-8; over 16 MiB; nested deeper than 64 levels; NaN or
Infinity; a number out of range; a lone surrogate escape: see
:mod:`hybrid_es.ingest.jsonlines`), a document without id, a document of another tenant, an empty
document, a document over ``MAX_DOCUMENT_CHARS`` characters, the same document (id, version)
twice, a version that is not an ordering number (a label, a boolean, a fraction).

Real files rarely use our field names. A ``FieldMap`` renames fields before validation
(``--map doc_id=id``), and a version *label* such as ``contract-v4`` can be kept beside the
ordering number: map it to ``version_label``, and either map another field to ``version`` or
take the number from the label (``version_from_label``: the last number in it).

Formats (``load_documents`` picks one from the path when asked for ``auto``):

- ``jsonl``: a file, one :class:`~hybrid_es.ingest.documents.Document` as a JSON object per line.
- ``beir``: a folder with ``corpus.jsonl`` (``_id``, ``title``, ``text``); one tenant for all.
- ``folder``: a folder of ``.txt``/``.md`` files, searched recursively (hidden entries skipped).
  The id is the file's path under the folder (``contracts/kyo-h12.md``) in Unicode NFC form
  (macOS may store names decomposed; ids must be NFC), the title the first
  Markdown ``#`` heading or else the file name, ``metadata.path`` the path. A Markdown file's
  front matter (the ``---`` block at its top: :mod:`hybrid_es.ingest.front_matter`) becomes the
  document's metadata and is not part of its body; its ``title``, when it is text, is the
  document's title. Front matter never sets other Document fields (an ``acl_groups`` there is
  metadata, not an ACL). A sidecar ``<file name>.meta.json`` beside a file
  (``kyo-h12.md.meta.json``) holds a JSON object of any other Document fields (tenant, version,
  acl_groups, valid_from, ...; not ``body``); its ``metadata`` keys win over the front matter's,
  and ``path`` over both only where the sidecar sets it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from hybrid_es.errors import IngestError
from hybrid_es.ingest.beir import read_corpus
from hybrid_es.ingest.code_outline import CODE_SUFFIXES
from hybrid_es.ingest.documents import MAX_DOCUMENT_BYTES, Document, validation_summary
from hybrid_es.ingest.front_matter import split_front_matter
from hybrid_es.ingest.jsonlines import (
    MAX_LINE_BYTES,
    describe_json_error,
    parse_json,
    read_json_lines,
)

Format = Literal["auto", "jsonl", "beir", "folder"]
TEXT_SUFFIXES = (".txt", ".md", ".markdown")
SIDECAR_SUFFIX = ".meta.json"


@dataclass(frozen=True)
class LoadOptions:
    """How raw records become documents: the caller's tenant, field renames, version labels."""

    tenant: str
    field_map: Mapping[str, str] = field(default_factory=dict)
    """source field -> Document field, applied before validation."""
    version_from_label: bool = False
    """Take ``version`` from the last number in ``version_label`` when the record has none."""


def read_field_map(
    pairs: Iterable[str] = (), file: Path | None = None, *, extra: Iterable[str] = ()
) -> dict[str, str]:
    """A field map from ``SRC=DST`` pairs and/or a JSON file holding ``{"SRC": "DST"}``; pairs
    win over the file. A target is a Document field, or one of ``extra`` (``KEY.*`` admits every
    ``KEY.<name>``: an index source's ``metadata.team``, ``ingest.source_mapping``). Raises
    ValueError naming the bad entry."""
    out: dict[str, str] = {}
    if file is not None:
        try:
            loaded = parse_json(file.read_bytes().decode("utf-8-sig"))
        except OSError as exc:
            raise ValueError(f"{file}: not a readable JSON object: {exc}") from exc
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError among them
            raise ValueError(
                f"{file}: not a readable JSON object: {describe_json_error(exc)}"
            ) from exc
        if not isinstance(loaded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
        ):
            raise ValueError(f'{file}: must hold one JSON object of "source": "target" names')
        out.update(loaded)
    for pair in pairs:
        src, sep, dst = pair.partition("=")
        if not sep or not src.strip() or not dst.strip():
            raise ValueError(f"{pair!r} is not SOURCE=TARGET (e.g. doc_id=id)")
        out[src.strip()] = dst.strip()
    extra = tuple(extra)
    prefixes = tuple(e[:-1] for e in extra if e.endswith(".*"))
    known = set(Document.model_fields) | {e for e in extra if not e.endswith(".*")}
    unknown = sorted(t for t in set(out.values()) - known if not t.startswith(prefixes))
    if unknown:
        also = f"; or {', '.join(extra)}" if extra else ""
        raise ValueError(
            f"unknown target field(s) {', '.join(unknown)}; a target must be a document field "
            f"({', '.join(sorted(Document.model_fields))}){also}"
        )
    return out


_LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")


def prepare_record(data: dict[str, Any], options: LoadOptions) -> dict[str, Any]:
    """A raw record renamed, confined to the caller's tenant and given an ordering version.
    Raises ValueError saying what is wrong and how to fix it. Pure."""
    out = dict(data)
    for src, dst in options.field_map.items():
        if src in out and src != dst:
            if dst in out:
                raise ValueError(
                    f"both {src!r} and {dst!r} are present; --map {src}={dst} would "
                    f"overwrite {dst!r}"
                )
            out[dst] = out.pop(src)
    named = out.get("tenant")
    if named is None:
        out["tenant"] = options.tenant
    elif named != options.tenant:
        raise ValueError(
            f"the document names tenant {named!r}, but this ingest writes for tenant "
            f"{options.tenant!r}; nothing of it is written (ingest it as that tenant, or remove "
            "its tenant field)"
        )
    version = out.get("version")
    if isinstance(version, str) and not version.strip().isdigit():
        raise ValueError(
            f"version {version!r} is a label, not an ordering number: keep it with "
            "--map version=version_label, and give the order with --version-from-label (the "
            "last number in the label) or by mapping a numeric field to version"
        )
    if options.version_from_label and version is None and out.get("version_label") is not None:
        label = str(out["version_label"])
        m = _LAST_NUMBER.search(label)
        if m is None:
            raise ValueError(
                f"version label {label!r} holds no number to order versions by; give version"
            )
        out["version"] = int(m.group(1))
    return out


@dataclass
class LoadReport:
    errors: list[IngestError] = field(default_factory=list)
    documents: int = 0
    ignored_files: list[str] = field(default_factory=list)
    """Files in a folder that were not read (other suffixes); listed, not errors."""


class _Seen:
    """Rejects a second document with the same (id, version) in one load: which of the two is
    meant cannot be told, and writing both would mix their chunks."""

    def __init__(self) -> None:
        self.where: dict[tuple[str, str, int], str] = {}

    def check(self, doc: Document, here: str) -> None:
        key = (doc.tenant, doc.id, doc.version)
        if key in self.where:
            raise ValueError(
                f"document {doc.id!r} version {doc.version} is also at "
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
    path: Path, *, report: LoadReport, options: LoadOptions, fail_fast: bool = False
) -> Iterator[Document]:
    """Documents from a JSON-lines file, for ``options.tenant``."""
    return _emit(_jsonl_items(path, options), report, fail_fast)


def _jsonl_items(path: Path, options: LoadOptions) -> Iterator[Document | IngestError]:
    """Each line's Document, or the IngestError (with its line number) that refuses it."""
    seen = _Seen()
    for n, data in read_json_lines(path):
        if isinstance(data, IngestError):  # a line that is not readable JSON
            yield data
            continue
        try:
            if not isinstance(data, dict):
                raise ValueError("a line must hold a JSON object")
            doc = Document.model_validate(prepare_record(data, options))
            seen.check(doc, f"line {n}")
            yield doc
        except ValidationError as exc:
            yield IngestError(f"{path}: invalid document: {validation_summary(exc)}", line=n)
        except ValueError as exc:
            yield IngestError(f"{path}: {exc}", line=n)


def load_beir(
    root: Path, *, report: LoadReport, options: LoadOptions, fail_fast: bool = False
) -> Iterator[Document]:
    """The documents of a BEIR corpus (``root/corpus.jsonl``), all of ``options.tenant``."""
    errors: list[IngestError] = []

    def items() -> Iterator[Document | IngestError]:
        for doc in read_corpus(root, tenant=options.tenant, errors=errors):
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
    options: LoadOptions,
    fail_fast: bool = False,
    suffixes: Iterable[str] = TEXT_SUFFIXES,
) -> Iterator[Document]:
    """Documents from the files under ``root`` with one of ``suffixes``, in path order, for
    ``options.tenant`` (a sidecar's fields go through the same field map)."""
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
    return _emit((_folder_item(root, p, options, seen) for p in files), report, fail_fast)


def _folder_item(
    root: Path, path: Path, options: LoadOptions, seen: _Seen
) -> Document | IngestError:
    rel = path.relative_to(root).as_posix()
    doc_id = unicodedata.normalize("NFC", rel)
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
            if sidecar.stat().st_size > MAX_LINE_BYTES:
                return IngestError(
                    f"{sidecar}: over the {MAX_LINE_BYTES:,}-byte limit for a sidecar",
                    hint="a sidecar holds a document's fields, not its text",
                )
            loaded = parse_json(sidecar.read_bytes().decode("utf-8-sig"))
        except OSError as exc:
            return IngestError(f"{sidecar}: not a readable UTF-8 JSON object: {exc}")
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError among them
            return IngestError(
                f"{sidecar}: not a readable UTF-8 JSON object: {describe_json_error(exc)}"
            )
        if not isinstance(loaded, dict):
            return IngestError(f"{sidecar}: must hold a JSON object of Document fields")
        if "body" in loaded:
            return IngestError(f"{sidecar}: must not set body; the body is the file {path.name}")
        meta = loaded
    sidecar_metadata = meta.get("metadata") or {}
    if not isinstance(sidecar_metadata, dict):
        return IngestError(f"{sidecar}: metadata must be a JSON object")
    front: dict[str, Any] = {}
    if path.suffix.lower() in (".md", ".markdown"):
        try:
            found, body = split_front_matter(body)
        except ValueError as exc:
            return IngestError(f"{path}: {exc}")
        front = found or {}
    front_title = front.get("title")
    data: dict[str, Any] = {
        "id": doc_id,
        "title": front_title.strip()
        if isinstance(front_title, str) and front_title.strip()
        else _title(body, path),
        "source_type": "code" if path.suffix.lower() in CODE_SUFFIXES else "document",
        **meta,
        "body": body,
        "metadata": {**front, "path": rel, **sidecar_metadata},
    }
    try:
        doc = Document.model_validate(prepare_record(data, options))
        seen.check(doc, str(path))
    except ValidationError as exc:
        return IngestError(f"{path}: invalid document: {validation_summary(exc)}")
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
    options: LoadOptions,
    format: Format = "auto",
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
        return load_jsonl(path, report=report, options=options, fail_fast=fail_fast)
    if fmt == "beir":
        return load_beir(path, report=report, options=options, fail_fast=fail_fast)
    return load_folder(path, report=report, options=options, fail_fast=fail_fast, suffixes=suffixes)
