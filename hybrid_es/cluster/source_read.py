"""Reading an existing index page by page, as an ingest source: what it is (its concrete indices,
their uuids and shards, its fields' types), a point in time or a scroll over it, sliced, and the
per-shard reads by ``_seq_no``. Each call goes through the source's
:class:`~hybrid_es.cluster.engine.Engine` (``cluster.source_connection``), so the same code reads
Elasticsearch and OpenSearch.

Three ways to read, each a generator of :class:`Page` (the hits of one request and where the next
one starts):

- :func:`pit_pages`: a point in time (Elasticsearch ``/_pit``; OpenSearch
  ``/_search/point_in_time``), ``search_after`` on ``_shard_doc`` (OpenSearch: ``_id``,
  :func:`pit_sort`), and ``slice`` where there is more than one slice. Every slice of a run
  must use the same point in time: slices of one point in time partition its records exactly
  (none twice, none missed), slices of different ones need not. A page's ``after`` resumes the
  read while the point in time lives.
- :func:`scroll_pages`: a scroll (the client helpers' ``scan``), sliced, where the engine has no
  point in time. Scroll slices split by ``_id``, so each record is in the same slice of every
  scroll; a scroll cannot be resumed, only read again.
- :func:`shard_pages`: one shard of one concrete index (``preference=_shards:N``), the records
  whose ``_seq_no`` is above a checkpoint, in ``_seq_no`` order (unique within a shard, so a page's
  ``after`` resumes it exactly, with no point in time).

The privileges this needs on the source are ``read`` (searches, points in time, scrolls, field
capabilities, counts) and ``view_index_metadata`` (the settings: concrete indices, uuids,
shards): :data:`SOURCE_PRIVILEGES`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import EngineError, IndexMissingError

SOURCE_PRIVILEGES = ("read", "view_index_metadata")
"""What reading a source index needs on it, and all it needs (Elasticsearch's names)."""
DATE_TYPES = ("date", "date_nanos")
DEFAULT_PAGE = 500
"""Records per request."""


class PitExpired(EngineError):
    """The point in time of a run is gone (its keep-alive passed, or a node restarted)."""


@dataclass(frozen=True)
class ConcreteIndex:
    """One index behind a source name (an alias or a pattern may have several)."""

    name: str
    uuid: str
    shards: int


@dataclass(frozen=True)
class SourceIndex:
    """What a source name resolves to: its concrete indices and the types of the fields asked
    about (absent: the field is in none of them)."""

    name: str
    indices: tuple[ConcreteIndex, ...]
    field_types: dict[str, str] = field(default_factory=dict)

    @property
    def uuids(self) -> list[str]:
        return sorted(i.uuid for i in self.indices)

    def shards(self) -> list[tuple[str, int]]:
        """Every (concrete index, shard number), in a fixed order."""
        return [
            (i.name, s) for i in sorted(self.indices, key=lambda i: i.name) for s in range(i.shards)
        ]


@dataclass(frozen=True)
class Page:
    """The hits of one request, and the position after its last hit (``after``: the sort values
    for ``search_after``; None when there is nothing after it to resume from)."""

    hits: list[dict[str, Any]]
    after: Any
    pit_id: str | None = None
    """The point in time's id as the engine last returned it (use it for the next request)."""


def describe(engine: Engine, name: str, fields: Sequence[str] = ()) -> SourceIndex:
    """The concrete indices behind ``name`` (their uuids and shard counts: ``view_index_metadata``)
    and the types of ``fields`` (field capabilities: ``read``). Raises IndexMissingError when
    nothing by that name exists."""
    try:
        resp = engine.request(
            "GET",
            f"/{name}/_settings",
            params={
                "filter_path": "*.settings.index.uuid,*.settings.index.number_of_shards",
                "expand_wildcards": "open",
            },
            what=f"reading the source {name}",
        )
    except IndexMissingError:
        raise
    except EngineError as exc:
        if exc.status == 404:
            raise IndexMissingError(
                f"the source index {name!r} does not exist", status=404
            ) from None
        raise
    indices = tuple(
        ConcreteIndex(
            index,
            str(body["settings"]["index"]["uuid"]),
            int(body["settings"]["index"]["number_of_shards"]),
        )
        for index, body in sorted(dict(resp or {}).items())
    )
    if not indices:
        raise IndexMissingError(f"the source {name!r} names no open index", status=404)
    types: dict[str, str] = {}
    wanted = [f for f in fields if not f.startswith("_")]
    if wanted:
        caps = engine.field_caps(name, wanted).get("fields", {})
        for f in wanted:
            kinds = [k for k in caps.get(f, {}) if k != "unmapped"]
            if kinds:
                types[f] = kinds[0] if len(kinds) == 1 else "+".join(sorted(kinds))
    return SourceIndex(name, indices, types)


def count(engine: Engine, name: str, query: dict[str, Any] | None = None) -> int:
    """How many records of ``name`` match ``query`` (all of them without one)."""
    return engine.count(name, query)


# -- points in time ------------------------------------------------------------------------------


def open_pit(engine: Engine, name: str, keep_alive: str) -> str | None:
    """A new point in time over ``name``; None where the engine has none (an OpenSearch before
    2.4, or one whose PIT API is off)."""
    if engine.flavor == "opensearch":
        try:
            resp = engine.request(
                "POST",
                f"/{name}/_search/point_in_time",
                params={"keep_alive": keep_alive},
                what=f"opening a point in time on {name}",
            )
        except EngineError as exc:
            if exc.status in (400, 404, 405) and "point_in_time" in exc.message.lower():
                return None
            raise
        return str(resp["pit_id"])
    resp = engine.request(
        "POST",
        f"/{name}/_pit",
        params={"keep_alive": keep_alive},
        what=f"opening a point in time on {name}",
    )
    return str(resp["id"])


def close_pit(engine: Engine, pit_id: str) -> None:
    """Close a point in time (one that is gone already is no error)."""
    try:
        if engine.flavor == "opensearch":
            engine.request(
                "DELETE",
                "/_search/point_in_time",
                body={"pit_id": [pit_id]},
                what="closing a point in time",
            )
        else:
            engine.request("DELETE", "/_pit", body={"id": pit_id}, what="closing a point in time")
    except EngineError as exc:
        if exc.status != 404:
            raise


def pit_alive(engine: Engine, pit_id: str, keep_alive: str) -> bool:
    """Whether the point in time ``pit_id`` can still be searched (and extend it)."""
    try:
        engine.request(
            "POST",
            "/_search",
            body={"size": 0, "pit": {"id": pit_id, "keep_alive": keep_alive}},
            what="checking a point in time",
        )
    except EngineError as exc:
        if _expired(exc):
            return False
        raise
    return True


def _expired(exc: EngineError) -> bool:
    text = exc.message.lower()
    return exc.status == 404 or "search_context_missing" in text or "no search context" in text


def pit_sort(engine: Engine) -> list[dict[str, Any]]:
    """The sort that pages a point in time, unique per record: Elasticsearch's ``_shard_doc``;
    OpenSearch has none (2.19 answers "No mapping found for [_shard_doc]"), so ``_id`` there,
    which loads the ids of the index as field data on its nodes (heap: a few tens of bytes a
    record); :func:`pit_sortable` tells where that is refused, and a scroll reads instead."""
    return [{"_shard_doc": "asc"}] if engine.flavor == "elasticsearch" else [{"_id": "asc"}]


def pit_sortable(engine: Engine, pit_id: str, keep_alive: str) -> bool:
    """Whether a point in time can be paged by :func:`pit_sort` (an OpenSearch whose
    ``indices.id_field_data.enabled`` is off refuses to sort on ``_id``)."""
    if engine.flavor == "elasticsearch":
        return True
    body = {"size": 1, "pit": {"id": pit_id, "keep_alive": keep_alive}, "sort": pit_sort(engine)}
    try:
        engine.request("POST", "/_search", body=body, what="checking a point in time's sort")
    except EngineError as exc:
        if exc.status == 400:
            return False
        raise
    return True


def slice_body(slice_id: int, slices: int) -> dict[str, Any]:
    """The ``slice`` clause of slice ``slice_id`` of ``slices`` (none for a single slice: the
    engines refuse ``max: 1``)."""
    return {} if slices <= 1 else {"slice": {"id": slice_id, "max": slices}}


def pit_pages(
    engine: Engine,
    pit_id: str,
    *,
    query: dict[str, Any],
    source: list[str] | bool,
    slice_id: int = 0,
    slices: int = 1,
    after: list[Any] | None = None,
    size: int = DEFAULT_PAGE,
    keep_alive: str = "5m",
) -> Iterator[Page]:
    """The pages of slice ``slice_id`` of ``slices`` of the point in time ``pit_id``, from
    ``after`` (a page's own ``after``: while the point in time lives, the read goes on exactly
    where it stopped). Raises :class:`PitExpired` when the point in time is gone."""
    while True:
        body: dict[str, Any] = {
            "size": size,
            "query": query,
            "_source": source,
            "pit": {"id": pit_id, "keep_alive": keep_alive},
            "sort": pit_sort(engine),
            "track_total_hits": False,
            **slice_body(slice_id, slices),
        }
        if after is not None:
            body["search_after"] = after
        try:
            resp = engine.request("POST", "/_search", body=body, what="reading the source")
        except EngineError as exc:
            if _expired(exc):
                raise PitExpired(
                    f"the point in time of this read is gone: {exc.message[:160]}", status=404
                ) from None
            raise
        hits = list(resp["hits"]["hits"])
        pit_id = str(resp.get("pit_id") or pit_id)
        if not hits:
            return
        after = list(hits[-1]["sort"])
        yield Page(hits, after, pit_id)
        if len(hits) < size:
            return


def pit_count(
    engine: Engine,
    pit_id: str,
    *,
    query: dict[str, Any],
    slice_id: int = 0,
    slices: int = 1,
    keep_alive: str = "5m",
) -> int:
    """How many records slice ``slice_id`` of ``slices`` of the point in time holds."""
    body = {
        "size": 0,
        "query": query,
        "pit": {"id": pit_id, "keep_alive": keep_alive},
        "track_total_hits": True,
        **slice_body(slice_id, slices),
    }
    resp = engine.request("POST", "/_search", body=body, what="counting the source")
    return int(resp["hits"]["total"]["value"])


# -- scrolls (where there is no point in time) ---------------------------------------------------


def scroll_pages(
    engine: Engine,
    name: str,
    *,
    query: dict[str, Any],
    source: list[str] | bool,
    slice_id: int = 0,
    slices: int = 1,
    size: int = DEFAULT_PAGE,
    keep_alive: str = "5m",
) -> Iterator[Page]:
    """The pages of slice ``slice_id`` of ``slices`` of a scroll over ``name`` (the client
    helpers' ``scan``, which clears the scroll at the end). Scroll pages cannot be resumed:
    ``after`` is None."""
    body: dict[str, Any] = {"query": query, "_source": source, **slice_body(slice_id, slices)}
    page: list[dict[str, Any]] = []
    for hit in engine.scan(name, body, scroll=keep_alive, size=size):
        page.append(hit)
        if len(page) >= size:
            yield Page(page, None)
            page = []
    if page:
        yield Page(page, None)


# -- one shard by _seq_no --------------------------------------------------------------------------


def shard_pages(
    engine: Engine,
    index: str,
    shard: int,
    *,
    query: dict[str, Any],
    source: list[str] | bool,
    above: int = -1,
    size: int = DEFAULT_PAGE,
) -> Iterator[Page]:
    """The records of shard ``shard`` of the concrete index ``index`` whose ``_seq_no`` is above
    ``above``, in ``_seq_no`` order; a page's ``after`` is ``[its last _seq_no]``."""
    while True:
        body = {
            "size": size,
            "query": {"bool": {"filter": [query, {"range": {"_seq_no": {"gt": above}}}]}},
            "_source": source,
            "sort": [{"_seq_no": "asc"}],
            "seq_no_primary_term": True,
            "track_total_hits": False,
        }
        resp = engine.search(
            index, body, what="reading a source shard", preference=f"_shards:{shard}"
        )
        hits = list(resp["hits"]["hits"])
        if not hits:
            return
        above = int(hits[-1]["_seq_no"])
        yield Page(hits, [above])
        if len(hits) < size:
            return


def shard_count(engine: Engine, index: str, shard: int, query: dict[str, Any], above: int) -> int:
    """How many records :func:`shard_pages` would read."""
    body = {
        "size": 0,
        "query": {"bool": {"filter": [query, {"range": {"_seq_no": {"gt": above}}}]}},
        "track_total_hits": True,
    }
    resp = engine.search(index, body, what="counting a source shard", preference=f"_shards:{shard}")
    return int(resp["hits"]["total"]["value"])


def max_seq_nos(engine: Engine, source: SourceIndex) -> dict[str, int]:
    """The highest ``_seq_no`` of each shard of ``source`` now, keyed ``<index uuid>/<shard>``
    (-1 for an empty shard)."""
    out: dict[str, int] = {}
    for index in source.indices:
        for shard in range(index.shards):
            body = {
                "size": 1,
                "query": {"match_all": {}},
                "_source": False,
                "sort": [{"_seq_no": "desc"}],
                "seq_no_primary_term": True,
                "track_total_hits": False,
            }
            resp = engine.search(
                index.name, body, what="reading a source shard", preference=f"_shards:{shard}"
            )
            hits = resp["hits"]["hits"]
            out[f"{index.uuid}/{shard}"] = int(hits[0]["_seq_no"]) if hits else -1
    return out


def max_value(engine: Engine, name: str, field_name: str, field_type: str) -> Any:
    """The highest value of ``field_name`` in ``name`` now (a date as epoch milliseconds), None
    when no record has one."""
    order: dict[str, Any] = {"order": "desc"}
    if field_type in DATE_TYPES:
        order["numeric_type"] = "date"
    body = {
        "size": 1,
        "query": {"exists": {"field": field_name}},
        "_source": False,
        "sort": [{field_name: order}],
        "track_total_hits": False,
    }
    hits = engine.search(name, body, what="reading the source's last change")["hits"]["hits"]
    return hits[0]["sort"][0] if hits else None


def since_query(field_name: str, field_type: str, value: Any) -> dict[str, Any]:
    """The records whose ``field_name`` is at or after ``value`` (what :func:`max_value` gave):
    at, so that records changed in the same instant as the checkpoint are read again rather than
    missed (an unchanged one costs a read, not an embedding). Pure."""
    bound: dict[str, Any] = {"gte": value}
    if field_type in DATE_TYPES:
        bound["format"] = "epoch_millis"
    return {"range": {field_name: bound}}
