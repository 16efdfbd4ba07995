"""One engine seam, two dialects: what the product asks of a cluster, on Elasticsearch
(elasticsearch-py) or OpenSearch (opensearch-py, its own client: elasticsearch-py refuses
OpenSearch servers).

The flavour is probed, never configured: :func:`connect` asks the cluster, and every module
above this one talks to an :class:`Engine` without knowing which it is. What differs between the
two lives in one place per concern: the client calls here, request bodies in
``retrieval.dialects``, mappings and roles in ``es_templates/`` (an ``opensearch/`` variant beside
each), security in ``cluster.security``.

Every method raises the package's own errors (``errors.translate_es_error``), never a client's:
a version conflict is ``VersionConflictError``, a missing document a ``None``.

Every call is written once, for both flavours, over two primitives each flavour provides:
:meth:`Engine.call` (a typed call, described by an :class:`ApiCall`) and :meth:`Engine.request` (a
bare REST one). The calls go through the clients' typed methods (``search``, ``msearch``, ``count``,
``get``, ``mget``, ``index``, ``indices.refresh``, ...; see :class:`ApiCall`), not through a bare
``perform_request``: elasticsearch-py's own OpenTelemetry spans are named by endpoint (``search``,
``msearch``, ``indices.refresh``) only for typed calls, and carry ``db.operation`` and the path
parts, where a bare request is a span named ``POST``. opensearch-py makes no spans; its typed
methods are used all the same, so both flavours take one route. What has no typed method on both
clients (data streams, security, search pipelines, licences) goes through :meth:`Engine.request`.
Either way the chunks and traces guards (``cluster.guard``) read the REST path and body before
anything is sent.

This module holds the seam whole: :class:`Engine` with every call, its two flavours,
:func:`connect` and :func:`as_engine`. The parts of connecting (which server answers, the
opensearch-py client) are in ``cluster.connection``; the client and server version checks in
``cluster.versions``; the guards that refuse a body read around a door in ``cluster.guard``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from hybrid_es.cluster import guard as chunks_guard
from hybrid_es.cluster.client import make_client
from hybrid_es.cluster.connection import Flavor, identify, os_overrides
from hybrid_es.cluster.connection import opensearch_client as _opensearch_client
from hybrid_es.cluster.versions import client_mismatch, client_version, warn_on_older_client
from hybrid_es.errors import ConfigurationError, EngineError, HybridEsError, translate_es_error
from hybrid_es.settings import Settings

__all__ = [
    "ApiCall",
    "ElasticsearchEngine",
    "Engine",
    "Flavor",
    "OpenSearchEngine",
    "_opensearch_client",
    "as_engine",
    "client_mismatch",
    "client_version",
    "connect",
]


@dataclass(frozen=True)
class ApiCall:
    """One cluster call in both of its forms: the clients' typed method ``api`` (``search``,
    ``indices.refresh``: the same name on elasticsearch-py and opensearch-py) with its path parts
    ``parts`` (``index=``, ``id=``), and the REST request it is, ``method`` ``path``. ``params``
    are URL parameters as the REST API spells them (``_source_includes``; None left out);
    ``body`` a JSON body, or for ``msearch`` the list of NDJSON lines. ``missing_ok``: a 404
    is an answer the caller expects (a document that does not exist yet), which
    elasticsearch-py is told (``ignore_status``), so that its span is not an error's.

    The chunks guard reads the REST form, whichever form is sent; an engine that knows only the
    REST primitive (a wrapper, a test double) sends that form."""

    api: str
    method: str
    path: str
    parts: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    missing_ok: bool = False

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


class Engine(ABC):
    """The cluster operations hybrid-es uses, over one REST primitive per flavour
    (:meth:`request`). Construct with :func:`connect` (or wrap a client you made with
    :func:`as_engine`); ``raw`` is the underlying client, for the bulk and scroll helpers."""

    flavor: Flavor

    def __init__(self, raw: Any, *, url: str = "", version: str = "unknown") -> None:
        self.raw = raw
        self.url = url
        self.version = version
        self.rrf_rank_constant_at: Any = None
        """OpenSearch: where its RRF processor reads the rank constant, once probed
        (``capabilities.native_fusion_works``)."""
        self.guarded: tuple[str, ...] = ()
        """Base names of the chunks indices: a body read of one must come through the policy
        door (``cluster.guard``, ``retrieval.door``)."""
        self.guarded_traces: tuple[str, ...] = ()
        """Base names of the traces indices: a body read of one must come through the traces
        door (``cluster.guard``, ``traces.door``)."""

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
                ApiCall("get", "GET", path, {"index": index, "id": id}, params, missing_ok=True),
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

    def scan(self, index: str, body: dict[str, Any], **options: Any) -> Iterator[dict[str, Any]]:
        """Every hit of a query, paged with the client helpers' scroll (``options``: the
        helper's own, such as ``scroll`` and ``size``)."""
        chunks_guard.check(f"/{index}/_search", self.guarded)
        chunks_guard.check(f"/{index}/_search", self.guarded_traces, door="traces")
        try:
            yield from self._helpers().scan(self.raw, index=index, query=body, **options)
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

    def get_alias(self, name: str) -> dict[str, Any] | None:
        """The indices the alias ``name`` points at (index -> ``{"aliases": ...}``); None when
        no alias has that name. A 404 is an answer here, not an error (its span is not one)."""
        call = ApiCall(
            "indices.get_alias", "GET", f"/_alias/{_p(name)}", {"name": name}, missing_ok=True
        )
        try:
            return dict(self.call(call, what="reading an alias") or {})
        except EngineError as exc:
            if exc.status == 404:
                return None
            raise

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
        """Delete the indices ``index`` names (comma-separated names and patterns; a missing one
        is no error). A name that is no index itself but has generations (``<name>+g<N>``, the
        indices behind the alias of that name: ``cluster.generations``) deletes its
        generations: neither engine deletes by an alias name (Elasticsearch ignores it,
        OpenSearch refuses it). Any other alias is left to the engine."""
        self._indices(
            "delete",
            "DELETE",
            self._concrete(index),
            params={"ignore_unavailable": True, "allow_no_indices": True},
            what=f"deleting {index}",
        )

    def _concrete(self, index: str) -> str:
        """``index`` with each plain name (no wildcard) that is no index but has generations
        replaced by them; ``index`` as it is where none has, or where the credentials may not
        list them."""
        parts = index.split(",")
        plain = [p for p in parts if p and p[0] != "-" and not any(c in p for c in "*?")]
        if not plain:
            return index
        try:
            found = self.indices(",".join(f"{p},{p}+g*" for p in plain))
        except HybridEsError:
            return index
        out: list[str] = []
        for part in parts:
            generations = [
                i for i in found if i.startswith(part) and _GENERATION.fullmatch(i[len(part) :])
            ]
            out += generations if part in plain and part not in found and generations else [part]
        return ",".join(dict.fromkeys(out))

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

    def guard(self, *chunks_bases: str) -> None:
        """Refuse from now on any body read (search, count, scan, ...) of an index named by
        one of ``chunks_bases`` (or a pattern or list that could reach one) that does not come
        through ``retrieval.door.ChunksDoor``. Every searcher, ingestor and packet service
        guards its layout's chunks indices on the engine it is given."""
        self.guarded = tuple(dict.fromkeys((*self.guarded, *(b for b in chunks_bases if b))))

    def guard_traces(self, *traces_bases: str) -> None:
        """As :meth:`guard`, for the traces indices named by ``traces_bases``: a body read of one
        must come through ``traces.door.TracesDoor``. Every trace reader and pruner guards its
        storage on the engine it is given."""
        bases = (*self.guarded_traces, *(b for b in traces_bases if b))
        self.guarded_traces = tuple(dict.fromkeys(bases))

    def _carry(self, clone: Engine) -> Engine:
        """``clone`` (the same cluster, other client options) with this engine's guards."""
        clone.guarded = self.guarded
        clone.guarded_traces = self.guarded_traces
        clone.rrf_rank_constant_at = self.rrf_rank_constant_at
        return clone

    @property
    def name(self) -> str:
        return "Elasticsearch" if self.flavor == "elasticsearch" else "OpenSearch"

    @property
    def major(self) -> int:
        head = self.version.split(".")[0]
        return int(head) if head.isdigit() else 0

    @property
    def client_library(self) -> str:
        """The client library and its installed version, e.g. ``elasticsearch-py 9.5.1``."""
        from importlib.metadata import version

        if self.flavor == "elasticsearch":
            return f"elasticsearch-py {version('elasticsearch')}"
        return f"opensearch-py {version('opensearch-py')}"

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
        """One REST call; the JSON it answers, or a package error (never a client's).
        ``opaque_id`` goes out as ``X-Opaque-Id`` (the search's trace id), which the cluster's
        slow log, tasks API and HTTP client stats show beside the request."""
        chunks_guard.check(path, self.guarded, body)
        chunks_guard.check(path, self.guarded_traces, body, door="traces")
        try:
            return self._send(method, path, query_params(params), body, opaque_id)
        except Exception as exc:
            raise translate_es_error(exc, url=self.url, what=what) from exc

    def call(self, call: ApiCall, *, what: str, opaque_id: str | None = None) -> Any:
        """One call through the client's typed method (:class:`ApiCall`); the JSON it answers
        (a HEAD: ``{}``, or EngineError 404), or a package error. Checked by the chunks guard
        first, as :meth:`request` is; ``opaque_id`` as there."""
        chunks_guard.check(call.path, self.guarded, call.body)
        chunks_guard.check(call.path, self.guarded_traces, call.body, door="traces")
        try:
            return self._typed(call, opaque_id)
        except Exception as exc:
            raise translate_es_error(exc, url=self.url, what=what) from exc

    def _typed(self, call: ApiCall, opaque_id: str | None) -> Any:
        """The flavour's typed client call; raises the client's own errors (:meth:`call`
        translates). Here, for an engine that knows only :meth:`_send`: the REST form."""
        return self._send(
            call.method, call.path, query_params(call.params), call.rest_body(), opaque_id
        )

    @abstractmethod
    def _send(
        self,
        method: str,
        path: str,
        params: dict[str, str],
        body: Any,
        opaque_id: str | None = None,
    ) -> Any:
        """The flavour's client call; raises the client's own errors (``request`` translates)."""

    @abstractmethod
    def with_options(self, *, request_timeout: float, max_retries: int) -> Engine:
        """The same engine with another timeout and retry count (the trace writer's)."""


