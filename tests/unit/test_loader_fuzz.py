"""A fuzz of the JSON-lines loaders (issue 23, item 6): files mixing valid records with hostile
lines. Whatever a line holds, the loader raises nothing; every valid line is loaded, and every bad
line is refused once, as an IngestError carrying its own line number, while the lines after it
are still read.

Hostile lines: arrays and objects nested to any depth (up to 100,000), numbers out of range,
NaN and Infinity, a boolean version, lone surrogate escapes, invalid UTF-8 bytes, a byte-order
mark after the first line, over-long bodies and lines, JSON that is not an object, truncated
JSON, ids with line breaks, another tenant's records and random bytes.

CI runs a few dozen files; ``HYPOTHESIS_PROFILE=long`` (scripts/long_properties.sh) runs 10,000.
The size limits are lowered for the run so that over-long input stays cheap to generate; the
limits themselves are tested at full size in test_ingest_loaders.py.
"""

from __future__ import annotations

import codecs
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_es.errors import IngestError
from hybrid_es.ingest import documents, jsonlines
from hybrid_es.ingest.documents import MAX_VERSION
from hybrid_es.ingest.jsonlines import MAX_NESTING
from hybrid_es.ingest.loaders import LoadOptions, LoadReport, load_beir, load_jsonl
from hybrid_es.metadata_fields import MAX_METADATA_DEPTH
from tests.conftest import examples

TENANT = "demo-A"
LINE_LIMIT = 300_000
"""MAX_LINE_BYTES during the fuzz: above a 100,000-deep line (200,000 bytes), so that such a
line meets the nesting check, not the size check."""
BODY_LIMIT = 400
"""MAX_DOCUMENT_CHARS during the fuzz."""
BOM = codecs.BOM_UTF8
MARK = "@@HOLE@@"
"""Placeholder in a record, replaced in the encoded line by hostile raw JSON."""

Draw = Callable[[st.SearchStrategy[Any]], Any]

# -- valid records ------------------------------------------------------------------------------

_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)


def _nested(value: Any, depth: int) -> Any:
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


def _body(draw: Draw) -> str:
    return str(draw(st.text(min_size=1, max_size=BODY_LIMIT).filter(lambda s: s.strip() != "")))


def _record(draw: Draw, fmt: str, i: int) -> dict[str, Any]:
    """A valid record with id ``doc-<i>``: the format's fields, and for JSON lines optional
    policy fields and metadata nested up to the limit (the record itself is one level)."""
    if fmt == "beir":
        return {"_id": f"doc-{i}", "title": draw(st.text(max_size=10)), "text": _body(draw)}
    rec: dict[str, Any] = {"id": f"doc-{i}", "body": _body(draw)}
    if draw(st.booleans()):
        rec["version"] = draw(st.integers(1, MAX_VERSION))
    if draw(st.booleans()):
        rec["acl_groups"] = draw(st.lists(st.sampled_from(["*", "agents", "финансы"]), max_size=3))
    if draw(st.booleans()):
        rec["tenant"] = TENANT
    if draw(st.booleans()):
        # Within both limits: the line's nesting and what metadata may hold (a record whose
        # metadata is too deep is refused as a document, not as a line: test_metadata_ingest).
        deepest = min(MAX_NESTING, MAX_METADATA_DEPTH) - 2
        rec["metadata"] = {"m": _nested(draw(_leaf), draw(st.integers(0, deepest)))}
    return rec


def _encode(rec: dict[str, Any], draw: Draw) -> bytes:
    return json.dumps(rec, ensure_ascii=draw(st.booleans())).encode("utf-8")


def _with_hole(rec: dict[str, Any], draw: Draw, raw: str, where: str) -> bytes:
    """``rec`` encoded with the raw JSON ``raw`` at ``where``: a top-level field, or nested."""
    rec = dict(rec)
    rec[where] = MARK if where != "metadata" else {"deep": [1, {"x": MARK}]}
    return _encode(rec, draw).replace(json.dumps(MARK).encode(), raw.encode())


# -- hostile lines --------------------------------------------------------------------------------


