"""Loaders: JSONL, BEIR and folders of text files; every bad input reported with where it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_es import loaders
from hybrid_es.errors import IngestError
from hybrid_es.loaders import LoadReport, detect_format, load_documents, load_folder, load_jsonl


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    _write(
        root / "contracts" / "kyo-h12.md", "# Supplier contract KYO-H12\n\nApril rate JPY 31,500."
    )
    _write(
        root / "contracts" / "kyo-h12.md.meta.json",
        json.dumps({"version": 3, "acl_groups": ["travel-agents"], "contract_ids": ["KYO-H12"]}),
    )
    _write(root / "notes.txt", "Step-free route from the lobby.")
    _write(root / ".hidden" / "secret.md", "not read")
    _write(root / "image.png", b"\x89PNG")
    _write(root / "tool.py", "def rate():\n    return 31500\n")
    return root


def test_folder_documents_take_id_title_and_path_from_the_file(tmp_path):
    report = LoadReport()
    docs = list(load_folder(_folder(tmp_path), report=report, tenant="demo-A"))
    assert [d.id for d in docs] == ["contracts/kyo-h12.md", "notes.txt"]
    contract, note = docs
    assert contract.title == "Supplier contract KYO-H12"
    assert (contract.version, contract.acl_groups, contract.contract_ids) == (
        3,
        ("travel-agents",),
        ("KYO-H12",),
    )
    assert contract.metadata == {"path": "contracts/kyo-h12.md"}
    assert (note.title, note.tenant, note.source_type) == ("notes", "demo-A", "document")
    assert report.errors == [] and report.documents == 2
    assert report.ignored_files == ["image.png", "tool.py"]  # listed, not read, not errors


def test_folder_reads_code_files_when_asked_and_marks_them_code(tmp_path):
    report = LoadReport()
    docs = list(
        load_folder(_folder(tmp_path), report=report, tenant="t", suffixes=(".md", ".txt", ".py"))
    )
    code = next(d for d in docs if d.id == "tool.py")
    assert code.source_type == "code" and code.metadata["path"] == "tool.py"


def test_folder_sidecar_tenant_wins_and_missing_tenant_is_rejected_with_a_hint(tmp_path):
    root = tmp_path / "d"
    _write(root / "a.md", "text a.")
    _write(root / "a.md.meta.json", '{"tenant": "demo-B"}')
    _write(root / "b.md", "text b.")
    report = LoadReport()
    docs = list(load_folder(root, report=report))
    assert [(d.id, d.tenant) for d in docs] == [("a.md", "demo-B")]
    (err,) = report.errors
    assert "b.md" in str(err) and "tenant" in str(err) and "pass --tenant" in str(err)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"bad.md": b"caf\xe9 latin-1"}, "bad.md: not UTF-8"),
        (
            {"empty.md": "  \n\n"},
            "empty.md: invalid document: body: Value error, the document body is empty",
        ),
        ({"a.md": "x.", "a.md.meta.json": '{"body": "other"}'}, "must not set body"),
        ({"a.md": "x.", "a.md.meta.json": "{nope"}, "a.md.meta.json: not a readable UTF-8 JSON"),
        ({"a.md": "x.", "a.md.meta.json": "[1]"}, "must hold a JSON object"),
        ({"a.md": "x.", "a.md.meta.json": '{"colour": "red"}'}, "colour: Extra inputs"),
        ({"gone.md.meta.json": "{}"}, "sidecar without its file gone.md"),
    ],
)
def test_folder_bad_input_names_the_file_and_the_problem(tmp_path, files, expected):
    root = tmp_path / "d"
    for name, data in files.items():
        _write(root / name, data)
    report = LoadReport()
    assert list(load_folder(root, report=report, tenant="t")) == []
    assert len(report.errors) == 1 and expected in str(report.errors[0])


def test_folder_refuses_an_over_large_file_before_reading_it(tmp_path, monkeypatch):
    monkeypatch.setattr(loaders, "MAX_DOCUMENT_BYTES", 10)
    root = tmp_path / "d"
    _write(root / "big.txt", "x" * 11)
    report = LoadReport()
    assert list(load_folder(root, report=report, tenant="t")) == []
    assert "big.txt: 11 bytes, over the 10-byte limit" in str(report.errors[0])


def test_fail_fast_raises_the_first_problem(tmp_path):
    root = tmp_path / "d"
    _write(root / "a.md", b"\xff")
    _write(root / "b.md", "fine.")
    with pytest.raises(IngestError, match=r"a\.md: not UTF-8"):
        list(load_folder(root, report=LoadReport(), tenant="t", fail_fast=True))


def test_jsonl_rejects_the_same_document_twice_but_not_a_new_version(tmp_path):
    rows = [
        {"id": "K", "tenant": "t", "body": "v1.", "version": 1},
        {"id": "K", "tenant": "t", "body": "v2.", "version": 2},
        {"id": "K", "tenant": "t", "body": "v2 again.", "version": 2},
        {"id": "K", "tenant": "u", "body": "other tenant.", "version": 2},
    ]
    path = _write(tmp_path / "d.jsonl", "\n".join(json.dumps(r) for r in rows))
    report = LoadReport()
    docs = list(load_jsonl(path, report=report))
    assert [(d.tenant, d.version) for d in docs] == [("t", 1), ("t", 2), ("u", 2)]
    (err,) = report.errors
    assert err.line == 3 and "also at line 2" in str(err)


def test_jsonl_accepts_a_byte_order_mark_and_fills_the_tenant(tmp_path):
    path = _write(tmp_path / "d.jsonl", b'\xef\xbb\xbf{"id": "a", "body": "text."}\n')
    (doc,) = load_jsonl(path, report=LoadReport(), tenant="t")
    assert (doc.id, doc.tenant) == ("a", "t")


def test_jsonl_refuses_a_body_over_the_documented_limit(tmp_path, monkeypatch):
    from hybrid_es import documents

    monkeypatch.setattr(documents, "MAX_DOCUMENT_CHARS", 20)
    path = _write(tmp_path / "d.jsonl", json.dumps({"id": "a", "tenant": "t", "body": "y" * 21}))
    report = LoadReport()
    assert list(load_jsonl(path, report=report)) == []
    assert "the body has 21 characters; the limit is 20" in str(report.errors[0])


def test_jsonl_without_id_is_rejected(tmp_path):
    path = _write(tmp_path / "d.jsonl", json.dumps({"tenant": "t", "body": "b."}))
    report = LoadReport()
    assert list(load_jsonl(path, report=report)) == []
    assert "line 1" in str(report.errors[0]) and "id: Field required" in str(report.errors[0])


def _beir(tmp_path: Path) -> Path:
    root = tmp_path / "beir"
    _write(
        root / "corpus.jsonl",
        "\n".join(
            [
                json.dumps({"_id": "1", "title": "T1", "text": "first abstract."}),
                "{broken",
                json.dumps({"_id": "2", "title": "", "text": ""}),
                json.dumps({"title": "no id"}),
                json.dumps({"_id": 3, "title": "Only a title"}),
            ]
        ),
    )
    return root


def test_beir_corpus_reports_bad_lines_and_empty_entries_and_continues(tmp_path):
    report = LoadReport()
    docs = list(load_documents(_beir(tmp_path), report=report, tenant="bench"))
    assert [(d.id, d.body, d.tenant) for d in docs] == [
        ("1", "first abstract.", "bench"),
        ("3", "Only a title", "bench"),
    ]
    assert [e.line for e in report.errors] == [2, 3, 4]
    assert "malformed JSON" in str(report.errors[0])
    assert "document '2' is empty" in str(report.errors[1])
    assert "_id" in str(report.errors[2])


def test_beir_corpus_needs_a_tenant(tmp_path):
    with pytest.raises(IngestError, match="pass --tenant"):
        list(load_documents(_beir(tmp_path), report=LoadReport()))


def test_format_is_detected_from_the_path(tmp_path):
    assert detect_format(_beir(tmp_path)) == "beir"
    assert detect_format(_folder(tmp_path)) == "folder"
    assert detect_format(_write(tmp_path / "x.jsonl", "")) == "jsonl"
    with pytest.raises(IngestError, match="does not exist"):
        load_documents(tmp_path / "missing", report=LoadReport())
    with pytest.raises(IngestError, match="use --format folder"):
        load_documents(_folder(tmp_path), report=LoadReport(), format="jsonl")
