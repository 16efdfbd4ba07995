"""Extractive headers (prose and code), the code outline, the guardrail and prompt versions."""

from __future__ import annotations

import pytest

from hybrid_es.ingest.chunking import Chunk, chunk_text, estimate_tokens
from hybrid_es.ingest.code_outline import definitions, enclosing, is_code, summary
from hybrid_es.ingest.contextual import (
    MAX_HEADER_TOKENS,
    ContextUsage,
    ExtractiveContextualizer,
    NoContextualizer,
    extractive_header,
    fallback_version,
    made_by,
)
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.guardrail import check_header, novel_terms
from tests.conftest import travel_documents

RUST = """//! Executor for differential fuzzing.
//! It wraps two executors.
use core::fmt::Debug;

/// A wrapper around two executors
pub struct DiffExecutor<A, B> {
    primary: A,
}

impl<A, B> Executor<A> for DiffExecutor<A, B>
where
    A: Debug,
{
    fn run_target(&mut self) -> ExitKind {
        let ret = self.primary.run_target();
        ret
    }
}
"""

PYTHON = '''"""Rate tables for supplier contracts."""

import json


class RateTable:
    """Rates by room code."""

    def april_rate(self, room):
        total = self.base[room]
        return total * 1.1


def load(path):
    return json.load(open(path))
'''

JAVA = """/*
 * Copyright 2018 Google LLC.
 * Licensed under the Apache License, Version 2.0.
 */
package com.google.cloud.tools.jib;

import java.util.List;

/** Pulls blobs from a registry. */
public class BlobPuller {
  public void pull(String digest) {
    if (digest == null) {
      return;
    }
    fetch(digest);
  }
}
"""


def _code_doc(body: str, path: str | None = None) -> Document:
    return Document(
        id="f", tenant="t", body=body, source_type="code", metadata={"path": path} if path else {}
    )


def test_prose_header_names_title_section_ids_names_dates_validity_and_source():
    doc = Document(
        id="D1",
        tenant="t",
        title="Supplier contract KYO-H12",
        body=(
            "# Rates\nThe Kyoto Garden Hotel sets the April rate. Kyoto Garden Hotel confirms "
            "booking JPN-2026-0417 from 2026-04-10."
        ),
        contract_ids=("KYO-H12",),
        valid_from="2026-04-01",
        valid_to="2027-03-31",
        source_type="contract",
        version=3,
    )
    (chunk,) = chunk_text(doc.body)
    assert extractive_header(doc, chunk) == (
        "Document: Supplier contract KYO-H12. Section: Rates. "
        "Identifiers: KYO-H12, JPN-2026-0417. Names: Kyoto Garden Hotel. Dates: 2026-04-10. "
        "Valid 2026-04-01 to 2027-03-31. Source: contract, version 3."
    )


def _long_doc(title: str) -> Document:
    names = ["Kyoto Garden Hotel", "Osaka Bay Hotel", "Nara Park Inn", "Kobe Harbour Lodge"]
    body = "# Rates\n" + " ".join(f"{n} confirms the rate. {n} signs." for n in names)
    body += " Stays from 2026-04-10, 2026-05-10 and 2026-06-10."
    return Document(
        id="L",
        tenant="t",
        title=title,
        body=body,
        contract_ids=tuple(f"KYO-H{i}" for i in range(10, 18)),
        valid_from="2026-04-01",
        valid_to="2027-03-31",
        source_type="contract",
        version=3,
    )


def test_a_long_prose_header_drops_dates_then_names_to_fit_the_token_limit():
    title = " ".join(["Supplier", "contract"] + [f"part{i}" for i in range(68)])  # 70 tokens
    doc = _long_doc(title)
    (chunk,) = chunk_text(doc.body)
    header = extractive_header(doc, chunk)
    # Untrimmed it would be 107 tokens: the three dates and their label go (4), then the last
    # name (3); the identifiers, validity and source all stay.
    assert estimate_tokens(header) == MAX_HEADER_TOKENS
    assert header == (
        f"Document: {title}. Section: Rates. "
        f"Identifiers: {', '.join(doc.contract_ids)}. "
        "Names: Kyoto Garden Hotel, Osaka Bay Hotel, Nara Park Inn. "
        "Valid 2026-04-01 to 2027-03-31. Source: contract, version 3."
    )
    short = extractive_header(_long_doc("Supplier contract"), chunk)
    assert "Dates: 2026-04-10, 2026-05-10, 2026-06-10." in short and "Kobe Harbour Lodge" in short


@pytest.mark.parametrize(
    "title",
    [
        " ".join(f"word{i}" for i in range(150)),
        "供应合同" * 40,  # one token per CJK character
        "Supplier " + "合同" * 60 + " terms",
    ],
)
def test_a_header_too_long_without_dates_names_and_ids_is_clipped_between_words(title):
    doc = _long_doc(title)
    (chunk,) = chunk_text(doc.body)
    header = extractive_header(doc, chunk)
    assert header.startswith("Document: ") and estimate_tokens(header) <= MAX_HEADER_TOKENS
    assert estimate_tokens(header) >= MAX_HEADER_TOKENS - 1  # nothing more was cut than needed
    full = f"Document: {title}"
    assert full.startswith(header)
    # No halved word: the cut falls at a space or after a CJK character (a token of its own).
    assert full[len(header)].isspace() or header[-1] in "供应合同"


