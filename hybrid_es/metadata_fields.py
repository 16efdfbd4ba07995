"""A document's own metadata: what can be stored, and the fields declared filterable. Pure.

**Stored metadata.** A document's ``metadata`` (a JSONL line's ``metadata``, a file's ``path``,
a Markdown file's front matter) is copied onto each of its chunks as it is, in a field that is
stored and never indexed (``metadata``: ``enabled: false`` in the chunks mapping), so the
engine never parses its keys: any key is kept, dots and leading underscores included. What
cannot be stored is refused, per document, by :func:`check_metadata`: a value that is not JSON
(binary, a set, an object), ``NaN`` or infinity, an integer outside 64 bits, text that is not
valid Unicode (a lone surrogate), nesting deeper than :data:`MAX_METADATA_DEPTH`, or more than
:data:`MAX_METADATA_BYTES` in all (the metadata is copied onto every chunk). A date or
date-time becomes its ISO 8601 text, a tuple a list.

**Filterable fields.** A deployment declares which top-level metadata keys can be filtered on,
with a type each (``HYBRID_ES_FILTERABLE_FIELDS=team:keyword,year:number,published:date,
draft:boolean``: :func:`parse_filterable_fields`). Bootstrap maps them, typed, under
:data:`FILTER_OBJECT` in the chunks indices (``meta_filter.team``: ``cluster.templates``), the
ingest writes each document's values there after :func:`filter_values` checked their types
(a value of the wrong type refuses the document, with the reason), and a search's filter may
name them and nothing else (``retrieval.filters``). A declared name is 1-64 ASCII letters,
digits, ``_`` or ``-``, starting with a letter (no dots: a dot would be a path in the
mapping), and never one of the policy's fields (:data:`POLICY_FIELDS`): who may see a record
is the principal's and the request scope's to decide, never a filter's.

=========  =============  ===============================================================
type       mapped as      a value
=========  =============  ===============================================================
keyword    ``keyword``    text, at most :data:`MAX_KEYWORD_BYTES` UTF-8 bytes, matched exactly
number     ``double``     an integer or a finite number, never a boolean
date       ``date``       ISO 8601 text: ``2026-04-01``, ``2026-04-01T09:30:00Z``,
                          ``2026-04-01T09:30:00.5+02:00`` (no zone: UTC); a date object
boolean    ``boolean``    ``true`` or ``false`` (never the text ``"true"``)
=========  =============  ===============================================================

A stored value may also be a list of such values (a document with several teams): a filter
matches when any of them does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, cast, get_args

from hybrid_es.errors import ConfigurationError

FieldType = Literal["keyword", "number", "date", "boolean"]
FIELD_TYPES: tuple[FieldType, ...] = get_args(FieldType)

FILTER_OBJECT = "meta_filter"
"""The chunk field whose typed sub-fields hold the declared metadata values
(``meta_filter.<name>``); ``metadata`` itself stays stored only."""

MAPPED_AS: dict[FieldType, str] = {
    "keyword": "keyword",
    "number": "double",
    "date": "date",
    "boolean": "boolean",
}
"""Each declared type's field type in the chunks mapping."""

_FROM_MAPPING: dict[str, FieldType] = {
    "keyword": "keyword",
    "double": "number",
    "float": "number",
    "half_float": "number",
    "scaled_float": "number",
    "long": "number",
    "integer": "number",
    "short": "number",
    "byte": "number",
    "date": "date",
    "boolean": "boolean",
}

POLICY_FIELDS = frozenset(
    {
        "tenant",
        "acl_users",
        "acl_groups",
        "deleted",
        "embargo_until",
        "retention_until",
        "valid_from",
        "valid_to",
        "version",
        "version_label",
        "superseded_by",
        "booking_ids",
        "property_ids",
        "source_type",
        "jurisdiction",
    }
)
"""The chunk fields the policy filter reads (``retrieval.policy``), and the version's label:
never a declared filterable name, never a filter's field."""

ENV_NAME = "HYBRID_ES_FILTERABLE_FIELDS"
MAX_FILTERABLE_FIELDS = 64
MAX_KEYWORD_BYTES = 8_192
"""A keyword value's limit, well under Lucene's 32,766 bytes for one term (a longer term
fails the whole document's write)."""
MAX_VALUES = 1_024
"""The most values one declared field of one document may hold (a list)."""
MAX_METADATA_DEPTH = 16
MAX_METADATA_BYTES = 65_536
"""The most a document's metadata may take as JSON: it is copied onto every chunk."""
_INT64 = (-(2**63), 2**63 - 1)

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
_DATE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-](\d{2}):(\d{2}))?)?"
)