class ElasticsearchEngine(Engine):
    flavor: Flavor = "elasticsearch"
    _quiet_404: Any = None

    def _typed(self, call: ApiCall, opaque_id: str | None) -> Any:
        client = self._missing_ok() if call.missing_ok else self.raw
        client = with_opaque_id(client, opaque_id, call.api) if opaque_id else client
        kwargs: dict[str, Any] = dict(call.parts)
        for k, v in call.params.items():
            if v is not None:  # the typed methods spell ``_source_includes`` without the ``_``
                kwargs[k.lstrip("_")] = v
        body = call.typed_body()
        if body is not None:
            kwargs["body"] = body
        resp = typed_method(client, call.api)(**kwargs)
        if call.method == "HEAD":  # a typed HEAD answers a 404 as False rather than raising it
            if not resp:
                raise EngineError(f"{call.path} not found", status=resp.meta.status)
            return {}
        if resp.meta.status == 404:  # only a missing_ok call returns one; raised outside its span
            raise EngineError(f"{call.path} not found", status=404)
        return resp.body

    def _missing_ok(self) -> Any:
        """The client with ``ignore_status=404``, made once (``options`` builds a whole client):
        it answers a 404 instead of raising it inside its OpenTelemetry span."""
        if self._quiet_404 is None:
            self._quiet_404 = self.raw.options(ignore_status=404)
        return self._quiet_404

    def _send(
        self,
        method: str,
        path: str,
        params: dict[str, str],
        body: Any,
        opaque_id: str | None = None,
    ) -> Any:
        headers = {"accept": "application/json"}
        if opaque_id:
            headers["x-opaque-id"] = opaque_id
        if body is not None:
            headers["content-type"] = (
                "application/x-ndjson" if isinstance(body, str) else "application/json"
            )
        resp = self.raw.perform_request(method, path, params=params, headers=headers, body=body)
        if method == "HEAD":  # elasticsearch-py answers a HEAD 404 rather than raising it
            if not 200 <= resp.meta.status < 300:
                raise EngineError(f"{path} not found", status=resp.meta.status)
            return {}
        return resp.body

    def with_options(self, *, request_timeout: float, max_retries: int) -> Engine:
        return self._carry(
            ElasticsearchEngine(
                self.raw.options(request_timeout=request_timeout, max_retries=max_retries),
                url=self.url,
                version=self.version,
            )
        )

    def _helpers(self) -> Any:
        from elasticsearch import helpers

        return helpers


