"""Reading JSON safely, a line at a time: a line that cannot be read is refused by its number and
the lines after it are still read.

Every JSON input of the ingest (JSON-lines files, a BEIR ``corpus.jsonl``, folder sidecars,
field-map files) goes through :func:`parse_json`, and JSON-lines files through
:func:`read_json_lines`. A line is refused, never half-read, when it:

- is longer than :data:`MAX_LINE_BYTES` (16 MiB; a document within ``MAX_DOCUMENT_CHARS``
  written as UTF-8 always fits). It is read past in pieces, never held whole;
- is not UTF-8 (the file is read as bytes and each line decoded on its own). A UTF-8 byte-order
  mark at the start of the file is skipped; one anywhere else is refused;
- nests arrays and objects deeper than :data:`MAX_NESTING` levels (counted before parsing, so a
  line of 100,000 ``[`` costs a scan, not a ``RecursionError``);
- is not JSON, including the ``NaN``, ``Infinity`` and ``-Infinity`` that Python's ``json``
  would otherwise read;
- holds a number out of range: a float that overflows (``1e400``) or an integer outside the
  signed 64 bits that Elasticsearch's ``long`` and other JSON readers hold (``10**30``);
- holds a string or key with a lone surrogate (``"\\ud800"``): such text has no UTF-8 form, so
  it could be neither stored nor shown.

Each refusal names the field where it can (``version: 1e400 is out of range ...``).
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import IO, Any

from hybrid_es.errors import IngestError

MIB = 1024 * 1024
MAX_LINE_BYTES = 16 * MIB
"""The longest line read, in bytes without its line ending (16 MiB)."""
MAX_NESTING = 64
"""The deepest nesting of arrays and objects in one line (``{"a": [1]}`` is 2 levels)."""
_READ_PAST = MIB
"""Piece size in which an over-long line is read past."""
_INT64 = (-(2**63), 2**63 - 1)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
"""A JSON string, or an unterminated one up to the end: with the closing quote optional a match
never fails, so the scan is linear (no backtracking on hostile quotes and backslashes)."""
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_SURROGATE = re.compile("[\ud800-\udfff]")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


class _Unreadable:
    """Stands, in a parsed value, for a number that JSON allows but no store can hold; the walk
    after parsing reports it with the field it is in."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _int(text: str) -> int | _Unreadable:
    # The length check first: int() of a 5,000-digit literal is slow, and refused by Python.
    if len(text) <= 20 and _INT64[0] <= (value := int(text)) <= _INT64[1]:
        return value
    shown = text if len(text) <= 40 else f"{text[:12]}...({len(text.lstrip('-'))} digits)"
    return _Unreadable(f"{shown} is out of range: integers must fit in 64 bits")


def _float(text: str) -> float | _Unreadable:
    value = float(text)
    if math.isfinite(value):
        return value
    shown = text if len(text) <= 30 else f"{text[:20]}..."
    return _Unreadable(f"{shown} is out of range: it overflows a 64-bit float")


def _constant(text: str) -> _Unreadable:
    return _Unreadable(f"{text} is not a JSON number; give a number or null")


