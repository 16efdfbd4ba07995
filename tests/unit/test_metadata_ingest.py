"""User metadata at ingest: Markdown front matter (``ingest.front_matter``), the folder loader's
metadata, and the declared fields' values in the chunk records and the skip decision
(``ingest.plan``). Pure (files under ``tmp_path``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from hybrid_es.errors import IngestError
from hybrid_es.ingest.chunking import chunk_text
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.front_matter import MAX_LINES, split_front_matter
from hybrid_es.ingest.loaders import LoadOptions, LoadReport, load_folder, load_jsonl
from hybrid_es.ingest.plan import build_chunk_records, chunk_id, plan_document
from hybrid_es.text.analysis import ANALYSIS_VERSION
from tests.constants import NOW

FRONT = """---
title: Kyoto supplier contract
team: contracts   # who owns it
year: 2026
zip: "01234"
code: 007
ratio: 1.5
published: 2026-04-01
draft: false
url: https://example.com/kyoto?x=1#top
tags: [kyoto, "a, b", 3]
owners:
  - alice
  - bob
empty:
quoted: "line\\nbreak"
single: 'it''s'
---
# Heading

Body text of the contract.
"""


def test_front_matter_fields_and_the_body_after_it():
    fields, body = split_front_matter(FRONT)
    assert fields == {
        "title": "Kyoto supplier contract",
        "team": "contracts",
        "year": 2026,
        "zip": "01234",
        "code": "007",
        "ratio": 1.5,
        "published": "2026-04-01",
        "draft": False,
        "url": "https://example.com/kyoto?x=1#top",
        "tags": ["kyoto", "a, b", 3],
        "owners": ["alice", "bob"],
        "empty": None,
        "quoted": "line\nbreak",
        "single": "it's",
    }
    assert body == "# Heading\n\nBody text of the contract.\n"


@pytest.mark.parametrize(
    "text",
    ["# Just a heading\n", "text\n---\na: 1\n---\n", "", " ---\na: 1\n---\n", "----\n"],
)
def test_no_front_matter(text):
    assert split_front_matter(text) == (None, text)


def test_an_empty_block_and_windows_line_ends():
    assert split_front_matter("---\n---\nbody") == ({}, "body")
    assert split_front_matter("---\r\na: 1\r\n...\r\nbody\r\n") == ({"a": 1}, "body\r\n")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("---\nmeta:\n  nested: 1\n---\n", "line 3: nested (indented) values are not supported"),
        ("---\nbody: |\n  text\n---\n", "line 2: '|' values"),
        ("---\nx: &anchor 1\n---\n", "'&' values"),
        ("---\nx: !!binary aGk=\n---\n", "'!' values"),
        ("---\nx: {a: 1}\n---\n", "'{' values"),
        ("---\nx: [a, [b]]\n---\n", "nested lists and mappings are not supported"),
        ("---\nx: [a, b\n---\n", "must close with ']'"),
        ("---\n- a\n---\n", "a '- item' line must follow a 'key:' line"),
        ("---\na: 1\na: 2\n---\n", "line 3: the key 'a' is given twice"),
        ("---\na:1\n---\n", "a space after the colon"),
        ("---\njust text\n---\n", "expected 'key: value'"),
        ('---\nx: "open\n---\n', "a double-quoted value must end with its quote"),
        ("---\na: 1\n", "not closed by a '---' line"),
        ("---\n" + "a: 1\n" * (MAX_LINES + 1), "not closed"),
    ],
)
def test_what_the_parser_does_not_read_is_refused_by_line(text, needle):
    with pytest.raises(ValueError) as info:
        split_front_matter(text)
    assert needle in str(info.value)


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def _load(root: Path) -> tuple[list[Document], LoadReport]:
    report = LoadReport()
    docs = list(load_folder(root, report=report, options=LoadOptions(tenant="t")))
    return docs, report


def test_the_folder_loader_makes_front_matter_metadata_not_text(tmp_path):
    root = _folder(
        tmp_path,
        {
            "kyoto.md": FRONT,
            "plain.md": "# Plain\n\nNo front matter here.\n",
            "notes.txt": "---\nteam: ops\n---\ntext files keep it as text\n",
        },
    )
    docs, report = _load(root)
    assert not report.errors
    by_id = {d.id: d for d in docs}
    kyoto = by_id["kyoto.md"]
    assert kyoto.title == "Kyoto supplier contract"
    assert kyoto.body == "# Heading\n\nBody text of the contract.\n"
    assert "team:" not in kyoto.body
    assert kyoto.metadata["team"] == "contracts" and kyoto.metadata["year"] == 2026
    assert kyoto.metadata["path"] == "kyoto.md"
    assert by_id["plain.md"].metadata == {"path": "plain.md"}
    assert by_id["plain.md"].title == "Plain"
    assert by_id["notes.txt"].metadata == {"path": "notes.txt"}
    assert by_id["notes.txt"].body.startswith("---\nteam: ops")


def test_front_matter_sets_no_other_document_field(tmp_path):
    root = _folder(
        tmp_path,
        {"a.md": '---\nacl_groups: ["*"]\ntenant: other\nversion: 9\npath: x\n---\nbody\n'},
    )
    (doc,), report = _load(root)
    assert not report.errors
    assert doc.acl_groups is None and doc.tenant == "t" and doc.version == 1
    # It is metadata; the file's own path wins over a front matter "path".
    assert doc.metadata == {"acl_groups": ["*"], "tenant": "other", "version": 9, "path": "a.md"}


def test_the_sidecar_wins_over_the_front_matter(tmp_path):
    root = _folder(
        tmp_path,
        {
            "a.md": "---\nteam: ops\nyear: 2025\n---\n# A\nbody\n",
            "a.md.meta.json": json.dumps(
                {"title": "Sidecar title", "metadata": {"team": "sales", "url": "https://x"}}
            ),
        },
    )
    (doc,), _ = _load(root)
    assert doc.title == "Sidecar title"
    assert doc.metadata == {"team": "sales", "year": 2025, "path": "a.md", "url": "https://x"}


def test_a_bad_front_matter_refuses_that_file_only(tmp_path):
    root = _folder(
        tmp_path,
        {
            "bad.md": "---\nmeta:\n  nested: 1\n---\nbody\n",
            "only-front.md": "---\nteam: ops\n---\n",
            "big.md": "---\nblob: " + "x" * 70_000 + "\n---\nbody\n",
            "good.md": "---\nteam: ops\n---\nbody\n",
            "list.md": "body\n",
            "list.md.meta.json": json.dumps({"metadata": ["not", "an", "object"]}),
        },
    )
    docs, report = _load(root)
    assert [d.id for d in docs] == ["good.md"]
    reasons = sorted(str(e) for e in report.errors)
    assert len(reasons) == 4
    assert any("bad.md: front matter line 3: nested" in r for r in reasons)
    assert any("only-front.md: invalid document: body" in r for r in reasons)
    assert any("big.md: invalid document: metadata" in r and "65,536" in r for r in reasons)
    assert any("list.md.meta.json: metadata must be a JSON object" in r for r in reasons)


def test_jsonl_refuses_unstorable_metadata_by_line(tmp_path):
    deep: Any = 1
    for _ in range(20):
        deep = {"n": deep}
    lines = [
        {"id": "a", "body": "x", "metadata": {"team": "ops"}},
        {"id": "b", "body": "x", "metadata": deep},
        {"id": "c", "body": "x", "metadata": "not an object"},
    ]
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    report = LoadReport()
    docs = list(load_jsonl(path, report=report, options=LoadOptions(tenant="t")))
    assert [d.id for d in docs] == ["a"]
    errors = [str(e) for e in report.errors]
    assert errors[0].startswith("line 2: ") and "nested deeper than 16 levels" in errors[0]
    assert errors[1].startswith("line 3: ") and "metadata must be a JSON object" in errors[1]
    with pytest.raises(IngestError, match="line 2"):
        list(load_jsonl(path, report=LoadReport(), options=LoadOptions(tenant="t"), fail_fast=True))


# --- the declared fields' values in the records and the skip decision ---------------------------

DOC = Document(
    id="K",
    tenant="t",
    body="Clause one sets the April rate. Clause two covers cancellation until seven days before.",
    metadata={"team": "contracts", "year": 2026, "path": "k.md"},
)
CHUNKS = chunk_text(DOC.body, size=16, overlap=0)


def _stored(**over: Any) -> list[dict[str, Any]]:
    return [
        {
            "chunk_id": chunk_id(DOC.id, DOC.version, c.number),
            "tenant": DOC.tenant,
            "version": DOC.version,
            "doc_hash": DOC.content_hash(),
            "chunk_hash": hashlib.sha256(c.text.encode()).hexdigest(),
            "header_prompt_version": "p-v1",
            "embedding_model": "m",
            "analysis_version": ANALYSIS_VERSION,
            **over,
        }
        for c in CHUNKS
    ]


def _plan(stored: list[dict[str, Any]], meta_filter: dict[str, Any] | None) -> str:
    return plan_document(
        DOC, CHUNKS, stored, prompt_version="p-v1", embedding_model="m", meta_filter=meta_filter
    ).action


def test_records_carry_the_declared_values_beside_the_stored_metadata():
    recs = build_chunk_records(
        DOC, now=NOW, embedding_model="m", chunks=CHUNKS, meta_filter={"team": "contracts"}
    )
    assert all(r["meta_filter"] == {"team": "contracts"} for r in recs)
    assert all(r["metadata"] == DOC.metadata for r in recs)
    plain = build_chunk_records(DOC, now=NOW, embedding_model="m", chunks=CHUNKS)
    assert all("meta_filter" not in r for r in plain)


def test_a_changed_declaration_rewrites_the_unchanged_document():
    # Stored before any field was declared: nothing declared now, skipped.
    assert _plan(_stored(), None) == "skip"
    assert _plan(_stored(), {}) == "skip"
    # A field declared since (the document holds it): written again, with its value.
    assert _plan(_stored(), {"team": "contracts"}) == "write"
    # Stored with it: skipped while the declaration stays.
    with_team = _stored(meta_filter={"team": "contracts"})
    assert _plan(with_team, {"team": "contracts"}) == "skip"
    # Another field declared, or this one removed: written again.
    assert _plan(with_team, {"team": "contracts", "year": 2026}) == "write"
    assert _plan(with_team, None) == "write"
