"""How a record of an existing index becomes a :class:`~hybrid_es.ingest.documents.Document`: the
field map of ``--map`` / ``--map-file`` (the same options files have), read the way real indices
hold their fields. Pure.

``SOURCE=TARGET`` names a field of the source record (a dotted path into ``_source``, such as
``meta.owner``; ``_id`` for the record's own id; ``const:VALUE`` for a constant of the whole
source) and what it becomes:

- a :class:`Document` field: ``id`` (default: the record's ``id`` field, else its ``_id``),
  ``title``, ``body``, ``version``, ``version_label``, ``valid_from``, ``valid_to``,
  ``tenant``, ``acl_users``, ``acl_groups``, ... Several sources of ``body`` (or ``title``) are
  joined, in the order given, skipping empty ones: ``--map summary=body --map details=body``.
  A field of the target's own name needs no entry (``title`` is read as ``title``).
- ``metadata.KEY``: the value is kept in the document's metadata under ``KEY`` (a source field
  named ``metadata`` holding an object is its metadata as a whole).
- ``acl``: a nested object of users and groups, ``{"users": [...], "groups": [...]}`` (a list of
  such objects is merged).
- ``modified``: the record's last-modified field (a date or a number), not stored: a sync reads
  only the records at or after the last checkpoint of it (``ingest.sync``).

ACLs and the other list fields (``acl_users``, ``acl_groups``, ``booking_ids``, ...) take the
shapes indices hold them in: a list, a comma-separated string (``"sales, legal"``), or one value;
several sources are united. A constant ACL for the whole source is ``const:sales,legal=acl_groups``.

The tenant comes from a field (``--map org=tenant``) or is the caller's, under the rule files
follow: a record that names another tenant is refused (``other-tenant``), never written. A record
that is not a valid document (no body, a bad id, a version that is not a number) is refused as
``invalid``, with the reason. Every document is marked with its source in
``metadata.source_index``, so that a full sync can tell which of the tenant's documents came from
this source and left it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from hybrid_es.ingest.documents import Document, validation_summary
from hybrid_es.ingest.loaders import LoadOptions, prepare_record

CONST = "const:"
ID = "_id"
SOURCE_KEY = "source_index"
"""The metadata key that names a document's source index."""
EXTRA_TARGETS = ("acl", "modified", "metadata.*")
"""Targets of an index source's field map beside the Document fields."""
LIST_FIELDS = (
    "acl_users",
    "acl_groups",
    "booking_ids",
    "property_ids",
    "contract_ids",
    "room_codes",
)
JOINED = {"body": "\n\n", "title": " "}
"""Targets whose several sources are joined, with what."""
RefusalReason = Literal["other-tenant", "invalid"]


@dataclass(frozen=True)
class Refusal:
    """A record that is not written: why (``other-tenant`` or ``invalid``), its id where it has
    one, and the reason in words."""

    reason: RefusalReason
    doc_id: str | None
    message: str


def _path_value(source: Mapping[str, Any], path: str) -> Any:
    """The value at ``path`` in ``source``: a key of that exact name first (``a.b`` may be a
    flat key), else the dotted walk; a list met on the way is walked element by element."""
    if path in source:
        return source[path]
    head, _, rest = path.partition(".")
    if not rest or head not in source:
        return None
    value = source[head]
    if isinstance(value, Mapping):
        return _path_value(value, rest)
    if isinstance(value, list):
        found = [_path_value(v, rest) for v in value if isinstance(v, Mapping)]
        found = [f for f in found if f is not None]
        return found or None
    return None


def as_list(value: Any) -> list[str] | None:
    """An ACL (or other list field) in any of its shapes as a list of strings: a list (nested
    lists flattened), a comma-separated string, one value; None for no value. Pure."""
    if value is None:
        return None
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, list | tuple):
        out: list[str] = []
        for v in value:
            out.extend(as_list(v) or [])
        return out
    return [str(value)]