@dataclass(frozen=True)
class FilterableField:
    """One declared filterable metadata field: its name and type."""

    name: str
    type: FieldType

    @property
    def path(self) -> str:
        """Where the chunks index holds its values: ``meta_filter.<name>``."""
        return f"{FILTER_OBJECT}.{self.name}"

    def __str__(self) -> str:
        return f"{self.name}:{self.type}"


FilterableFields = tuple[FilterableField, ...]


def parse_filterable_fields(value: Any) -> FilterableFields:
    """The declared fields from ``HYBRID_ES_FILTERABLE_FIELDS`` text (``team:keyword,
    year:number``; empty: none), a mapping of name to type, or an iterable of
    :class:`FilterableField` or ``name:type`` strings.

    Raises ConfigurationError naming the entry: a name that is not 1-64 ASCII letters, digits,
    ``_`` or ``-`` starting with a letter, a policy field's name, a type other than keyword,
    number, date or boolean, a name declared twice, more than :data:`MAX_FILTERABLE_FIELDS`."""
    if value is None:
        return ()
    if isinstance(value, str):
        entries: list[Any] = [e for e in (p.strip() for p in value.split(",")) if e]
    elif isinstance(value, Mapping):
        entries = [f"{k}:{v}" for k, v in value.items()]
    elif isinstance(value, Iterable):
        entries = list(value)
    else:
        raise _config(f"expected text such as 'team:keyword,year:number', got {_kind(value)}")
    out: list[FilterableField] = []
    for entry in entries:
        field = entry if isinstance(entry, FilterableField) else _entry(entry)
        _check_name(field.name)
        if field.type not in FIELD_TYPES:
            raise _config(f"{field.name}: unknown type {field.type!r}; use {_types()}")
        if any(f.name == field.name for f in out):
            raise _config(f"{field.name} is declared twice")
        out.append(field)
    if len(out) > MAX_FILTERABLE_FIELDS:
        raise _config(f"{len(out)} fields declared; at most {MAX_FILTERABLE_FIELDS}")
    return tuple(out)


def _entry(entry: Any) -> FilterableField:
    if not isinstance(entry, str):
        raise _config(f"expected 'name:type' entries, got {_kind(entry)}")
    name, sep, kind = (p.strip() for p in entry.partition(":"))
    if not sep or not name or not kind:
        raise _config(f"{entry!r} is not name:type (e.g. team:keyword; types: {_types()})")
    if kind not in FIELD_TYPES:
        raise _config(f"{name}: unknown type {kind!r}; use {_types()}")
    return FilterableField(name, kind)


def _check_name(name: str) -> None:
    if name in POLICY_FIELDS:
        raise _config(
            f"{name} is a policy field: who may see a record is decided by the caller's "
            "principal and request scope, never by a filter; declare another metadata key"
        )
    if not _NAME.fullmatch(name):
        raise _config(
            f"{name!r} is not a filterable name: 1-64 ASCII letters, digits, '_' or '-', "
            "starting with a letter (no dots)"
        )


def _config(problem: str) -> ConfigurationError:
    return ConfigurationError(
        f"invalid {ENV_NAME}: {problem}",
        hint="declare fields as name:type, comma-separated, e.g. "
        "team:keyword,year:number,published:date,draft:boolean",
    )


def _types() -> str:
    return ", ".join(FIELD_TYPES)


def describe(fields: Sequence[FilterableField]) -> str:
    """``team (keyword), year (number)``, or ``none`` when nothing is declared."""
    return ", ".join(f"{f.name} ({f.type})" for f in fields) or "none"


def fields_from_mapping(
    meta_filter: Mapping[str, Any] | None, *, index: str = ""
) -> FilterableFields:
    """The filterable fields an index maps: the ``properties`` of its ``meta_filter`` field (as
    ``GET <index>/_mapping`` returns it; None or empty: none), in name order. Raises
    ConfigurationError for a sub-field of a type hybrid-es cannot fill (mapped by hand)."""
    out = []
    for name, spec in sorted(((meta_filter or {}).get("properties") or {}).items()):
        kind = _FROM_MAPPING.get(str((spec or {}).get("type", "object")))
        if kind is None:
            raise ConfigurationError(
                f"index {index or '?'} maps {FILTER_OBJECT}.{name} as "
                f"{(spec or {}).get('type', 'an object')!r}, which hybrid-es cannot fill",
                hint=f"map it as one of {', '.join(sorted(set(MAPPED_AS.values())))} "
                "(`hybrid-es bootstrap` does), or re-create the index",
            )
        out.append(FilterableField(name, kind))
    return tuple(out)