def _deep(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    n = draw(st.one_of(st.integers(MAX_NESTING + 1, 3000), st.just(100_000)))
    shape = draw(st.sampled_from(["array", "object", "field"]))
    if shape == "array":
        return b"[" * n + b"]" * n
    deep = '{"a":' * n + "1" + "}" * n
    return deep.encode() if shape == "object" else _with_hole(rec, draw, deep, "metadata")


def _big_number(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    digits = draw(st.integers(19, 5000))  # 10**19 is past the largest signed 64-bit integer
    number = draw(
        st.sampled_from(["1e400", "-1e400", "1" + "0" * digits, "-" + "9" * digits, "2e308"])
    )
    where = draw(st.sampled_from(["version", "metadata"] if fmt == "jsonl" else ["n", "metadata"]))
    return _with_hole(rec, draw, number, where)


def _not_a_number(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    constant = draw(st.sampled_from(["NaN", "Infinity", "-Infinity"]))
    where = draw(st.sampled_from(["version", "metadata"] if fmt == "jsonl" else ["n", "metadata"]))
    return _with_hole(rec, draw, constant, where)


def _bool_version(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    return _encode({**rec, "version": draw(st.booleans())}, draw)


def _surrogate(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    code = draw(st.integers(0xD800, 0xDFFF))
    escape = f"\\u{code:04x}" if draw(st.booleans()) else f"\\u{code:04X}"
    text_field = "body" if fmt == "jsonl" else "text"
    where = draw(st.sampled_from([text_field, "key", "list"]))
    if where == "key":
        return _encode({**rec, MARK: 1}, draw).replace(MARK.encode(), escape.encode())
    if where == "list":
        field = "acl_groups" if fmt == "jsonl" else "extra"
        line = _encode({**rec, field: ["ok", MARK]}, draw)
        return line.replace(MARK.encode(), escape.encode())
    line = _encode({**rec, text_field: "a" + MARK + "b"}, draw)
    return line.replace(MARK.encode(), escape.encode())


def _invalid_utf8(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    line = json.dumps(rec, ensure_ascii=False).encode("utf-8")
    bad = draw(st.sampled_from([b"\xff", b"\xfe", b"\xc0\x80", b"\xed\xa0\x80", b"\x80"]))
    at = draw(st.integers(0, len(line)))
    return line[:at] + bad + line[at:]


def _bom(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    return BOM + _encode(rec, draw)  # valid on the file's first line only: see _expected_valid


def _overlong_body(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    body = "y" * draw(st.integers(BODY_LIMIT + 1, BODY_LIMIT + 50))
    return _encode({**rec, ("body" if fmt == "jsonl" else "text"): body}, draw)


def _overlong_line(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    pad = "z" * draw(st.integers(LINE_LIMIT + 1, LINE_LIMIT + 100_000))
    return _encode({**rec, "pad": pad}, draw)


def _not_an_object(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    value = draw(st.one_of(st.lists(st.integers(), max_size=3), st.text(), st.integers()))
    return json.dumps(value).encode()


def _truncated(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    line = _encode(rec, draw)
    return line[: draw(st.integers(1, len(line) - 1))]


def _bad_id(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    key = "id" if fmt == "jsonl" else "_id"
    breaker = draw(st.sampled_from(["\n", "\r", "\u2028", "\u2029", "\u0085", "\x00"]))
    return _encode({**rec, key: "doc" + breaker + "x"}, draw)


def _other_tenant(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    return _encode({**rec, "tenant": "demo-B"}, draw)


def _random_bytes(draw: Draw, rec: dict[str, Any], fmt: str) -> bytes:
    raw = draw(st.binary(min_size=1, max_size=200))
    raw = raw.replace(b"\n", b" ")
    return raw if raw.strip() and not raw.startswith(BOM) else b"\x00"


HOSTILE: dict[str, Callable[[Draw, dict[str, Any], str], bytes]] = {
    "deep": _deep,
    "big number": _big_number,
    "NaN": _not_a_number,
    "surrogate": _surrogate,
    "invalid UTF-8": _invalid_utf8,
    "BOM": _bom,
    "overlong body": _overlong_body,
    "overlong line": _overlong_line,
    "not an object": _not_an_object,
    "truncated": _truncated,
    "bad id": _bad_id,
    "random bytes": _random_bytes,
}
JSONL_ONLY = {"boolean version": _bool_version, "other tenant": _other_tenant}


def _file(draw: Draw, fmt: str) -> tuple[bytes, list[str], list[int]]:
    """A file's bytes, the ids its valid lines hold (in order) and its bad lines' numbers."""
    kinds = sorted(HOSTILE) + (sorted(JSONL_ONLY) if fmt == "jsonl" else [])
    makers = {**HOSTILE, **JSONL_ONLY}
    out: list[bytes] = []
    valid: list[str] = []
    bad: list[int] = []
    for i in range(draw(st.integers(1, 10))):
        n = len(out) + 1
        rec = _record(draw, fmt, i)
        kind = draw(st.sampled_from(["valid", "blank", *kinds]))
        if kind == "valid":
            out.append(_encode(rec, draw))
            valid.append(f"doc-{i}")
        elif kind == "blank":
            out.append(draw(st.sampled_from([b"", b"   ", b"\t", b"\r"])))
        else:
            out.append(makers[kind](draw, rec, fmt))
            if kind == "BOM" and n == 1:  # a byte-order mark that starts the file is skipped
                valid.append(f"doc-{i}")
            else:
                bad.append(n)
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    tail = draw(st.sampled_from([b"", ending]))
    return ending.join(out) + tail, valid, bad


def _load(fmt: str, path: Path, report: LoadReport, fail_fast: bool) -> list[str]:
    options = LoadOptions(tenant=TENANT)
    if fmt == "jsonl":
        return [d.id for d in load_jsonl(path, report=report, options=options, fail_fast=fail_fast)]
    docs = load_beir(path.parent, report=report, options=options, fail_fast=fail_fast)
    return [d.id for d in docs]


@settings(
    database=None,
    max_examples=examples(50),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.sampled_from(["jsonl", "beir"]), st.data())
def test_every_hostile_line_is_refused_by_its_number_and_every_valid_line_loads(fmt, data):
    content, valid, bad = _file(data.draw, fmt)
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setattr(jsonlines, "MAX_LINE_BYTES", LINE_LIMIT)
        mp.setattr(documents, "MAX_DOCUMENT_CHARS", BODY_LIMIT)
        path = Path(tmp) / ("corpus.jsonl" if fmt == "beir" else "docs.jsonl")
        path.write_bytes(content)

        report = LoadReport()
        loaded = _load(fmt, path, report, fail_fast=False)  # raises nothing
        assert loaded == valid
        assert [e.line for e in report.errors] == bad, [str(e) for e in report.errors]
        assert all(isinstance(e, IngestError) for e in report.errors)
        assert all(str(e).startswith(f"line {e.line}: ") for e in report.errors)
        assert report.documents == len(valid)

        if bad:  # fail-fast stops at the first bad line, with its number
            with pytest.raises(IngestError) as first:
                _load(fmt, path, LoadReport(), fail_fast=True)
            assert first.value.line == bad[0]
        else:
            assert _load(fmt, path, LoadReport(), fail_fast=True) == valid
