"""The connection to an index read as an ingest source (``hybrid-es ingest --from-index``): its own
settings, ``HYBRID_ES_SOURCE_*``, and the one rule that keeps each side's credentials on its side.

- No ``HYBRID_ES_SOURCE_URL`` (nor ``_CLOUD_ID``): the source is on the deployment's own cluster
  and is read with the deployment's own connection. A source credential set without a source
  URL is refused (:class:`~hybrid_es.errors.ConfigurationError`), never sent to the deployment's
  URL: a credential goes only to the address named beside it.
- A source URL: the source gets a client of its own, built from the ``HYBRID_ES_SOURCE_*``
  variables alone. The deployment's credentials (``HYBRID_ES_USERNAME``, ``_API_KEY``, ...) are
  never read for it, and its own are never read for the deployment (``Settings`` has no field
  they could fill). The same cluster under another user is a source URL too.

Either way the source engine carries the deployment's chunks and traces guards
(``cluster.guard``), and :func:`refuse_own_index` refuses, before anything is sent, a source
name that could reach one of the deployment's own indices (chunks, traces, packets, corpus
state): a source read goes around the policy door by design, so it must never read those.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from hybrid_es.cluster.client import es_client_kwargs
from hybrid_es.cluster.engine import Engine, as_engine, connect
from hybrid_es.cluster.guard import is_guarded
from hybrid_es.connection_strings import redact_url
from hybrid_es.errors import ConfigurationError
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout

ENV_PREFIX = "HYBRID_ES_SOURCE_"
_CREDENTIALS = ("username", "password", "api_key", "bearer_auth", "client_cert", "client_key")
_CONNECTION = (
    "url",
    "cloud_id",
    *_CREDENTIALS,
    "ca_certs",
    "ssl_assert_fingerprint",
    "verify_certs",
    "request_timeout",
    "max_retries",
)


class SourceSettings(BaseSettings):
    """Where an ingest source index is and how to reach it; each field reads
    ``HYBRID_ES_SOURCE_<NAME>``. The connection fields mean what the deployment's own do
    (``HYBRID_ES_URL``, ``HYBRID_ES_USERNAME``, ...), for the source cluster."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    index: str | None = None
    """The source index (a name, an alias or a pattern) that ``capabilities`` and ``verify``
    check the source credentials on: the one ``ingest --from-index`` names."""
    url: str | None = None
    """The source cluster's URL (several nodes comma-separated). Unset: the source is on the
    deployment's own cluster and is read with its connection, and no source credential may be
    set (a credential is sent only to the URL named beside it)."""
    cloud_id: str | None = None
    """An Elastic Cloud deployment's id, instead of the source URL."""
    username: str | None = None
    """A user name on the source cluster (basic authentication, with the source password)."""
    password: SecretStr | None = None
    """The password of the source user."""
    api_key: SecretStr | None = None
    """An API key (encoded) for the source cluster; wins over a user and password."""
    bearer_auth: SecretStr | None = None
    """A bearer token for the source cluster; wins over a user and password."""
    ca_certs: Path | None = None
    """A CA file (PEM) that signed the source cluster's TLS certificate."""
    ssl_assert_fingerprint: str | None = None
    """The SHA-256 fingerprint of the source cluster's certificate, instead of a CA file."""
    client_cert: Path | None = None
    """A client certificate (PEM) for mutual TLS with the source cluster."""
    client_key: Path | None = None
    """The private key (PEM) of the source client certificate, when it is not in that file."""
    verify_certs: bool = True
    """Off only to reach a source whose certificate cannot be checked: warned about loudly."""
    request_timeout: float = Field(default=30.0, gt=0)
    """Seconds one request to the source cluster may take."""
    max_retries: int = Field(default=3, ge=0)
    """Connection-level retries of one request to the source cluster."""

    @field_validator(
        "index", "url", "cloud_id", "username", "password", "api_key", "bearer_auth",
        "ssl_assert_fingerprint", "ca_certs", mode="before",
    )  # fmt: skip
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def own_cluster(self) -> bool:
        """The source is read over the deployment's own connection (no source URL)."""
        return not (self.url or self.cloud_id)

    def credentials_named(self) -> list[str]:
        """The source credential variables that are set (a user:password in the URL counts)."""
        named = [f"{ENV_PREFIX}{n.upper()}" for n in _CREDENTIALS if getattr(self, n)]
        first = urlsplit((self.url or "").split(",")[0])
        if first.username or first.password:
            named.append(f"{ENV_PREFIX}URL (user:password)")
        return named

    def connection(self) -> Settings | None:
        """The client settings of the source: None where it is the deployment's own cluster
        (no source URL). Raises ConfigurationError for a source credential without a source URL,
        and for a value the client settings refuse (naming the ``HYBRID_ES_SOURCE_*``
        variable, never the value)."""
        if self.own_cluster:
            named = [n for n in self.credentials_named() if not n.endswith("(user:password)")]
            if named:
                raise ConfigurationError(
                    f"{' and '.join(named)} {'is' if len(named) == 1 else 'are'} set without "
                    f"{ENV_PREFIX}URL: a source credential is sent only to the source URL named "
                    "beside it, never to the deployment's cluster",
                    hint=f"set {ENV_PREFIX}URL to the cluster the credential is for (the "
                    "deployment's own URL for the same cluster under another user), or unset it",
                )
            return None
        values = {n: getattr(self, n) for n in _CONNECTION if getattr(self, n) is not None}
        try:
            # Read under the source prefix: nothing of the deployment's HYBRID_ES_* (its
            # credentials above all) can fill a field the source left unset.
            settings = Settings(_env_prefix=ENV_PREFIX, start_local_env=None, **values)  # type: ignore[call-arg]
            es_client_kwargs(settings)  # the files it names exist, one way to check TLS
            return settings
        except ValidationError as exc:
            problems = [
                f"{ENV_PREFIX}{str(e['loc'][0]).upper() if e['loc'] else ''}: "
                f"{str(e['msg']).removeprefix('Value error, ')}"
                for e in exc.errors()
            ]
            raise ConfigurationError(
                "invalid source setting: " + "; ".join(problems),
                hint="fix the HYBRID_ES_SOURCE_* variable",
            ) from None
        except ConfigurationError as exc:
            raise _as_source(exc) from None

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # The URL may carry user:password: a logged or printed SourceSettings must not show it.
        for name, value in super().__repr_args__():
            if name == "url" and value:
                value = ",".join(redact_url(u) for u in str(value).split(","))
            yield name, value

    def redacted_url(self, target: Engine | None = None) -> str:
        """Where the source is, safe for messages: its URL without credentials, or the
        deployment's own (``target``'s)."""
        settings = None if self.own_cluster else self.connection()
        if settings is None:
            return target.url if target is not None else "the deployment's cluster"
        return settings.redacted_url()