# -- values of declared fields --------------------------------------------------------------


def value_problem(kind: FieldType, value: Any) -> str | None:
    """Why ``value`` is not one value of a ``kind`` field (None: it is one)."""
    if kind == "keyword":
        if not isinstance(value, str):
            return f"needs text, got {_kind(value)}"
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            return "needs valid Unicode text (it holds a lone surrogate)"
        if size > MAX_KEYWORD_BYTES:
            return f"takes at most {MAX_KEYWORD_BYTES} UTF-8 bytes, got {size}"
        return None
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"needs a number, got {_kind(value)}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"needs a finite number, got {value}"
        return None
    if kind == "boolean":
        return None if isinstance(value, bool) else f"needs true or false, got {_kind(value)}"
    if isinstance(value, datetime | date):
        return None
    if not isinstance(value, str):
        return f"needs an ISO 8601 date, got {_kind(value)}"
    return None if _is_iso_date(value) else f"needs an ISO 8601 date, got {_kind(value)}"


def as_stored(kind: FieldType, value: Any) -> Any:
    """A value already checked by :func:`value_problem`, as JSON (a date object: ISO text)."""
    if kind == "date" and isinstance(value, datetime | date):
        return value.isoformat()
    return value


def filter_values(metadata: Mapping[str, Any], fields: Sequence[FilterableField]) -> dict[str, Any]:
    """The ``meta_filter`` object of a document: each declared field the metadata holds (not
    null, not an empty list), checked against its type; a list holds values of that type.

    Raises ValueError naming the field, its declared type and what it holds instead."""
    out: dict[str, Any] = {}
    for f in fields:
        value = metadata.get(f.name)
        if value is None or (isinstance(value, list | tuple) and not value):
            continue
        values = list(value) if isinstance(value, list | tuple) else [value]
        if len(values) > MAX_VALUES:
            raise ValueError(
                f"metadata.{f.name} holds {len(values)} values; a filterable field holds at "
                f"most {MAX_VALUES}"
            )
        for v in values:
            problem = value_problem(f.type, v)
            if problem:
                raise ValueError(
                    f"metadata.{f.name} is declared filterable as {f.type} ({ENV_NAME}) and "
                    f"{problem}: store a {f.type} value there, or leave the field out"
                )
        stored = [as_stored(f.type, v) for v in values]
        out[f.name] = stored if isinstance(value, list | tuple) else stored[0]
    return out


def _is_iso_date(text: str) -> bool:
    m = _DATE.fullmatch(text)
    if m is None:
        return False
    y, mo, d, h, mi, s, _frac, zone, zh, zm = m.groups()
    try:
        datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0))
    except ValueError:
        return False
    return zone in (None, "Z") or (int(zh) <= 18 and int(zm) < 60)


def _kind(value: Any) -> str:
    """What a value is, for a message: its JSON kind, and a short view of a scalar."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:39] + "…"
        return f"the text {shown!r}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


# -- what can be stored -------------------------------------------------------------------------


def check_metadata(value: Any) -> dict[str, Any]:
    """``value`` as a document's stored metadata: a JSON object (None: empty), date and
    date-time values as ISO 8601 text, tuples as lists.

    Raises ValueError naming the key path and what cannot be stored there (see the module
    docstring)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"metadata must be a JSON object, got {_kind(value)}")
    out = _json(value, "metadata", 1)
    size = len(json.dumps(out, ensure_ascii=False).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(
            f"metadata takes {size:,} bytes as JSON; the limit is {MAX_METADATA_BYTES:,} "
            "(it is copied onto every chunk): keep large content in the body"
        )
    return cast(dict[str, Any], out)


def _json(value: Any, where: str, depth: int) -> Any:
    if isinstance(value, Mapping):
        if depth > MAX_METADATA_DEPTH:
            raise ValueError(f"{where}: nested deeper than {MAX_METADATA_DEPTH} levels")
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: key {k!r} is not text (JSON keys are text)")
            _text(k, f"{where}: key")
            out[k] = _json(v, f"{where}.{k}", depth + 1)
        return out
    if isinstance(value, list | tuple):
        if depth > MAX_METADATA_DEPTH:
            raise ValueError(f"{where}: nested deeper than {MAX_METADATA_DEPTH} levels")
        return [_json(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"{where}: the integer {value} is outside 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value} is not a JSON number")
        return value
    if isinstance(value, str):
        _text(value, where)
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        raise ValueError(f"{where}: binary data cannot be stored; encode it as text (base64)")
    raise ValueError(f"{where}: {type(value).__name__!r} is not a JSON value")


def _text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{where}: not valid Unicode ({exc.reason} at {exc.start})") from None
