"""Markdown front matter: the ``---`` block at the top of a file, read as metadata. Pure.

A Markdown file may open with a front matter block (Jekyll, Hugo, Obsidian, MkDocs)::

    ---
    title: Kyoto supplier contract
    team: contracts
    year: 2026
    published: 2026-04-01
    draft: false
    tags: [kyoto, accessibility]
    ---
    # Kyoto ...

:func:`split_front_matter` returns its fields and the body after it: the folder loader makes
them the document's metadata, and the block is not part of the text that is chunked and
searched. The block is read by a small parser of the YAML that front matter uses, not by a YAML
library (hybrid-es has no YAML dependency, and a full YAML loader reads far more than metadata
needs): one ``key: value`` a line, with

- a value read as YAML 1.2's core schema reads a plain scalar: ``true``/``false`` (any case of
  those), ``null``/``~``/nothing as null, integers (``2026``; ``007`` stays text) and decimal
  numbers (``1.5``, ``1e3``) as numbers, anything else as text (``2026-04-01`` stays the text a
  ``date`` field takes); ``"double"`` (JSON escapes) or ``'single'`` (``''`` for a quote) quotes
  for text as it is; a `` #`` comment after a plain value is dropped;
- a list as ``[a, b, "c"]``, or as ``- item`` lines under a ``key:`` with nothing after it;
- blank lines and ``#`` comment lines ignored.

Anything else (a nested mapping, a ``|`` or ``>`` block, anchors, tags, a key given twice, an
unclosed block) is refused with its line number, as ValueError: the document is refused with the
reason, and the rest of the folder is ingested. Such metadata belongs in a sidecar
``<file>.meta.json``.
"""

from __future__ import annotations

import json
import re
from typing import Any

FENCE = "---"
CLOSERS = ("---", "...")
MAX_LINES = 1_000
"""Longest front matter block read (lines); an opening fence without a closing one within it
is refused."""

_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_NOT_A_KEY = ("#", "[", "]", "{", "}", "&", "*", "!", "|", ">", "%", "@", "`", ",", "?", "-")
_UNSUPPORTED_START = ("|", ">", "&", "*", "!", "{", "%", "@", "`")


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str]:
    """``text``'s front matter fields (None when it opens with none) and the text after the
    block (``text`` itself when there is none). Raises ValueError naming the line."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != FENCE:
        return None, text
    for n, line in enumerate(lines[1 : MAX_LINES + 1], start=2):
        if line.rstrip() in CLOSERS:
            return parse_block([ln.rstrip("\r\n") for ln in lines[1 : n - 1]]), "".join(lines[n:])
    raise ValueError(
        f"front matter opened on line 1 is not closed by a '---' line within {MAX_LINES} lines"
    )


def parse_block(lines: list[str]) -> dict[str, Any]:
    """The fields of a front matter block's lines (without its fences); line numbers in errors
    count the opening fence as line 1."""
    out: dict[str, Any] = {}
    open_list: str | None = None
    empty: set[str] = set()
    for n, raw in enumerate(lines, start=2):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("- ") or stripped == "-":
            if open_list is None:
                raise _bad(n, "a '- item' line must follow a 'key:' line with no value")
            out[open_list].append(_scalar(stripped[1:].strip(), n))
            empty.discard(open_list)
            continue
        if raw[:1].isspace():
            raise _bad(n, "nested (indented) values are not supported")
        key, value = _key_value(raw, n)
        if key in out:
            raise _bad(n, f"the key {key!r} is given twice")
        open_list = None
        if value == "":
            # 'key:' then '- item' lines is a list; 'key:' alone is null, as in YAML.
            out[key], open_list = [], key
            empty.add(key)
        else:
            out[key] = _value(value, n)
    return {k: (None if k in empty else v) for k, v in out.items()}


def _key_value(raw: str, n: int) -> tuple[str, str]:
    if raw.startswith(('"', "'")):
        end = raw.find(raw[0], 1)
        if end < 0 or raw[end + 1 : end + 2] != ":":
            raise _bad(n, "expected 'key: value'")
        key, rest = raw[1:end], raw[end + 2 :]
    else:
        key, sep, rest = raw.partition(":")
        key = key.strip()
        if not sep or key.startswith(_NOT_A_KEY) or " #" in key:
            raise _bad(n, "expected 'key: value'")
    if rest and rest[0] not in " \t":
        raise _bad(n, "expected 'key: value' (a space after the colon)")
    if not key:
        raise _bad(n, "the key is empty")
    return key, rest.strip()


def _value(text: str, n: int) -> Any:
    if text.startswith("["):
        return _flow_list(text, n)
    return _scalar(text, n)


def _flow_list(text: str, n: int) -> list[Any]:
    text = _strip_comment(text)
    if not text.endswith("]"):
        raise _bad(n, "a '[' list must close with ']' on the same line")
    inner = text[1:-1].strip()
    if not inner:
        return []
    items, current, quote = [], "", ""
    for ch in inner:
        if quote:
            current += ch
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote, current = ch, current + ch
        elif ch == ",":
            items.append(current.strip())
            current = ""
        elif ch in "[]{}":
            raise _bad(n, "nested lists and mappings are not supported")
        else:
            current += ch
    if quote:
        raise _bad(n, "an unclosed quote")
    items.append(current.strip())
    if any(not item for item in items):
        raise _bad(n, "an empty item in a '[' list")
    return [_scalar(item, n) for item in items]


def _scalar(text: str, n: int) -> Any:
    if text.startswith('"'):
        end = _closing_double(text)
        if end < 0 or _strip_comment(text[end + 1 :]):
            raise _bad(n, "a double-quoted value must end with its quote")
        try:
            return json.loads(text[: end + 1])
        except json.JSONDecodeError as exc:
            raise _bad(n, f"not a valid double-quoted value ({exc.msg})") from None
    if text.startswith("'"):
        m = re.match(r"'((?:[^']|'')*)'", text)
        if m is None or _strip_comment(text[m.end() :]):
            raise _bad(n, "a single-quoted value must end with its quote")
        return m.group(1).replace("''", "'")
    text = _strip_comment(text)
    if text.startswith(_UNSUPPORTED_START) or text.startswith("- "):
        raise _bad(n, f"{text[:1]!r} values (blocks, anchors, tags, mappings) are not supported")
    if text.startswith("["):
        raise _bad(n, "nested lists are not supported")
    low = text.lower()
    if low in ("", "null", "~"):
        return None
    if low in ("true", "false"):
        return low == "true"
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def _closing_double(text: str) -> int:
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return -1


def _strip_comment(text: str) -> str:
    """A plain value without its `` #`` comment."""
    m = re.search(r"(^|\s)#", text)
    return (text[: m.start()] if m else text).strip()


def _bad(n: int, problem: str) -> ValueError:
    return ValueError(
        f"front matter line {n}: {problem} (supported: 'key: value' lines, '[a, b]' lists and "
        "'- item' lists; put other metadata in a sidecar <file>.meta.json)"
    )