def test_code_header_names_path_summary_and_enclosing_definitions():
    doc = _code_doc(RUST, "libafl/src/executors/differential.rs")
    start = RUST.index("        let ret")
    header = extractive_header(doc, Chunk(1, RUST[start:], (), start))
    assert header == (
        "File: libafl/src/executors/differential.rs. About: Executor for differential fuzzing. "
        "In: impl Executor for DiffExecutor > fn run_target."
    )


def test_code_header_of_a_chunk_at_top_level_has_no_scope():
    doc = _code_doc(RUST)
    header = extractive_header(doc, Chunk(0, RUST[:40], (), 0))
    assert header == "About: Executor for differential fuzzing."
    start = RUST.index("/// A wrapper")
    header = extractive_header(doc, Chunk(1, RUST[start:], (), start))
    assert header.endswith("Defines: DiffExecutor, Executor for DiffExecutor, run_target.")


@pytest.mark.parametrize(
    ("text", "at", "scope"),
    [
        (RUST, "        let ret", ["impl Executor for DiffExecutor", "fn run_target"]),
        (RUST, "    primary: A", ["struct DiffExecutor"]),
        (PYTHON, "        total =", ["class RateTable", "def april_rate"]),
        (PYTHON, "    return json", ["def load"]),
        (JAVA, "      return;", ["class BlobPuller", "function pull"]),
    ],
)
def test_enclosing_definitions_are_read_from_indentation(text, at, scope):
    defs = definitions(text)
    assert [f"{d.kind} {d.name}" for d in enclosing(defs, text, text.index(at))] == scope


def test_summary_skips_licences_and_prefers_the_file_comment():
    assert summary(RUST) == "Executor for differential fuzzing"
    assert summary(PYTHON) == "Rate tables for supplier contracts"
    assert summary(JAVA) == "Pulls blobs from a registry"
    assert summary("int x = 1;\n") == ""
    assert summary("// Copyright ACME\npackage a.b;\nclass X {}\n") == "package a.b"


def test_code_is_recognised_by_source_type_or_suffix():
    assert is_code("src/lib.rs", "document") and is_code(None, "code")
    assert not is_code("notes.md", "document") and not is_code(None, "document")


def test_extractive_headers_never_trip_the_guardrail():
    for doc in [*travel_documents(), _code_doc(RUST, "x/differential.rs"), _code_doc(JAVA)]:
        usage = ContextUsage()
        chunks = chunk_text(doc.body, size=32, overlap=0)
        for h in ExtractiveContextualizer().headers(doc, chunks, usage):
            allowed = [
                doc.title,
                doc.metadata.get("path") or "",
                doc.source_type,
                *doc.contract_ids,
                *doc.property_ids,
                *doc.room_codes,
                *doc.booking_ids,
            ]
            source = f"{doc.title}\n{doc.body}\n{doc.valid_from} {doc.valid_to} {doc.version}"
            assert check_header(h.text, source, allowed=allowed) is None, h.text


def test_no_contextualizer_gives_empty_headers():
    doc = travel_documents("D1-current-contract")[0]
    (h,) = NoContextualizer().headers(doc, chunk_text(doc.body), ContextUsage())
    assert (h.text, h.prompt_version) == ("", "none-v1")


@pytest.mark.parametrize(
    ("header", "novel"),
    [
        ("This chunk is from ACME Corp's Q3 2025 Form 10-Q filing.", []),
        ("This chunk is from ACME\u2019s 2025 report.", []),
        ("This chunk is from Globex Corp's Q4 2026 filing.", ["globex", "q4", "2026"]),
        ("The April rate for contract KYO-H12 is JPY 31,500.", []),
        ("The April rate for contract KYO-H99 is JPY 35,000.", ["kyo-h99", "35,000"]),
        ("Describes the run_target method of DiffExecutor.", []),
        ("Describes the run_once method of FuzzExecutor.", ["run_once", "fuzzexecutor"]),
        ("Situated in a section about rates and cancellation.", []),
    ],
)
def test_guardrail_flags_entities_identifiers_and_numbers_absent_from_the_document(header, novel):
    document = (
        "ACME Corp Form 10-Q for Q3 2025. Contract KYO-H12: the April rate is JPY 31,500. "
        "fn run_target of DiffExecutor. Rates and cancellation."
    )
    assert novel_terms(header, document) == novel


def test_guardrail_rejects_empty_and_overlong_headers_and_accepts_allowed_terms():
    assert check_header("  ", "doc") == "empty header"
    assert "limit 1200" in (check_header("word " * 300, "word") or "")
    assert check_header("Part of differential.rs.", "text", allowed=["differential.rs"]) is None
    assert "introduces globex" in (check_header("About Globex.", "text") or "")


def test_prompt_versions_recognise_their_own_fallbacks():
    v = "anthropic-ctx-v1@claude-haiku-4-5"
    assert made_by(v, v) and made_by(fallback_version(v, "extractive-v2"), v)
    assert not made_by("extractive-v2", v) and not made_by(None, v)
    assert not made_by("anthropic-ctx-v1@claude-sonnet-4-5", v)
