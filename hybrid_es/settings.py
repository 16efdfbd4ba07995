"""Configuration from ``HYBRID_ES_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from hybrid_es.tenancy import IndexLayout, TenancyMode

DEFAULT_CHUNKS_INDEX = "hybrid-es-chunks"
DEFAULT_PACKETS_INDEX = "hybrid-es-packets"
DEFAULT_TRACES_INDEX = "hybrid-es-traces"
DEFAULT_CORPUS_STATE_INDEX = "hybrid-es-corpus-state"


class Settings(BaseSettings):
    """Everything that can be configured; each field reads ``HYBRID_ES_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="HYBRID_ES_", extra="ignore", frozen=True)

    url: str = "http://127.0.0.1:9200"
    username: str | None = "elastic"
    password: SecretStr | None = SecretStr("hybrid-es-dev")
    api_key: SecretStr | None = None
    ca_certs: Path | None = None
    """A CA file (PEM) that signed the cluster's TLS certificate (a self-signed local node)."""
    verify_certs: bool = True
    request_timeout: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=3, ge=0)

    chunks_index: str = DEFAULT_CHUNKS_INDEX
    packets_index: str = DEFAULT_PACKETS_INDEX
    traces_index: str = DEFAULT_TRACES_INDEX
    corpus_state_index: str = DEFAULT_CORPUS_STATE_INDEX
    templates_dir: Path | None = None

    embedder: str = "minilm"
    reranker_model: str | None = None
    reranker_precision: str = Field(default="int8", pattern="^(fp32|bf16|int8)$")
    reranker_max_length: int | None = Field(default=None, ge=16, le=512)
    """Tokens per (query, passage) pair; default: what the model was trained at (or 256)."""
    rerank_depth: int = Field(default=50, ge=1, le=1000)
    fusion: str = Field(default="auto", pattern="^(auto|native|client)$")
    trace_query_text: bool = False
    """Store the raw query text in traces (off: traces keep only its hash)."""
    packet_ttl_minutes: float = Field(default=10.0, gt=0)
    tenancy: TenancyMode = "index-per-tenant"
    """``index-per-tenant`` (a chunks index per tenant: no score side channel) or ``shared``."""
    default_acl: Literal["none", "everyone"] = "none"
    """ACL of a document that names none: ``none`` (fail closed: visible to nobody until an ACL
    is set; the production setting) or ``everyone`` (every user of its tenant)."""
    trace_hash_key: SecretStr | None = None
    """Key of the HMAC that traces keep instead of query text. Set one per deployment so that
    equal queries group across processes; unset, each process draws a random key. Without a
    key, a guessed query could be confirmed by hashing it."""

    def layout(self) -> IndexLayout:
        """The index names of this deployment, by tenancy mode."""
        return IndexLayout(
            chunks=self.chunks_index,
            packets=self.packets_index,
            traces=self.traces_index,
            corpus_state=self.corpus_state_index,
            mode=self.tenancy,
        )

    def redacted_url(self) -> str:
        """The URL without any user:password part, safe for messages and logs."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        if parts.port:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # The URL may carry user:password: a logged or printed Settings must not show it.
        for name, value in super().__repr_args__():
            yield name, (self.redacted_url() if name == "url" else value)
