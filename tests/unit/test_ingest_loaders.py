"""Loaders: JSONL, BEIR and folders of text files; every bad input reported with where it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_es.errors import IngestError
from hybrid_es.ingest import loaders
from hybrid_es.ingest.loaders import (
    LoadOptions,
    LoadReport,
    detect_format,
    load_documents,
    load_folder,
    load_jsonl,
    prepare_record,
    read_field_map,
)


def _as(tenant: str, **kw: object) -> LoadOptions:
    return LoadOptions(tenant=tenant, **kw)  # type: ignore[arg-type]


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
    docs = list(load_folder(_folder(tmp_path), report=report, options=_as("demo-A")))
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
        load_folder(
            _folder(tmp_path), report=report, options=_as("t"), suffixes=(".md", ".txt", ".py")
        )
    )
    code = next(d for d in docs if d.id == "tool.py")
    assert code.source_type == "code" and code.metadata["path"] == "tool.py"


def test_folder_a_sidecar_of_another_tenant_is_refused_and_the_rest_is_the_callers(tmp_path):
    root = tmp_path / "d"
    _write(root / "a.md", "text a.")
    _write(root / "a.md.meta.json", '{"tenant": "demo-B"}')
    _write(root / "b.md", "text b.")
    report = LoadReport()
    docs = list(load_folder(root, report=report, options=_as("demo-A")))
    assert [(d.id, d.tenant) for d in docs] == [("b.md", "demo-A")]
    (err,) = report.errors
    assert "a.md" in str(err) and "names tenant 'demo-B'" in str(err)
    assert "writes for tenant 'demo-A'" in str(err)


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
    assert list(load_folder(root, report=report, options=_as("t"))) == []
    assert len(report.errors) == 1 and expected in str(report.errors[0])


def test_folder_refuses_an_over_large_file_before_reading_it(tmp_path, monkeypatch):
    monkeypatch.setattr(loaders, "MAX_DOCUMENT_BYTES", 10)
    root = tmp_path / "d"
    _write(root / "big.txt", "x" * 11)
    report = LoadReport()
    assert list(load_folder(root, report=report, options=_as("t"))) == []
    assert "big.txt: 11 bytes, over the 10-byte limit" in str(report.errors[0])


def test_fail_fast_raises_the_first_problem(tmp_path):
    root = tmp_path / "d"
    _write(root / "a.md", b"\xff")
    _write(root / "b.md", "fine.")
    with pytest.raises(IngestError, match=r"a\.md: not UTF-8"):
        list(load_folder(root, report=LoadReport(), options=_as("t"), fail_fast=True))


def test_jsonl_rejects_the_same_document_twice_but_not_a_new_version(tmp_path):
    rows = [
        {"id": "K", "tenant": "t", "body": "v1.", "version": 1},
        {"id": "K", "tenant": "t", "body": "v2.", "version": 2},
        {"id": "K", "tenant": "t", "body": "v2 again.", "version": 2},
    ]
    path = _write(tmp_path / "d.jsonl", "\n".join(json.dumps(r) for r in rows))
    report = LoadReport()
    docs = list(load_jsonl(path, report=report, options=_as("t")))
    assert [(d.tenant, d.version) for d in docs] == [("t", 1), ("t", 2)]
    (err,) = report.errors
    assert err.line == 3 and "also at line 2" in str(err)


def test_jsonl_lines_of_another_tenant_are_refused_by_line_and_never_loaded(tmp_path):
    # Issue 11 C: with a tenant given, every document must belong to it.
    rows = [
        {"id": "K", "tenant": "demo-B", "body": "b's own."},
        {"id": "K", "tenant": "demo-A", "body": "a's document, smuggled into b's upload."},
        {"id": "L", "body": "names no tenant."},
    ]
    path = _write(tmp_path / "d.jsonl", "\n".join(json.dumps(r) for r in rows))
    report = LoadReport()
    docs = list(load_jsonl(path, report=report, options=_as("demo-B")))
    assert [(d.id, d.tenant) for d in docs] == [("K", "demo-B"), ("L", "demo-B")]
    (err,) = report.errors
    assert err.line == 2 and "names tenant 'demo-A'" in str(err) and "nothing of it" in str(err)


def test_jsonl_accepts_a_byte_order_mark_and_fills_the_tenant(tmp_path):
    path = _write(tmp_path / "d.jsonl", b'\xef\xbb\xbf{"id": "a", "body": "text."}\n')
    (doc,) = load_jsonl(path, report=LoadReport(), options=_as("t"))
    assert (doc.id, doc.tenant) == ("a", "t")


def test_jsonl_refuses_a_body_over_the_documented_limit(tmp_path, monkeypatch):
    from hybrid_es.ingest import documents

    monkeypatch.setattr(documents, "MAX_DOCUMENT_CHARS", 20)
    path = _write(tmp_path / "d.jsonl", json.dumps({"id": "a", "tenant": "t", "body": "y" * 21}))
    report = LoadReport()
    assert list(load_jsonl(path, report=report, options=_as("t"))) == []
    assert "the body has 21 characters; the limit is 20" in str(report.errors[0])


def test_jsonl_without_id_is_rejected(tmp_path):
    path = _write(tmp_path / "d.jsonl", json.dumps({"tenant": "t", "body": "b."}))
    report = LoadReport()
    assert list(load_jsonl(path, report=report, options=_as("t"))) == []
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
    docs = list(load_documents(_beir(tmp_path), report=report, options=_as("bench")))
    assert [(d.id, d.body, d.tenant) for d in docs] == [
        ("1", "first abstract.", "bench"),
        ("3", "Only a title", "bench"),
    ]
    assert [e.line for e in report.errors] == [2, 3, 4]
    assert "malformed JSON" in str(report.errors[0])
    assert "document '2' is empty" in str(report.errors[1])
    assert "_id" in str(report.errors[2])


def test_format_is_detected_from_the_path(tmp_path):
    assert detect_format(_beir(tmp_path)) == "beir"
    assert detect_format(_folder(tmp_path)) == "folder"
    assert detect_format(_write(tmp_path / "x.jsonl", "")) == "jsonl"
    with pytest.raises(IngestError, match="does not exist"):
        load_documents(tmp_path / "missing", report=LoadReport(), options=_as("t"))
    with pytest.raises(IngestError, match="use --format folder"):
        load_documents(_folder(tmp_path), report=LoadReport(), options=_as("t"), format="jsonl")


# -- field maps and version labels (issue 11, item 10) ------------------------------------------


def test_a_file_with_foreign_field_names_loads_through_a_field_map(tmp_path):
    rows = [
        {"doc_id": "C-7", "text": "Rate JPY 31,500.", "rev": 4, "label": "contract-v4"},
        {"doc_id": "C-8", "text": "Rate JPY 9,000.", "rev": 1, "label": "contract-v1"},
    ]
    path = _write(tmp_path / "d.jsonl", "\n".join(json.dumps(r) for r in rows))
    plain = LoadReport()
    assert list(load_jsonl(path, report=plain, options=_as("t"))) == []
    assert len(plain.errors) == 2 and "id: Field required" in str(plain.errors[0])
    fmap = read_field_map(["doc_id=id", "text=body", "rev=version", "label=version_label"])
    report = LoadReport()
    docs = list(load_jsonl(path, report=report, options=_as("t", field_map=fmap)))
    assert report.errors == []
    assert [(d.id, d.version, d.version_label) for d in docs] == [
        ("C-7", 4, "contract-v4"),
        ("C-8", 1, "contract-v1"),
    ]


def test_a_version_label_is_refused_as_an_order_unless_the_order_is_made_explicit(tmp_path):
    path = _write(
        tmp_path / "d.jsonl", json.dumps({"id": "K", "body": "x.", "version": "contract-v4"})
    )
    report = LoadReport()
    assert list(load_jsonl(path, report=report, options=_as("t"))) == []
    message = str(report.errors[0])
    assert "'contract-v4' is a label, not an ordering number" in message
    assert "--map version=version_label" in message and "--version-from-label" in message
    opts = _as("t", field_map={"version": "version_label"}, version_from_label=True)
    (doc,) = load_jsonl(path, report=LoadReport(), options=opts)
    assert (doc.version, doc.version_label) == (4, "contract-v4")


@pytest.mark.parametrize(
    ("record", "options", "expected"),
    [
        ({"id": "a", "body": "b", "version": "7"}, {}, {"version": "7"}),
        ({"version_label": "v-twelve"}, {"version_from_label": True}, "holds no number"),
        ({"doc_id": "a", "id": "b"}, {"field_map": {"doc_id": "id"}}, "both 'doc_id' and 'id'"),
        ({"tenant": "x"}, {}, "names tenant 'x'"),
        ({"version_label": "2025-rev-3"}, {"version_from_label": True}, {"version": 3}),
    ],
)
def test_prepare_record_rules(record, options, expected):
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=expected):
            prepare_record(record, _as("t", **options))
    else:
        out = prepare_record(record, _as("t", **options))
        assert {k: out[k] for k in expected} == expected and out["tenant"] == "t"


def test_field_maps_from_pairs_and_a_file_and_their_errors(tmp_path):
    f = _write(tmp_path / "map.json", json.dumps({"doc_id": "id", "text": "title"}))
    assert read_field_map(["text=body"], f) == {"doc_id": "id", "text": "body"}
    with pytest.raises(ValueError, match="not SOURCE=TARGET"):
        read_field_map(["doc_id"])
    with pytest.raises(ValueError, match="unknown target field"):
        read_field_map(["doc_id=identifier"])
    with pytest.raises(ValueError, match="must hold one JSON object"):
        read_field_map([], _write(tmp_path / "bad.json", "[1]"))