def nesting_depth(text: str, limit: int = MAX_NESTING) -> int:
    """How deep arrays and objects nest in the JSON ``text`` (outside its strings), counted
    without parsing; a count above ``limit`` may stop early at ``limit + 1``. For text that is
    not JSON the count is of its brackets, which is all a refusal needs. Pure."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    opening = brackets.count("[") + brackets.count("{")
    if opening <= limit:  # the usual case: too few brackets to nest too deep
        return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
    depth = 0
    deepest = 0
    for c in brackets:
        depth += _STEP[c]
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest


def _where(path: str) -> str:
    return path or "the value"


def _key(path: str, key: str) -> str:
    part = key if _PLAIN_KEY.fullmatch(key) else ascii(key)
    return f"{path}.{part}" if path else part


def _check_values(value: Any, path: str = "") -> None:
    """Raises ValueError naming the first field (``metadata.score``, ``acl_groups[2]``) whose
    value no store can hold: an unreadable number or a string with a lone surrogate."""
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise ValueError(
                f"{_where(path)} holds a lone surrogate (a \\ud800-\\udfff escape not part of a "
                "pair): such text has no UTF-8 form; fix the escape or remove it"
            )
    elif isinstance(value, _Unreadable):
        raise ValueError(f"{_where(path)}: {value.reason}")
    elif isinstance(value, dict):
        for k, v in value.items():
            if _SURROGATE.search(k):
                raise ValueError(
                    f"a key in {_where(path)} holds a lone surrogate (a \\ud800-\\udfff escape "
                    "not part of a pair): such text has no UTF-8 form; fix the escape"
                )
            _check_values(v, _key(path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_values(v, f"{path}[{i}]")


def parse_json(text: str) -> Any:
    """The JSON value of ``text``, checked as the module docstring says (nesting, NaN and
    Infinity, number ranges, lone surrogates). Raises ValueError saying what is wrong, naming
    the field where there is one (``json.JSONDecodeError``, a ValueError, for text that is not
    JSON). Pure."""
    depth = nesting_depth(text)
    if depth > MAX_NESTING:
        raise ValueError(
            f"nested deeper than {MAX_NESTING} levels of arrays and objects; flatten it"
        )
    try:
        value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError as exc:  # not expected under MAX_NESTING; refused all the same
        raise ValueError(f"nested too deeply to read (over {MAX_NESTING} levels)") from exc
    _check_values(value)
    return value


def describe_json_error(exc: ValueError) -> str:
    """A one-line reason for a :func:`parse_json` refusal: ``malformed JSON: ... (column N)``
    for text that is not JSON, else the refusal's own message. Pure."""
    if isinstance(exc, json.JSONDecodeError):
        if exc.msg.startswith("Unexpected UTF-8 BOM"):
            return (
                "a byte-order mark starts this line (only the file's first line may have one: "
                "were files joined?); remove it"
            )
        return f"malformed JSON: {exc.msg} (column {exc.colno})"
    return str(exc)


def _size(n: int) -> str:
    if n and n % MIB == 0:
        return f"{n // MIB} MiB"
    return f"{n / MIB:.1f} MiB ({n:,} bytes)" if n >= MIB else f"{n:,} bytes"


def _without_ending(raw: bytes) -> bytes:
    if raw.endswith(b"\r\n"):
        return raw[:-2]
    return raw[:-1] if raw.endswith(b"\n") else raw


def _raw_lines(fh: IO[bytes]) -> Iterator[tuple[int, bytes | int]]:
    """``(line number, the line's bytes without its LF or CRLF)`` per line of ``fh``, or ``(line
    number, its size in bytes)`` for a line over :data:`MAX_LINE_BYTES`, read past in pieces."""
    limit = MAX_LINE_BYTES
    n = 0
    while raw := fh.readline(limit + 2):  # room for the limit and a CRLF
        n += 1
        if raw.endswith(b"\n") or len(raw) <= limit:
            body = _without_ending(raw)
            yield n, (body if len(body) <= limit else len(body))
            continue
        size = len(raw)
        tail = raw[-1:]
        while piece := fh.readline(_READ_PAST):
            size += len(piece)
            tail = (tail + piece)[-2:]
            if piece.endswith(b"\n"):
                break
        yield n, size - (len(tail) - len(_without_ending(tail)))


def read_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` per non-blank line of the JSON-lines file ``path``, where value
    is the line's parsed JSON (:func:`parse_json`) or, for a line that cannot be read, an
    :class:`IngestError` carrying its line number and why (the lines after it are still read).
    Raises IngestError only when the file itself cannot be opened or read."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc}") from exc
    with fh:
        try:
            yield from _json_lines(path, fh)
        except OSError as exc:
            raise IngestError(f"cannot read {path}: {exc}") from exc


def _json_lines(path: Path, fh: IO[bytes]) -> Iterator[tuple[int, Any]]:
    for n, raw in _raw_lines(fh):
        if n == 1 and isinstance(raw, bytes) and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        if isinstance(raw, bytes) and not raw.strip():
            continue
        yield n, _line_value(path, n, raw)


def _line_value(path: Path, n: int, raw: bytes | int) -> Any:
    """Line ``n``'s parsed JSON, or the IngestError that refuses it."""
    if isinstance(raw, int):
        return IngestError(
            f"{path}: the line is {_size(raw)}; the limit is {_size(MAX_LINE_BYTES)}",
            line=n,
            hint="split the document into smaller ones",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return IngestError(
            f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})",
            line=n,
            hint="re-encode the file as UTF-8",
        )
    try:
        return parse_json(text)
    except ValueError as exc:
        return IngestError(f"{path}: {describe_json_error(exc)}", line=n)
