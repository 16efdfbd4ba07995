"""Configuration from ``HYBRID_ES_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from hybrid_es.client_options import parse_client_options
from hybrid_es.connection_strings import (
    decode_cloud_id,
    normalize_fingerprint,
    parse_node_urls,
    redact_url,
)
from hybrid_es.errors import ConfigurationError
from hybrid_es.metadata_fields import FilterableFields, parse_filterable_fields
from hybrid_es.namespace import NAMESPACE_RULE, check_namespace, in_namespace
from hybrid_es.tenancy import IndexLayout, TenancyMode

DEFAULT_CHUNKS_INDEX = "hybrid-es-chunks"
DEFAULT_PACKETS_INDEX = "hybrid-es-packets"
DEFAULT_TRACES_INDEX = "hybrid-es-traces"
DEFAULT_CORPUS_STATE_INDEX = "hybrid-es-corpus-state"
DEFAULT_URL = "http://127.0.0.1:9200"
_INDEX_DEFAULTS = {
    "chunks_index": DEFAULT_CHUNKS_INDEX,
    "packets_index": DEFAULT_PACKETS_INDEX,
    "traces_index": DEFAULT_TRACES_INDEX,
    "corpus_state_index": DEFAULT_CORPUS_STATE_INDEX,
}
"""The index name settings, with their names in the default namespace."""


class Settings(BaseSettings):
    """Everything that can be configured; each field reads ``HYBRID_ES_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="HYBRID_ES_", extra="ignore", frozen=True)

    # -- the connection (README "Connect to your cluster") -------------------------------------
    url: str = DEFAULT_URL
    """Where the cluster is; unset, from Elastic's start-local ``.env`` where
    ``start_local_env`` asks for one.
    Several nodes of one cluster, comma-separated (``http://a:9200,http://b:9200``; in code also
    a list): the client spreads requests over them and, when one cannot be reached, retries on
    the next (``max_retries``), so losing one node does not take the client down."""
    cloud_id: str | None = None
    """An Elastic Cloud deployment's id, instead of ``url`` (Elasticsearch only)."""
    username: str | None = None
    password: SecretStr | None = None
    api_key: SecretStr | None = None
    """An Elasticsearch API key (the encoded form); wins over a user and password."""
    bearer_auth: SecretStr | None = None
    """A bearer token (OAuth2, JWT, a service account token); wins over a user and password."""
    ca_certs: Path | None = None
    """A CA file (PEM) that signed the cluster's TLS certificate (a self-signed local node)."""
    ssl_assert_fingerprint: str | None = None
    """The SHA-256 fingerprint of a certificate to pin instead of a CA file: Elasticsearch's
    ``http_ca.crt`` (or any certificate of the chain it serves); OpenSearch checks the node's
    own certificate."""
    client_cert: Path | None = None
    """A client certificate (PEM) for mutual TLS; with ``client_key`` when the key is apart.
    A credential where the cluster authenticates by certificate (a PKI realm)."""
    client_key: Path | None = None
    verify_certs: bool = True
    """Off only to get at a cluster whose certificate cannot be checked: warned about loudly."""
    request_timeout: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    client_options: Annotated[dict[str, Any], NoDecode] = Field(default_factory=dict)
    """Other keyword arguments for the client (``Elasticsearch(...)`` or ``OpenSearch(...)``),
    as a JSON object, merged last: only those of
    :data:`hybrid_es.client_options.ALLOWED_CLIENT_OPTIONS`, which change how requests are
    sent, never by whom or to whom (credentials, TLS and where to connect have their own
    settings)."""
    start_local_env: str | None = None
    """Elastic start-local's ``.env`` file, read only when asked for: a path, or ``auto`` for
    ``./.env`` (when it holds ``ES_LOCAL_URL``), then ``./elastic-start-local/.env``. Unset or
    empty (the default), no file is read: a ``.env`` in whatever folder hybrid-es runs from
    never decides where it connects. The file is not read when ``url`` or ``cloud_id`` is set;
    its URL comes only with its own credentials, so a credential set beside it is refused
    (:func:`start_local_settings`)."""

    namespace: str = ""
    """The deployment's name on a cluster that several deployments share (``[a-z0-9_]``, 1 to
    32 characters). Every object hybrid-es creates carries it: the index and component
    templates and their patterns, the indices (the four index settings below default to
    ``hybrid-es.<namespace>-chunks`` and so on), the roles, the search pipelines, the Kibana
    data view and dashboards. Two deployments of different namespaces bootstrap, ingest,
    search and prune without touching each other's objects (``hybrid_es.namespace``). Empty
    (the default): today's names, ``hybrid-es-chunks`` and so on."""
    chunks_index: str = DEFAULT_CHUNKS_INDEX
    packets_index: str = DEFAULT_PACKETS_INDEX
    traces_index: str = DEFAULT_TRACES_INDEX
    corpus_state_index: str = DEFAULT_CORPUS_STATE_INDEX
    templates_dir: Path | None = None
    shards: int = Field(default=1, ge=1, le=1024)
    """Primary shards of every index that bootstrap's templates shape (chunks, packets, traces,
    corpus state); fixed when an index is created. Sizing for clusters:
    :func:`hybrid_es.cluster.templates.with_index_settings`."""
    chunks_shards: int | None = Field(default=None, ge=1, le=1024)
    """Primary shards of the chunks indices only (the one kind that grows with the corpus);
    unset: ``shards``."""
    replicas: str = Field(default="0-1", pattern=r"^(\d{1,2}|\d{1,2}-(\d{1,2}|all))$")
    """Replicas of those indices: a number, or a range (``0-1``, ``1-all``) kept within the
    node count (``auto_expand_replicas``). The default ``0-1`` is none on one node and one from
    two nodes up. Bootstrap sets it on the templates, so on indices created afterwards."""

    embedder: str = "auto"
    """``auto`` (each chunks index takes the English MiniLM or the multilingual e5 from the
    scripts of its first documents, and keeps it: ``encoders.embedder_choice``), ``minilm``,
    ``e5``, or a sentence-transformers model name or folder for every index."""
    embed_runtime: Literal["onnx", "onnx-int8", "torch"] = "onnx-int8"
    """How MiniLM runs for a new index (``encoders.embedder.RUNTIMES``): ONNX Runtime on int8
    weights (the default: the fused graph, a query in about a quarter of torch's time, its own
    vectors, recorded as the model id ``...@onnx-int8-fused``), on the float32 weights (torch's
    vectors, about half torch's query time), or torch. The ONNX files are built on first use
    from the packaged weights (``encoders.onnx_build``). An index is always embedded as it was
    written: a search or ingest of an index another runtime wrote uses that runtime, with
    ``auto`` and a fixed ``minilm`` alike (docs/evaluation.md, "The fused graph")."""
    embed_threads: int = Field(default=1, ge=0, le=256)
    """Torch threads of one query embedding, in the searching thread (0: torch's own count, one
    per core). One by default: with two, a query that runs beside another busy process waits on
    OpenMP's spinning barriers (2 cores, one client: p95 30 ms at one thread, 800 ms at two);
    see ``encoders.embedder``. Passages (ingest) keep the runtime's count. For ``e5`` the same
    count of OpenMP threads (``encoders.embedder.omp_threads``: on all cores its query p95 was
    1,282 ms under load, on one 67 ms)."""
    embed_batch: int = Field(default=8, ge=1, le=256)
    """Most concurrent searches' queries embedded in one model call (1: each alone); see
    ``retrieval.query_vectors``."""
    query_cache_size: int = Field(default=1024, ge=0, le=1_000_000)
    """Query vectors kept per searcher (least recently used dropped first; 0: no cache), keyed
    by tenant, embedding model and cleaned query text."""
    reranker_model: str | None = None
    reranker_precision: str | None = Field(
        default=None, pattern="^(fp32|bf16|int8|onnx|onnx-int8)$"
    )
    """The cross-encoder's runtime and precision: ``onnx-int8`` (the fused graph on ONNX
    Runtime), ``onnx``, or on torch ``int8``, ``fp32``, ``bf16``. Unset: ``onnx-int8`` for a
    local model folder, torch ``int8`` for a hub name (``encoders.reranker.default_precision``)."""
    reranker_max_length: int | None = Field(default=None, ge=16, le=512)
    """Tokens per (query, passage) pair; default: what the model was trained at (or 256)."""
    reranker_threads: int = Field(default=0, ge=0, le=256)
    """Threads of one rerank, in the searching thread: torch's, or ONNX Runtime's intra-op (0:
    one per core). Set apart from ``embed_threads``: torch's thread count is per calling
    thread. Set 1 on a host shared with other busy processes (20 pairs, int8, 112 tokens, at
    load 8: p95 652 ms at one thread, 1,807 at two)."""
    rerank_depth: int = Field(default=50, ge=1, le=1000)
    max_query_chars: int = Field(default=10_000, ge=1, le=1_000_000)
    """Longest query accepted, in characters once control characters and runs of whitespace are
    cleaned; a longer one is refused (BadQueryError). What a search costs stops growing with the
    query's length past the caps below and the embedder's token window: measured with
    ``scripts/bench_long_query.py``, a 10,000-character query costs about what a
    2,000-character one does, so the default is set by what is plausibly a question (real
    collections hold questions of 2,023 characters), not by cost. Retrieval's own default is
    ``queries.MAX_QUERY_CHARS``."""
    max_query_terms: int = Field(default=64, ge=1, le=150)
    """Terms of a query that the BM25 leg reads (words, and each CJK character); the rest of a
    longer query is cut there, for the ``multi_match`` text, the client-side terms and the
    identifiers alike, and ``SearchResponse.truncated`` says so. Bounds BM25's cost, which grows
    with the number of terms, and keeps a long query under OpenSearch 2.19's 1,024-clause limit
    (hence at most 150). Retrieval's own default is ``queries.MAX_QUERY_TERMS``."""
    fusion: str = Field(default="auto", pattern="^(auto|native|client)$")
    fusion_method: str = Field(default="linear", pattern="^(rrf|linear)$")
    """How the legs are fused: ``linear`` (min-max, the default, chosen by
    ``scripts/bench_fusion.py`` across every collection: docs/evaluation.md) or ``rrf``."""
    fusion_alpha: float | Literal["spread"] = "spread"
    """The dense leg's weight in linear fusion: ``spread`` (the default: a weight chosen per query
    from how far each leg's best score stands above its own list, fused client-side;
    ``retrieval.fusion.DEFAULT_ALPHA``) or a fixed number in [0, 1] (0.4 is the best fixed one
    across the shared collections; a fixed weight lets the engine fuse natively)."""

    @field_validator("namespace", mode="before")
    @classmethod
    def _namespace_is_a_name(cls, value: Any) -> Any:
        return check_namespace(value.strip()) if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _names_in_the_namespace(cls, data: Any) -> Any:
        # The index names a deployment leaves unset (or empty) are its namespace's; a bad
        # namespace is left to its field's validator, which names the variable.
        if not isinstance(data, dict):
            return data
        namespace = data.get("namespace")
        if not isinstance(namespace, str) or not NAMESPACE_RULE.fullmatch(namespace.strip()):
            return data
        out = dict(data)
        for name, default in _INDEX_DEFAULTS.items():
            if not out.get(name):
                out[name] = in_namespace(default, namespace.strip())
        return out

    @field_validator("fusion_alpha")
    @classmethod
    def _alpha_in_range(cls, v: float | str) -> float | str:
        if isinstance(v, float) and not 0.0 <= v <= 1.0:
            raise ValueError(f"must be 'spread' or a number in [0, 1], got {v}")
        return v

    traces: bool = False
    """Write a trace of every search and packet operation (docs/traces.md).
    Off in the library unless set (``HYBRID_ES_TRACES=true``); the ``hybrid-es`` command line
    turns it on unless the variable says otherwise. Applications get a traced searcher from
    ``hybrid_es.HybridEs(settings)``."""
    trace_query_text: bool = False
    """Store the raw query text in traces (off: traces keep only its hash)."""
    packet_ttl_minutes: float = Field(default=10.0, gt=0)
    tenancy: TenancyMode = "index-per-tenant"
    """``index-per-tenant`` (a chunks index per tenant: no score side channel) or ``shared``."""
    default_acl: Literal["none", "everyone"] = "none"
    """ACL of a document that names none: ``none`` (fail closed: visible to nobody until an ACL
    is set; the production setting) or ``everyone`` (every user of its tenant)."""
    filterable_fields: Annotated[FilterableFields, NoDecode] = ()
    """The metadata fields a search may filter on, with their types, as
    ``name:type,...`` (``team:keyword,year:number,published:date,draft:boolean``; empty: none):
    ``hybrid_es.metadata_fields``. Bootstrap maps them in the chunks indices, the ingest writes
    the documents' values of every mapped one, and the searcher refuses a filter on any other
    field. A bad name or type is a ConfigurationError naming the entry."""
    trace_hash_key: SecretStr | None = None
    """The deployment's hashing secret. It keys the HMAC that traces keep instead of query text
    (unset, each process draws a random key, so equal queries group within a process only), and
    the owner digest in every packet ``_id`` (``identity.owner_digest``; unset, that digest is an
    unkeyed SHA-256, and whoever sees a packet ``_id`` can confirm a guessed user id). Set one per
    deployment, the same in every process; changing it gives new packet ids, so the packets
    stored under the old ones are not found and are built again."""
    trace_storage: Literal["auto", "data-stream", "dated-indices"] = "auto"
    """Where traces are written: ``auto`` probes the cluster once per process (a data stream
    where it has data streams, else an index per day); pin it where the writer's credentials may
    not probe."""
    trace_retention_days: int = Field(default=30, ge=1, le=36500)
    """How long the traces data stream keeps traces, where the cluster deletes them itself
    (Elasticsearch's data stream lifecycle; installed by bootstrap)."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # start-local's .env over the explicit values (arguments, HYBRID_ES_*): it is read only
        # where they name no URL, and refused beside any credential of theirs, so it sets only
        # what they leave unset or empty (HYBRID_ES_URL=), and its URL and credentials come as
        # one, never the file's URL with an empty variable's default in place of its password.
        start_local = _StartLocalSource(settings_cls, (init_settings, env_settings))
        return start_local, init_settings, env_settings, dotenv_settings, file_secret_settings

    @field_validator(
        "cloud_id", "username", "password", "api_key", "bearer_auth", "ssl_assert_fingerprint",
        "ca_certs", "start_local_env", mode="before",
    )  # fmt: skip
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        # HYBRID_ES_PASSWORD= (set, but empty) means no password, not an empty one.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("start_local_env", mode="before")
    @classmethod
    def _start_local_as_text(cls, value: Any) -> Any:
        # Settings(start_local_env=Path(...)) in code names the file as the variable would.
        return str(value) if isinstance(value, PathLike) else value

    @field_validator("replicas", mode="before")
    @classmethod
    def _replicas_as_text(cls, value: Any) -> Any:
        # Settings(replicas=1) in code means what HYBRID_ES_REPLICAS=1 means.
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("url", mode="before")
    @classmethod
    def _empty_url_is_the_default(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):  # Settings(url=[...]): several nodes, in code
            value = ",".join(str(v) for v in value)
        return DEFAULT_URL if isinstance(value, str) and not value.strip() else value

    @field_validator("url")
    @classmethod
    def _node_urls_are_urls(cls, value: str) -> str:
        # One URL is passed on as given (the client's own checks, as always); a list is checked
        # here, each node by its number, and kept in its plain form (stripped, single commas).
        return ",".join(parse_node_urls(value)) if "," in value else value

    @field_validator("cloud_id")
    @classmethod
    def _cloud_id_decodes(cls, value: str | None) -> str | None:
        if value is not None:
            decode_cloud_id(value)  # ConfigurationError naming HYBRID_ES_CLOUD_ID
        return value

    @field_validator("ssl_assert_fingerprint")
    @classmethod
    def _fingerprint(cls, value: str | None) -> str | None:
        return None if value is None else normalize_fingerprint(value)

    @field_validator("client_options", mode="before")
    @classmethod
    def _client_options(cls, value: Any) -> dict[str, Any]:
        return parse_client_options(value)

    @field_validator("filterable_fields", mode="before")
    @classmethod
    def _filterable_fields(cls, value: Any) -> FilterableFields:
        return parse_filterable_fields(value)

    @model_validator(mode="after")
    def _one_address(self) -> Settings:
        if self.cloud_id and "url" in self.model_fields_set and self.url != DEFAULT_URL:
            raise ConfigurationError(
                "both HYBRID_ES_CLOUD_ID and HYBRID_ES_URL are set: they name where to connect "
                "in two ways",
                hint="keep one: HYBRID_ES_CLOUD_ID for an Elastic Cloud deployment, "
                "HYBRID_ES_URL for any other cluster",
            )
        return self

    def endpoint(self) -> str:
        """The URL to connect to: ``url`` (its first node when it names several), or the one
        that ``cloud_id`` names."""
        return self.node_urls()[0]

    def node_urls(self) -> tuple[str, ...]:
        """Every node URL to connect to: those of ``url``, or the one that ``cloud_id`` names."""
        if self.cloud_id:
            return (decode_cloud_id(self.cloud_id)[0],)
        return tuple(self.url.split(",")) if "," in self.url else (self.url,)

    def uses_tls(self) -> bool:
        return self.endpoint().lower().startswith("https://")

    def has_credentials(self) -> bool:
        """Whether any credential is configured (an API key, a bearer token, a user and
        password, or a user:password part in the URL: the same in each node URL)."""
        parts = urlsplit(self.url.split(",")[0])  # the same in every node URL (checked)
        return bool(
            self.api_key
            or self.bearer_auth
            or (self.username and self.password)
            or (not self.cloud_id and parts.username and parts.password)
        )

    def layout(self) -> IndexLayout:
        """The index names of this deployment, by tenancy mode."""
        return IndexLayout(
            chunks=self.chunks_index,
            packets=self.packets_index,
            traces=self.traces_index,
            corpus_state=self.corpus_state_index,
            mode=self.tenancy,
            namespace=self.namespace,
        )

    def redacted_url(self) -> str:
        """The URL (``endpoint()``; every node URL, comma-separated, when ``url`` names several)
        without any user:password part, safe for messages and logs."""
        return ", ".join(redact_url(u) for u in self.node_urls())

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # The URL may carry user:password: a logged or printed Settings must not show it.
        for name, value in super().__repr_args__():
            if name == "url":
                value = ",".join(redact_url(u) for u in str(value).split(","))
            yield name, value


def configuration_error(exc: ValidationError) -> ConfigurationError:
    """A settings validation error as one ConfigurationError naming the variables (never the
    values given: a misplaced secret must not be echoed)."""
    problems = []
    for err in exc.errors():
        name = "HYBRID_ES_" + "_".join(str(p) for p in err["loc"][:1]).upper()
        problems.append(f"{name}: {str(err['msg']).removeprefix('Value error, ')}")
    return ConfigurationError(
        "invalid setting" + ("s" if len(problems) > 1 else "") + ": " + "; ".join(problems),
        hint="fix the variable in the environment (or the value passed to Settings)",
    )


# -- Elastic start-local's .env: a settings source under the explicit ones ---------------------


START_LOCAL_FILES = (Path(".env"), Path("elastic-start-local") / ".env")
"""Where Elastic's start-local (``curl -fsSL https://elastic.co/start-local | sh``) leaves its
settings, relative to the current directory, in the order ``HYBRID_ES_START_LOCAL_ENV=auto``
looks at them."""
START_LOCAL_AUTO = "auto"
_CREDENTIALS = ("api_key", "bearer_auth", "username", "password", "client_cert", "client_key")


def read_start_local(path: Path) -> dict[str, str]:
    """The connection settings in a start-local ``.env`` file: ``url`` from ``ES_LOCAL_URL``
    (``${ES_LOCAL_PORT}`` and the like expanded), ``api_key`` from ``ES_LOCAL_API_KEY``, and
    user ``elastic`` with ``ES_LOCAL_PASSWORD``. Empty when the file holds no ``ES_LOCAL_URL``
    (a ``.env`` of something else)."""
    from dotenv import dotenv_values

    values = {k: (v or "").strip() for k, v in dotenv_values(path, interpolate=True).items()}
    if not values.get("ES_LOCAL_URL"):
        return {}
    out = {"url": values["ES_LOCAL_URL"]}
    if values.get("ES_LOCAL_API_KEY"):
        out["api_key"] = values["ES_LOCAL_API_KEY"]
    if values.get("ES_LOCAL_PASSWORD"):
        out.update(username="elastic", password=values["ES_LOCAL_PASSWORD"])
    return out


def start_local_settings(given: dict[str, Any], cwd: Path) -> dict[str, Any]:
    """What start-local's ``.env`` adds to the explicitly ``given`` settings (arguments and
    HYBRID_ES_* variables, by field name): its URL and credentials, only where ``given`` asks
    for the file (``start_local_env``: a path, or ``auto`` for :data:`START_LOCAL_FILES` under
    ``cwd``) and names neither ``url`` nor ``cloud_id``; otherwise nothing.

    The file's URL is never combined with credentials of the user's: a folder's ``.env`` (a
    checked-out repository's) would then receive the user's password or API key. Raises
    ConfigurationError when a credential is given beside a file that names a URL, or when
    ``start_local_env`` names a file that does not exist."""
    named = given.get("start_local_env")
    if named is None or not str(named).strip() or given.get("url") or given.get("cloud_id"):
        return {}
    candidates: tuple[Path, ...] = START_LOCAL_FILES
    if str(named).strip().lower() != START_LOCAL_AUTO:
        path = Path(named)
        if not (path if path.is_absolute() else cwd / path).is_file():
            raise ConfigurationError(
                f"HYBRID_ES_START_LOCAL_ENV names {path}, which is not a file",
                hint="point it at start-local's .env (elastic-start-local/.env), set it to "
                f"{START_LOCAL_AUTO!r} to look in the usual places, or unset it",
            )
        candidates = (path,)
    for path in candidates:
        full = path if path.is_absolute() else cwd / path
        found: dict[str, Any] = read_start_local(full) if full.is_file() else {}
        if not found:
            continue
        mine = [f"HYBRID_ES_{name.upper()}" for name in _CREDENTIALS if given.get(name)]
        if mine:
            # Refused rather than either half dropped: without the file's URL the user's
            # credentials would go to the default address, and without the user's credentials
            # the file's would be used in their place; either silently not what was asked.
            raise ConfigurationError(
                f"{' and '.join(mine)} {'is' if len(mine) == 1 else 'are'} set beside "
                f"start-local's {full} (HYBRID_ES_START_LOCAL_ENV): the file's URL is used "
                "only with the file's own credentials, never with yours",
                hint="set HYBRID_ES_URL to the cluster your credentials are for (the file is "
                "then not read), or unset your credentials to use the file's, or unset "
                "HYBRID_ES_START_LOCAL_ENV",
            )
        return found
    return {}


class _StartLocalSource(PydanticBaseSettingsSource):
    """start-local's ``.env`` as a settings source: what the explicit sources it is given ask
    for and leave unset (:func:`start_local_settings`)."""

    def __init__(
        self, settings_cls: type[BaseSettings], explicit: tuple[PydanticBaseSettingsSource, ...]
    ) -> None:
        super().__init__(settings_cls)
        self._explicit = explicit

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads the whole file at once

    def __call__(self) -> dict[str, Any]:
        given: dict[str, Any] = {}
        for source in reversed(self._explicit):
            given.update(source())
        return start_local_settings(given, Path.cwd())