def acl_object(value: Any) -> tuple[list[str] | None, list[str] | None]:
    """The users and groups of a nested ACL object (``users``/``groups``, or ``user``/``group``),
    or of a list of them merged. Pure."""
    items = value if isinstance(value, list) else [value]
    users: list[str] | None = None
    groups: list[str] | None = None
    for item in items:
        if not isinstance(item, Mapping):
            continue
        for keys, kind in ((("users", "user"), "users"), (("groups", "group"), "groups")):
            for key in keys:
                if key in item:
                    got = as_list(item[key]) or []
                    if kind == "users":
                        users = [*(users or []), *got]
                    else:
                        groups = [*(groups or []), *got]
    return users, groups


@dataclass(frozen=True)
class SourceMapping:
    """The field map of one source for one caller's tenant. Build it with :meth:`of` (which
    checks the map); :meth:`record` maps one hit."""

    source: str
    """The source's name, kept in every document's ``metadata.source_index``."""
    tenant: str
    """The caller's tenant: the only one written."""
    targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Target -> its sources, in order (defaults included)."""
    version_from_label: bool = False
    explicit: tuple[str, ...] = ()
    """The sources the field map names (not the defaults)."""

    @classmethod
    def of(
        cls,
        source: str,
        tenant: str,
        field_map: Mapping[str, str] | None = None,
        *,
        version_from_label: bool = False,
    ) -> SourceMapping:
        """The mapping of ``field_map`` (source -> target, as ``loaders.read_field_map`` reads
        it with :data:`EXTRA_TARGETS`), with every Document field that no entry targets read from
        the field of its own name. Raises ValueError naming a bad entry."""
        targets: dict[str, list[str]] = {}
        for src, dst in (field_map or {}).items():
            if dst == f"metadata.{SOURCE_KEY}":
                raise ValueError(
                    f"metadata.{SOURCE_KEY} is where hybrid-es names each document's source; "
                    "map the field to another metadata key"
                )
            if dst.startswith("metadata.") and not dst[len("metadata.") :]:
                raise ValueError(f"{src}={dst}: name the metadata key (metadata.KEY)")
            if src.startswith(CONST) and dst in ("id", "modified"):
                raise ValueError(f"{src}={dst}: {dst} cannot be a constant of the whole source")
            if src == ID and dst != "id" and not dst.startswith("metadata."):
                raise ValueError(f"{src}={dst}: the record's _id can only be its id (or metadata)")
            targets.setdefault(dst, []).append(src)
        if len(targets.get("modified", ())) > 1:
            raise ValueError("one field is the last-modified field (modified), not several")
        own = set(field_map.values()) if field_map else set()
        renamed = set(field_map or ())
        for name in Document.model_fields:
            if name in own or name in renamed:
                continue
            targets[name] = ["id", ID] if name == "id" else [name]
        return cls(
            source,
            tenant,
            {k: tuple(v) for k, v in targets.items()},
            version_from_label=version_from_label,
            explicit=tuple(field_map or ()),
        )

    @property
    def modified_field(self) -> str | None:
        """The last-modified field, where the map names one."""
        found = self.targets.get("modified")
        return found[0] if found else None

    @property
    def tenant_field(self) -> str | None:
        """The field that names a record's tenant (None: every record is the caller's)."""
        found = [s for s in self.targets.get("tenant", ()) if not s.startswith(CONST)]
        return found[0] if found else None

    def source_fields(self) -> list[str]:
        """The ``_source`` fields a read asks for: every source the map names (no more)."""
        out = {s for sources in self.targets.values() for s in sources}
        return sorted(s for s in out if not s.startswith(CONST) and s != ID)

    def identity_fields(self) -> list[str]:
        """The ``_source`` fields that a record's id and tenant are read from."""
        return sorted(
            s
            for s in (*self.targets.get("id", ()), *self.targets.get("tenant", ()))
            if not s.startswith(CONST) and s != ID
        )

    def _values(self, hit: Mapping[str, Any], target: str) -> list[Any]:
        src = hit.get("_source") or {}
        out = []
        for path in self.targets.get(target, ()):
            if path.startswith(CONST):
                value: Any = path[len(CONST) :]
            elif path == ID:
                value = hit.get("_id")
            else:
                value = _path_value(src, path)
            if value is not None and value != "" and value != []:
                out.append(value)
        return out

    def identity(self, hit: Mapping[str, Any]) -> tuple[str | None, str]:
        """A record's document id (None where it has none) and tenant (the caller's where it
        names none), read as :meth:`record` reads them."""
        ids = self._values(hit, "id")
        tenants = self._values(hit, "tenant")
        doc_id = _scalar_text(ids[0]) if ids else None
        return doc_id, (_scalar_text(tenants[0]) if tenants else self.tenant) or self.tenant

    def record(self, hit: Mapping[str, Any]) -> Document | Refusal:
        """The document of one hit (``_id``, ``_source``), or why it is refused."""
        data: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        users: list[str] | None = None
        groups: list[str] | None = None
        for target in self.targets:
            values = self._values(hit, target)
            if not values or target == "modified":
                continue
            if target == "acl":
                for v in values:
                    u, g = acl_object(v)
                    users = None if u is None else [*(users or []), *u]
                    groups = None if g is None else [*(groups or []), *g]
            elif target.startswith("metadata."):
                metadata[target[len("metadata.") :]] = values[0]
            elif target == "metadata":
                if isinstance(values[0], Mapping):
                    metadata = {**values[0], **metadata}
            elif target in JOINED:
                data[target] = JOINED[target].join(_text(v) for v in values if _text(v).strip())
            elif target in LIST_FIELDS:
                listed = [x for v in values for x in (as_list(v) or [])]
                data[target] = list(dict.fromkeys(listed))
            elif target in ("id", "tenant", "version_label", "source_type", "jurisdiction"):
                data[target] = _scalar_text(values[0])
            else:
                data[target] = values[0]
        if users is not None:
            data["acl_users"] = list(dict.fromkeys([*data.get("acl_users", []), *users]))
        if groups is not None:
            data["acl_groups"] = list(dict.fromkeys([*data.get("acl_groups", []), *groups]))
        if (data.get("acl_users") is None) != (data.get("acl_groups") is None):
            # One half named: the record states its ACL, the other half is empty (not the
            # default ACL, which is for records that state none).
            data.setdefault("acl_users", [])
            data.setdefault("acl_groups", [])
        data["metadata"] = {**metadata, SOURCE_KEY: self.source}
        doc_id = data.get("id")
        named = data.get("tenant")
        if named is not None and named != self.tenant:
            return Refusal(
                "other-tenant",
                doc_id,
                f"the record names tenant {named!r}, but this sync writes for tenant "
                f"{self.tenant!r}; nothing of it is written",
            )
        try:
            options = LoadOptions(tenant=self.tenant, version_from_label=self.version_from_label)
            return Document.model_validate(prepare_record(data, options))
        except ValidationError as exc:
            return Refusal("invalid", doc_id, f"not a valid document: {validation_summary(exc)}")
        except ValueError as exc:
            return Refusal("invalid", doc_id, str(exc))


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value if v is not None)
    return "" if value is None else str(value)


def _scalar_text(value: Any) -> str:
    if isinstance(value, list):
        return _scalar_text(value[0]) if value else ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def mapped_preview(doc: Document, limit: int = 160) -> dict[str, Any]:
    """What a dry run shows of a mapped document: its fields, the body cut to ``limit``
    characters. Pure."""
    shown = doc.model_dump(mode="json", exclude_defaults=True)
    body = str(shown.get("body", ""))
    if len(body) > limit:
        shown["body"] = body[:limit] + f"... ({len(body)} characters)"
    return shown


def unmapped(mapping: SourceMapping, field_types: Mapping[str, str]) -> list[str]:
    """The source fields the field map names that no concrete index of the source maps (a
    misspelt ``--map``): a dry run shows them, a sync refuses to start. Pure."""
    return sorted(
        s for s in mapping.explicit if not s.startswith(CONST) and s != ID and s not in field_types
    )
