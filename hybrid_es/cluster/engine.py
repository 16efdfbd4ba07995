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

The calls go through the clients' typed methods (``search``, ``msearch``, ``count``, ``get``,
``mget``, ``index``, ``indices.refresh``, ...; see :class:`ApiCall`), not through a bare
``perform_request``: elasticsearch-py's own OpenTelemetry spans are named by endpoint (``search``,
``msearch``, ``indices.refresh``) only for typed calls, and carry ``db.operation`` and the path
parts, where a bare request is a span named ``POST``. opensearch-py makes no spans; its typed
methods are used all the same, so both flavours take one route. What has no typed method on both
clients (data streams, security, search pipelines, licences) goes through :meth:`Engine.request`.
Either way the chunks and traces guards (``cluster.guard``) read the REST path and body before
anything is sent.

This module holds the seam itself (:class:`Engine`, its two flavours, :func:`connect` and
:func:`as_engine`). The calls, written once for both flavours, are in ``cluster.calls``; the
parts of connecting (which server answers, the opensearch-py client) in ``cluster.connection``;
the client and server version checks in ``cluster.versions``.
"""

from __future__ import annotations

import contextlib
import copy
from abc import abstractmethod
from typing import Any

from hybrid_es.cluster import guard as chunks_guard
from hybrid_es.cluster.calls import ApiCall, EngineCalls, Flavor, query_params, typed_method
from hybrid_es.cluster.client import make_client
from hybrid_es.cluster.connection import identify, os_overrides
from hybrid_es.cluster.connection import opensearch_client as _opensearch_client
from hybrid_es.cluster.versions import client_mismatch, client_version, warn_on_older_client
from hybrid_es.errors import ConfigurationError, EngineError, translate_es_error
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


class Engine(EngineCalls):
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

    def _typed(self, call: ApiCall, opaque_id: str | None) -> Any:
        client = with_opaque_id(self.raw, opaque_id, call.api) if opaque_id else self.raw
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
        return resp.body

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