class OpenSearchEngine(Engine):
    flavor: Flavor = "opensearch"

    def _timeout(self) -> float:
        # The client's own timeout, always passed: opensearch-py would otherwise take a
        # ``timeout`` URL parameter (cluster health's, a search's) for its socket timeout.
        return float(getattr(self.raw, "_hybrid_es_kwargs", {}).get("timeout", 30))

    def _typed(self, call: ApiCall, opaque_id: str | None) -> Any:
        params: dict[str, Any] = {**query_params(call.params), "request_timeout": self._timeout()}
        headers = {"x-opaque-id": opaque_id} if opaque_id else {}
        kwargs: dict[str, Any] = dict(call.parts)
        body = call.typed_body()
        if body is not None:
            kwargs["body"] = body
        resp = typed_method(self.raw, call.api)(params=params, headers=headers, **kwargs)
        if call.method == "HEAD":  # opensearch-py answers a HEAD with True or False
            if not resp:
                raise EngineError(f"{call.path} not found", status=404)
            return {}
        return resp

    def _send(
        self,
        method: str,
        path: str,
        params: dict[str, str],
        body: Any,
        opaque_id: str | None = None,
    ) -> Any:
        timeout = self._timeout()
        if method == "HEAD":
            ok = self.raw.transport.perform_request(method, path, params=params, timeout=timeout)
            if not ok:
                raise EngineError(f"{path} not found", status=404)
            return {}
        headers = {"content-type": "application/x-ndjson"} if isinstance(body, str) else {}
        if opaque_id:
            headers["x-opaque-id"] = opaque_id
        return self.raw.transport.perform_request(
            method, path, params=params, body=body, headers=headers, timeout=timeout
        )

    def with_options(self, *, request_timeout: float, max_retries: int) -> Engine:
        from opensearchpy import OpenSearch

        kwargs = dict(getattr(self.raw, "_hybrid_es_kwargs", {}))
        if not kwargs:  # a client built by the caller: its hosts and connection settings
            kwargs = {"hosts": self.raw.transport.hosts, **self.raw.transport.kwargs}
        kwargs.update(timeout=request_timeout, max_retries=max_retries)
        clone = OpenSearch(**kwargs)
        clone._hybrid_es_kwargs = kwargs  # type: ignore[attr-defined]
        return self._carry(OpenSearchEngine(clone, url=self.url, version=self.version))

    def _helpers(self) -> Any:
        from opensearchpy import helpers

        return helpers


