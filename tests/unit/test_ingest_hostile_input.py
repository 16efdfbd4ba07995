"""Input the loaders cannot read is refused by its line, never raised out of the loader
(issue 23, item 6): one deeply nested line used to abort a whole ingest with RecursionError (exit
70), losing the valid lines too, and ``"version": true`` was stored as version 1."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from hybrid_es.errors import IngestError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.jsonlines import MAX_LINE_BYTES, nesting_depth, parse_json
from hybrid_es.ingest.loaders import (
    LoadOptions,
    LoadReport,
    load_documents,
    load_folder,
    load_jsonl,
    read_field_map,
)

OPTIONS = LoadOptions(tenant="t")
DEEP_ARRAY = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


def _doc_line(doc_id: str, **fields: object) -> bytes:
    return json.dumps({"id": doc_id, "body": "text.", **fields}).encode()


def _load(tmp_path: Path, lines: list[bytes]) -> tuple[list[str], list[str]]:
    """The ids loaded and the refusals, as text, of a JSON-lines file of ``lines``."""
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    report = LoadReport()
    ids = [d.id for d in load_jsonl(path, report=report, options=OPTIONS)]
    return ids, [str(e).replace(f"{path}: ", "") for e in report.errors]


def test_each_unreadable_line_is_refused_by_its_number_and_the_rest_loads(tmp_path):
    lines = [
        b'\xef\xbb\xbf{"id": "a", "body": "a byte-order mark starts the file: skipped."}',
        DEEP_ARRAY,
        DEEP_OBJECT,
        _doc_line("b"),
        b'{"id": "c", "body": "x", "version": 1e400}',
        b'{"id": "d", "body": "x", "version": 1000000000000000000000000000000}',
        b'{"id": "e", "body": "x", "version": true}',
        b'{"id": "f", "body": "x", "metadata": {"score": NaN}}',
        b'{"id": "g", "body": "x", "acl_groups": ["ok", -Infinity]}',
        b'{"id": "h", "body": "lone \\ud800 surrogate"}',
        b'{"id": "i", "body": "caf\xe9"}',
        b'\xef\xbb\xbf{"id": "j", "body": "a second BOM: files joined"}',
        b'{"id": "k", "body": "x", "metadata": {"big": -' + b"9" * 5000 + b"}}",
        b'{"id": "l\\u2028m", "body": "x"}',
        _doc_line("n", version=2),
        b'{"id": "o", "body": "a pair is fine: \\ud83d\\ude00"}',
    ]
    ids, refused = _load(tmp_path, lines)
    assert ids == ["a", "b", "n", "o"]
    assert refused == [
        "line 2: nested deeper than 64 levels of arrays and objects; flatten it",
        "line 3: nested deeper than 64 levels of arrays and objects; flatten it",
        "line 5: version: 1e400 is out of range: it overflows a 64-bit float",
        "line 6: version: 1000000000000000000000000000000 is out of range: integers must fit in "
        "64 bits",
        "line 7: invalid document: version: Value error, version must be an integer, not a boolean",
        "line 8: metadata.score: NaN is not a JSON number; give a number or null",
        "line 9: acl_groups[1]: -Infinity is not a JSON number; give a number or null",
        "line 10: body holds a lone surrogate (a \\ud800-\\udfff escape not part of a pair): such "
        "text has no UTF-8 form; fix the escape or remove it",
        "line 11: not UTF-8 (invalid continuation byte at byte 24) (re-encode the file as UTF-8)",
        "line 12: a byte-order mark starts this line (only the file's first line may have one: "
        "were files joined?); remove it",
        "line 13: metadata.big: -99999999999...(5000 digits) is out of range: integers must fit "
        "in 64 bits",
        "line 14: invalid document: id: Value error, document id must not contain control "
        "characters, line breaks or invisible format characters (it holds U+2028, Zl)",
    ]


def test_a_line_over_16_mib_is_refused_unread_and_the_next_line_loads(tmp_path):
    assert MAX_LINE_BYTES == 16 * 1024 * 1024
    big = b'{"id": "big", "body": "' + b"x" * MAX_LINE_BYTES + b'"}'
    ids, refused = _load(tmp_path, [_doc_line("a"), big, _doc_line("b")])
    assert ids == ["a", "b"]
    assert refused == [
        "line 2: the line is 16.0 MiB (16,777,241 bytes); the limit is 16 MiB (split the "
        "document into smaller ones)"
    ]


def test_a_line_of_exactly_the_limit_is_read(tmp_path, monkeypatch):
    from hybrid_es.ingest import jsonlines

    line = _doc_line("a")
    monkeypatch.setattr(jsonlines, "MAX_LINE_BYTES", len(line))
    path = tmp_path / "d.jsonl"
    path.write_bytes(line + b"\r\n" + line + b" \r\n" + _doc_line("b"))  # CRLF endings
    report = LoadReport()
    assert [d.id for d in load_jsonl(path, report=report, options=OPTIONS)] == ["a", "b"]
    assert [str(e).split(": ", 2)[2] for e in report.errors] == [
        f"the line is {len(line) + 1} bytes; the limit is {len(line)} bytes "
        "(split the document into smaller ones)"
    ]


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ('{"a": [1]}', 2),
        ('{"a": "[[[[{{{{"}', 1),  # brackets in strings do not count
        ('["\\"[[", [[1]]]', 3),  # nor after an escaped quote
        ("[" * 100_000, 65),  # counting stops past the limit
        ("]]]", -1),
    ],
)
def test_nesting_depth_counts_brackets_outside_strings(text, depth):
    assert nesting_depth(text) == depth


def test_parse_json_refuses_what_no_store_can_hold():
    assert parse_json('{"n": 9223372036854775807, "f": 1.5e308}') == {
        "n": 9223372036854775807,
        "f": 1.5e308,
    }
    with pytest.raises(ValueError, match=r"^n: 9223372036854775808 is out of range"):
        parse_json('{"n": 9223372036854775808}')
    with pytest.raises(ValueError, match=r"^a key in the value holds a lone surrogate"):
        parse_json('{"\\udc00": 1}')
    with pytest.raises(ValueError, match=r"^'odd key'\[0\]: Infinity is not a JSON number"):
        parse_json('{"odd key": [Infinity]}')


def test_version_must_be_an_integer_not_a_boolean():
    with pytest.raises(ValueError, match="version must be an integer, not a boolean"):
        Document(id="a", tenant="t", body="x.", version=True)  # type: ignore[arg-type]
    assert Document(id="a", tenant="t", body="x.", version=3).version == 3


def test_an_acl_entry_no_principal_can_hold_is_refused():
    with pytest.raises(ValueError, match="ACL entry must be non-empty text without surrounding"):
        Document(id="a", tenant="t", body="x.", acl_groups=("agents\n",))


def test_beir_refuses_unreadable_lines_by_number_and_reads_on(tmp_path):
    root = tmp_path / "beir"
    root.mkdir()
    (root / "corpus.jsonl").write_bytes(
        b"\n".join(
            [
                json.dumps({"_id": "1", "text": "first."}).encode(),
                DEEP_OBJECT,
                b'{"_id": "2", "text": "x", "score": NaN}',
                json.dumps({"_id": "3", "text": "third."}).encode(),
            ]
        )
    )
    report = LoadReport()
    docs = list(load_documents(root, report=report, options=OPTIONS))
    assert [d.id for d in docs] == ["1", "3"]
    assert [(e.line, e.message.split(": ", 2)[2]) for e in report.errors] == [
        (2, "nested deeper than 64 levels of arrays and objects; flatten it"),
        (3, "score: NaN is not a JSON number; give a number or null"),
    ]


def test_folder_sidecars_and_map_files_are_read_the_same_safe_way(tmp_path):
    root = tmp_path / "d"
    root.mkdir()
    (root / "a.md").write_text("text a.", encoding="utf-8")
    (root / "a.md.meta.json").write_bytes(b'{"metadata": ' + DEEP_ARRAY + b"}")
    (root / "b.md").write_text("text b.", encoding="utf-8")
    (root / "b.md.meta.json").write_text('{"version": true}', encoding="utf-8")
    report = LoadReport()
    assert list(load_folder(root, report=report, options=OPTIONS)) == []
    assert [str(e).removeprefix(f"{root}/") for e in report.errors] == [
        "a.md.meta.json: not a readable UTF-8 JSON object: nested deeper than 64 levels of "
        "arrays and objects; flatten it",
        "b.md: invalid document: version: Value error, version must be an integer, not a boolean",
    ]
    deep_map = tmp_path / "map.json"
    deep_map.write_bytes(DEEP_OBJECT)
    with pytest.raises(ValueError, match=r"map\.json: not a readable JSON object: nested deeper"):
        read_field_map([], deep_map)


def test_a_decomposed_file_name_gives_an_nfc_document_id(tmp_path):
    root = tmp_path / "d"
    root.mkdir()
    decomposed = unicodedata.normalize("NFD", "café.md")
    (root / decomposed).write_text("text.", encoding="utf-8")
    (doc,) = load_folder(root, report=LoadReport(), options=OPTIONS)
    assert doc.id == "café.md" and unicodedata.is_normalized("NFC", doc.id)
    assert doc.metadata["path"] == decomposed  # the file as it is on disk


def test_fail_fast_raises_the_refusal_not_a_recursion_error(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(_doc_line("a") + b"\n" + DEEP_ARRAY + b"\n")
    with pytest.raises(IngestError, match=r"line 2: .*nested deeper than 64 levels"):
        list(load_jsonl(path, report=LoadReport(), options=OPTIONS, fail_fast=True))