def _as_source(exc: ConfigurationError) -> ConfigurationError:
    """A client settings error about the source, naming the source's variables."""
    fix = "HYBRID_ES_SOURCE_" if "HYBRID_ES_SOURCE_" not in exc.message else None

    def name(text: str | None) -> str | None:
        return text.replace("HYBRID_ES_", ENV_PREFIX) if text and fix else text

    return ConfigurationError(name(exc.message) or "", hint=name(exc.hint))


def read_source_settings(**given: Any) -> SourceSettings:
    """The ``HYBRID_ES_SOURCE_*`` settings (``given`` over the environment's). Raises
    ConfigurationError naming the variable (never the value) for a bad one."""
    try:
        return SourceSettings(**given)
    except ValidationError as exc:
        problems = [
            f"{ENV_PREFIX}{str(e['loc'][0]).upper() if e['loc'] else ''}: {e['msg']}"
            for e in exc.errors()
        ]
        raise ConfigurationError(
            "invalid source setting: " + "; ".join(problems),
            hint="fix the HYBRID_ES_SOURCE_* variable",
        ) from None


def own_bases(layout: IndexLayout) -> tuple[str, ...]:
    """The names (and name prefixes) of a deployment's own indices: chunks, traces, packets and
    corpus state."""
    return tuple(dict.fromkeys((layout.chunks, layout.traces, layout.packets, layout.corpus_state)))


def refuse_own_index(index: str, layout: IndexLayout) -> None:
    """Raise ConfigurationError when the source name ``index`` (a name, an alias, a pattern or
    a comma list) is empty or could reach one of ``layout``'s own indices (``*``,
    ``hybrid-es-*``, a chunks or traces index): a source is read around the policy door."""
    if not index.strip():
        raise ConfigurationError("the source index name is empty", hint="name the index to read")
    if is_guarded(index, own_bases(layout)):
        raise ConfigurationError(
            f"the source {index!r} names, or could reach, one of this deployment's own indices "
            f"({', '.join(own_bases(layout))}...): a source is read without the policy filter, "
            "so it may never be a chunks, traces, packets or corpus-state index",
            hint="name the index that holds your own records (not a hybrid-es index, nor a "
            "pattern such as * that could reach one)",
        )


def connect_source(
    source: SourceSettings, target: Engine, layout: IndexLayout, index: str
) -> Engine:
    """The engine that reads the source ``index``: its own client where the source settings
    name a URL (:func:`connect`, from them alone), else an engine over ``target``'s client.
    Either way it refuses body reads of ``layout``'s chunks and traces indices (the guards), and
    ``index`` is checked first (:func:`refuse_own_index`). Raises ConfigurationError for
    settings that cannot be used, and what :func:`connect` raises."""
    refuse_own_index(index, layout)
    settings = source.connection()
    try:
        engine = as_engine(target.raw, url=target.url) if settings is None else connect(settings)
    except ConfigurationError as exc:
        raise _as_source(exc) from None
    if settings is None:
        engine.version = target.version
    engine.guard(layout.chunks)
    engine.guard_traces(layout.traces)
    return engine