def with_opaque_id(client: Any, opaque_id: str, api: str) -> Any:
    """An elasticsearch-py ``client`` that sends ``X-Opaque-Id: opaque_id`` with a call of
    ``api``.

    ``client.options(opaque_id=...)`` builds a whole client: each of its 40-odd API namespaces,
    each reading its OpenTelemetry settings from the environment, about 0.3 ms of CPU, and a
    search asks it twice (both ``_msearch``). A top-level call (``msearch``, ``search``, ``count``)
    reads only the client's own headers, so a shallow copy with the header added does (6 us); a
    namespaced call (``indices.refresh``) sends through its namespace's client, and gets
    ``options``, as does a client without the headers this relies on."""
    headers = getattr(client, "_headers", None)
    if "." in api or not callable(getattr(headers, "copy", None)):
        return client.options(opaque_id=opaque_id)
    clone = copy.copy(client)
    clone._headers = headers.copy()  # type: ignore[union-attr]
    clone._headers["x-opaque-id"] = opaque_id
    return clone


def connect(settings: Settings | None = None, **overrides: Any) -> Engine:
    """The engine behind ``settings`` (default: from the environment), its flavour probed.

    One request, ``GET /``, that any authenticated user may send: Elasticsearch answers with its
    product header (even when it refuses the request), OpenSearch with its distribution, or a
    security-plugin refusal. Raises EngineUnavailableError / AuthenticationError when the cluster
    cannot be reached or refuses the credentials, EngineError for a server that is neither, and
    ConfigurationError when opensearch-py is needed and missing, when the cluster demands
    credentials and none are configured (the message names the variables), or when its TLS
    certificate cannot be checked with the settings given (the message names the setting).
    """
    s = settings or Settings()
    url = s.redacted_url()
    es = make_client(s, **overrides)
    flavor, version = identify(es, s, overrides)
    if flavor == "elasticsearch":
        engine: Engine = ElasticsearchEngine(es, url=url, version=version)
        if version == "unknown":
            with contextlib.suppress(EngineError):
                engine.version = str(engine.node_info().get("version", "unknown"))
        warn_on_older_client(engine.version, engine.major, engine.url)
        return engine
    return OpenSearchEngine(
        _opensearch_client(s, **os_overrides(overrides)), url=url, version=version
    )


def as_engine(client: Any, *, url: str = "") -> Engine:
    """An engine around a client you built: elasticsearch-py or opensearch-py (an Engine is
    returned as it is)."""
    if isinstance(client, Engine):
        return client
    # By the classes it derives from: a subclass (cluster.client's own) is its library's client.
    modules = [cls.__module__ for cls in type(client).__mro__]
    if any(m.startswith("opensearchpy") for m in modules):
        engine: Engine = OpenSearchEngine(client, url=url)
    elif any(m.startswith("elasticsearch") for m in modules):
        engine = ElasticsearchEngine(client, url=url)
    else:
        raise ConfigurationError(
            f"not an Elasticsearch or OpenSearch client: {type(client).__name__}",
            hint="pass hybrid_es.connect(settings), or an elasticsearch-py / opensearch-py client",
        )
    return engine


def typed_method(client: Any, api: str) -> Any:
    """The client's typed method ``api`` (``search``, ``indices.refresh``)."""
    target = client
    for name in api.split("."):
        target = getattr(target, name)
    return target


_GENERATION = re.compile(r"\+g[0-9]{1,6}")
"""What follows an alias's name in the name of one of its generations (``cluster.generations``)."""


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
