"""The engine seam's calls: what the product asks of a cluster (documents, indices, templates, the
node), each one an :class:`ApiCall` that names both the clients' typed method and the REST request
it is.

:class:`EngineCalls` writes every call once, for both flavours, over two primitives that
``cluster.engine.Engine`` provides: ``call`` (a typed call) and ``request`` (a bare REST one).
Each flavour's client, and connecting to a cluster, live in ``cluster.engine``.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from hybrid_es.cluster import guard as chunks_guard
from hybrid_es.errors import EngineError, translate_es_error

Flavor = Literal["elasticsearch", "opensearch"]


@dataclass(frozen=True)
class ApiCall:
    """One cluster call in both of its forms: the clients' typed method ``api`` (``search``,
    ``indices.refresh``: the same name on elasticsearch-py and opensearch-py) with its path parts
    ``parts`` (``index=``, ``id=``), and the REST request it is, ``method`` ``path``. ``params``
    are URL parameters as the REST API spells them (``_source_includes``; None left out);
    ``body`` a JSON body, or for ``msearch`` the list of NDJSON lines.

    The chunks guard reads the REST form, whichever form is sent; an engine that knows only the
    REST primitive (a wrapper, a test double) sends that form."""

    api: str
    method: str
    path: str
    parts: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None

    def rest_body(self) -> Any:
        """The body as a bare request sends it: a list of lines as NDJSON text."""
        if isinstance(self.body, list):
            return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in self.body)
        return self.body

    def typed_body(self) -> Any:
        """The body for a typed method: a copy (elasticsearch-py may merge parameters into a
        body it is given), or None."""
        if isinstance(self.body, dict):
            return dict(self.body)
        return list(self.body) if isinstance(self.body, list) else self.body


class EngineCalls(ABC):
    """The cluster operations hybrid-es uses, each written once over :meth:`call` and
    :meth:`request`; ``cluster.engine.Engine`` provides both, and the client (``raw``) and
    guards (``guarded``, ``guarded_traces``) they go through."""

    raw: Any
    url: str
    guarded: tuple[str, ...]
    guarded_traces: tuple[str, ...]

    @abstractmethod
    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        what: str = "request",
        opaque_id: str | None = None,
    ) -> Any:
        """One REST call; the JSON it answers, or a package error."""

    @abstractmethod
    def call(self, call: ApiCall, *, what: str, opaque_id: str | None = None) -> Any:
        """One call through the client's typed method; the JSON it answers, or a package
        error."""

    @abstractmethod
    def _helpers(self) -> Any:
        """The client's bulk and scan helpers module."""

    # -- documents -------------------------------------------------------------------------

    def get(
        self, index: str, id: str, *, source_includes: Sequence[str] | None = None
    ) -> dict[str, Any] | None:
        """A document (real-time), with ``_source``, ``_seq_no`` and ``_primary_term``; None
        when it, or its index, does not exist."""
        params = {"_source_includes": ",".join(source_includes)} if source_includes else {}
        path = f"/{_p(index)}/_doc/{_p(id)}"
        try:
            doc = self.call(
                ApiCall("get", "GET", path, {"index": index, "id": id}, params),
                what="reading a document",
            )
        except EngineError as exc:
            if exc.status == 404:
                return None
            raise
        return dict(doc) if doc.get("found") else None

    def exists(self, index: str, id: str) -> bool:
        return self.get(index, id, source_includes=["_none_"]) is not None

    def mget(
        self, index: str, ids: Sequence[str], *, source_includes: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """One entry per id, in order: found, not found, or an ``error`` of its own."""
        params = {"_source_includes": ",".join(source_includes)} if source_includes else {}
        path = f"/{_p(index)}/_mget"
        body = {"ids": list(ids)}
        resp = self.call(
            ApiCall("mget", "POST", path, {"index": index}, params, body),
            what="reading documents",
        )
        return list(resp["docs"])

    def index(
        self,
        index: str,
        document: dict[str, Any],
        *,
        id: str | None = None,
        op_type: str | None = None,
        if_seq_no: int | None = None,
        if_primary_term: int | None = None,
        refresh: str | None = None,
        what: str = "writing a document",
    ) -> dict[str, Any]:
        """Write one document; VersionConflictError when ``op_type="create"`` finds it there, or
        ``if_seq_no`` finds it changed."""
        params = {
            "op_type": op_type,
            "if_seq_no": if_seq_no,
            "if_primary_term": if_primary_term,
            "refresh": refresh,
        }
        path = f"/{_p(index)}/_doc" + (f"/{_p(id)}" if id is not None else "")
        parts = {"index": index, **({"id": id} if id is not None else {})}
        method = "PUT" if id else "POST"
        return dict(self.call(ApiCall("index", method, path, parts, params, document), what=what))

    def update(
        self, index: str, id: str, doc: dict[str, Any], *, refresh: str | None = None
    ) -> None:
        path = f"/{_p(index)}/_update/{_p(id)}"
        parts = {"index": index, "id": id}
        self.call(
            ApiCall("update", "POST", path, parts, {"refresh": refresh}, {"doc": doc}),
            what="updating a document",
        )

    def delete(self, index: str, id: str, *, refresh: str | None = None) -> None:
        path = f"/{_p(index)}/_doc/{_p(id)}"
        parts = {"index": index, "id": id}
        self.call(
            ApiCall("delete", "DELETE", path, parts, {"refresh": refresh}),
            what="deleting a document",
        )

    def count(self, index: str, query: dict[str, Any] | None = None) -> int:
        body = {"query": query} if query is not None else None
        path = f"/{_p(index)}/_count"
        resp = self.call(
            ApiCall("count", "POST", path, {"index": index}, {}, body), what="counting"
        )
        return int(resp["count"])

    def search(
        self,
        index: str,
        body: dict[str, Any],
        *,
        what: str = "search",
        opaque_id: str | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """One search; ``params`` are URL parameters (``ignore_unavailable``,
        ``allow_no_indices``, ...); ``opaque_id`` as in :meth:`request`."""
        path = f"/{_p(index)}/_search"
        call = ApiCall("search", "POST", path, {"index": index}, params, body)
        return dict(self.call(call, what=what, opaque_id=opaque_id))

    def msearch(
        self, searches: list[dict[str, Any]], *, opaque_id: str | None = None, **params: Any
    ) -> list[dict[str, Any]]:
        """Several searches in one request (header, body, header, body, ...): their responses.
        ``opaque_id`` as in :meth:`request`."""
        call = ApiCall("msearch", "POST", "/_msearch", {}, params, list(searches))
        return list(self.call(call, what="search", opaque_id=opaque_id)["responses"])

    def scan(self, index: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every hit of a query, paged with the client helpers' scroll."""
        chunks_guard.check(f"/{index}/_search", self.guarded)
        chunks_guard.check(f"/{index}/_search", self.guarded_traces, door="traces")
        try:
            yield from self._helpers().scan(self.raw, index=index, query=body)
        except Exception as exc:
            raise translate_es_error(exc, url=self.url, what="reading documents") from exc

    def streaming_bulk(
        self, actions: Iterable[dict[str, Any]], **kwargs: Any
    ) -> Iterator[tuple[bool, dict[str, Any]]]:
        """The client helpers' streaming bulk (back-off on 429s with ``max_retries``); raises
        the client's own errors, for the caller to translate where it decides."""
        yield from self._helpers().streaming_bulk(self.raw, actions, **kwargs)

    def bulk(self, actions: Iterable[dict[str, Any]], **kwargs: Any) -> tuple[int, Any]:
        return self._helpers().bulk(self.raw, actions, **kwargs)  # type: ignore[no-any-return]

    # -- indices ---------------------------------------------------------------------------

    def _indices(
        self,
        api: str,
        method: str,
        index: str,
        suffix: str = "",
        *,
        what: str,
        params: dict[str, Any] | None = None,
        body: Any = None,
    ) -> Any:
        """One ``indices.<api>`` call on ``index`` (REST: ``method /index<suffix>``)."""
        path = f"/{_p(index)}{suffix}"
        call = ApiCall(f"indices.{api}", method, path, {"index": index}, params or {}, body)
        return self.call(call, what=what)

    def index_exists(self, index: str) -> bool:
        try:
            self._indices("exists", "HEAD", index, what="checking an index")
        except EngineError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def create_index(self, index: str, body: dict[str, Any] | None = None) -> bool:
        """Create ``index`` (its templates apply); False when it exists already."""
        try:
            self._indices("create", "PUT", index, body=body, what=f"creating {index}")
        except EngineError as exc:
            if exc.status == 400 and "resource_already_exists" in exc.message:
                return False
            raise
        return True

    def delete_index(self, index: str) -> None:
        self._indices(
            "delete",
            "DELETE",
            index,
            params={"ignore_unavailable": True, "allow_no_indices": True},
            what=f"deleting {index}",
        )

    def refresh(self, index: str) -> None:
        self._indices("refresh", "POST", index, "/_refresh", what=f"refreshing {index}")

    def get_mapping(self, index: str) -> dict[str, Any]:
        """Index name -> its ``mappings``."""
        resp = self._indices("get_mapping", "GET", index, "/_mapping", what=f"reading {index}")
        return {name: body.get("mappings", {}) for name, body in dict(resp).items()}

    def field_caps(self, index: str, fields: Sequence[str]) -> dict[str, Any]:
        """The ``_field_caps`` of ``fields`` in ``index``, unmapped ones included: the types a
        caller who may read an index (``read``), but not its mapping, can learn."""
        call = ApiCall(
            "field_caps",
            "GET",
            f"/{_p(index)}/_field_caps",
            {"index": index},
            # A list, not one comma-joined string: elasticsearch-py sends `fields` in the body,
            # where one string is one field name.
            {"fields": list(fields), "include_unmapped": True},
        )
        return dict(self.call(call, what=f"reading the field types of {index}"))

    def put_mapping(self, index: str, body: dict[str, Any]) -> None:
        self._indices("put_mapping", "PUT", index, "/_mapping", body=body, what=f"updating {index}")

    def put_settings(self, index: str, settings: dict[str, Any]) -> None:
        self._indices(
            "put_settings", "PUT", index, "/_settings", body=settings, what=f"updating {index}"
        )

    def close_index(self, index: str) -> None:
        self._indices("close", "POST", index, "/_close", what=f"closing {index}")

    def open_index(self, index: str) -> None:
        self._indices(
            "open",
            "POST",
            index,
            "/_open",
            params={"wait_for_active_shards": 1},
            what=f"opening {index}",
        )

    def indices(self, pattern: str) -> list[str]:
        """The open indices matching ``pattern`` (none: an empty list)."""
        resp = self._indices(
            "get",
            "GET",
            pattern,
            params={
                "expand_wildcards": "open",
                "allow_no_indices": True,
                "ignore_unavailable": True,
                "filter_path": "*.settings.index.provided_name",
            },
            what="listing indices",
        )
        return sorted(resp or {})

    def simulate_index_template(self, index: str) -> dict[str, Any]:
        """What the installed templates give a new index of this name."""
        path = f"/_index_template/_simulate_index/{_p(index)}"
        call = ApiCall("indices.simulate_index_template", "POST", path, {"name": index})
        return dict(self.call(call, what="simulating templates"))

    def health(self, index: str | None = None, **params: Any) -> dict[str, Any]:
        path = "/_cluster/health" + (f"/{_p(index)}" if index else "")
        parts = {"index": index} if index else {}
        call = ApiCall("cluster.health", "GET", path, parts, params)
        return dict(self.call(call, what="reading cluster health"))

    # -- templates -------------------------------------------------------------------------

    def _template(self, api: str, method: str, kind: str, name: str, body: Any = None) -> Any:
        """One ``<api>`` call on the template ``name`` (REST: ``method /_<kind>/name``)."""
        call = ApiCall(api, method, f"/_{kind}/{_p(name)}", {"name": name}, {}, body)
        return self.call(call, what="installing a template" if body else "reading a template")

    def get_component_template(self, name: str) -> dict[str, Any] | None:
        try:
            resp = self._template(
                "cluster.get_component_template", "GET", "component_template", name
            )
        except EngineError as exc:
            if exc.status == 404:
                return None
            raise
        return dict(resp["component_templates"][0]["component_template"])

    def put_component_template(self, name: str, body: dict[str, Any]) -> None:
        self._template("cluster.put_component_template", "PUT", "component_template", name, body)

    def get_index_template(self, name: str) -> dict[str, Any] | None:
        try:
            resp = self._template("indices.get_index_template", "GET", "index_template", name)
        except EngineError as exc:
            if exc.status == 404:
                return None
            raise
        return dict(resp["index_templates"][0]["index_template"])

    def put_index_template(self, name: str, body: dict[str, Any]) -> None:
        self._template("indices.put_index_template", "PUT", "index_template", name, body)

    def get_search_pipeline(self, name: str) -> dict[str, Any] | None:
        """An OpenSearch search pipeline's body; None when it is not installed."""
        try:
            resp = self.request("GET", f"/_search/pipeline/{_p(name)}", what="reading a pipeline")
        except EngineError as exc:
            if exc.status == 404:
                return None
            raise
        return dict(resp.get(name, {})) or None

    def put_search_pipeline(self, name: str, body: dict[str, Any]) -> None:
        self.request(
            "PUT", f"/_search/pipeline/{_p(name)}", body=body, what="installing a search pipeline"
        )

    # -- the node --------------------------------------------------------------------------

    def node_info(self) -> dict[str, Any]:
        """The local node's version, modules and plugins."""
        params = {"filter_path": "nodes.*.version,nodes.*.modules.name,nodes.*.plugins.name"}
        call = ApiCall("nodes.info", "GET", "/_nodes/_local", {"node_id": "_local"}, params)
        resp = self.call(call, what="reading node info")
        return dict(next(iter(resp.get("nodes", {}).values()), {}))

    def analyzer_works(self, analyzer: str) -> bool:
        body = {"analyzer": analyzer, "text": "probe"}
        try:
            self.call(
                ApiCall("indices.analyze", "POST", "/_analyze", {}, {}, body), what="analyzing"
            )
        except EngineError:
            return False
        return True


def typed_method(client: Any, api: str) -> Any:
    """The client's typed method ``api`` (``search``, ``indices.refresh``)."""
    target = client
    for name in api.split("."):
        target = getattr(target, name)
    return target


def _p(part: str) -> str:
    """A path segment, percent-encoded (ids may hold any character)."""
    return quote(part, safe=",*")


def query_params(params: dict[str, Any] | None) -> dict[str, str]:
    """URL parameters as the REST API spells them (booleans lowercase, lists comma-separated;
    None left out)."""
    out: dict[str, str] = {}
    for k, v in (params or {}).items():
        if v is None:
            continue
        if isinstance(v, list | tuple):
            out[k] = ",".join(str(x) for x in v)
        else:
            out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out
