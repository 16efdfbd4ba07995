"""Exceptions raised by hybrid-es.

Every error the library raises derives from :class:`HybridEsError`; third-party exceptions from
elasticsearch-py and opensearch-py are translated into these in exactly one place,
:func:`translate_es_error`.

    HybridEsError
    ├── ConfigurationError        settings, credentials, model/index mismatch
    ├── BadQueryError             empty / over-long query, k or num_candidates out of range
    │   └── FilterError               a search filter that is malformed or names a field it may not
    ├── UnknownTenantError        the tenant has no corpus state / no documents
    ├── PolicyViolationError      a request body without the policy filter, a hit outside scope
    ├── EngineError               Elasticsearch answered with an error
    │   ├── EngineUnavailableError    cannot connect, timed out
    │   ├── AuthenticationError       wrong credentials (401) or missing privileges (403)
    │   ├── IndexMissingError         the index does not exist (404)
    │   ├── VersionConflictError      a write lost an optimistic-concurrency race (409)
    │   └── CapabilityMissingError    the cluster lacks a feature (e.g. the `rrf` retriever)
    ├── TemplateConflictError     an installed template differs from the file (use --force)
    ├── BulkIndexError            some bulk items failed; ``failed`` lists each with its reason
    ├── IngestError               malformed input (carries the line number where known)
    ├── PacketError               packet store problems
    │   ├── PacketNotFoundError       not the caller's packet (missing, or anyone else's)
    │   └── ManifestConflictError     optimistic-concurrency conflict on a packet
    ├── TraceNotFoundError        not the caller's trace (missing, or anyone else's)
    └── ModelError                a model could not be loaded or does not match the index
"""

from __future__ import annotations

from typing import Any


class HybridEsError(Exception):
    """Base class; ``hint`` says what the user can do about it."""

    trace_id: str | None = None
    """Set on an error that a search raised: its trace id (the requests' ``X-Opaque-Id``)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickling (multiprocessing, task queues) rebuilds the error from its state: the
        # default would call ``cls(*args)`` and lose the keyword-only fields (or fail on the
        # required ones, ``diffs`` and ``failed``).
        return (_rebuild, (type(self), dict(self.__dict__)))


def _rebuild(cls: type[HybridEsError], state: dict[str, Any]) -> HybridEsError:
    """An error of ``cls`` with ``state`` as its attributes (``HybridEsError.__reduce__``)."""
    err = cls.__new__(cls)
    Exception.__init__(err, state.get("message", ""))
    err.__dict__.update(state)
    return err


class ConfigurationError(HybridEsError):
    pass


class BadQueryError(HybridEsError):
    pass


class FilterError(BadQueryError):
    """A search filter refused before anything is sent: malformed, too large, an unsupported
    operator, a value of the wrong type, or a field that is not declared filterable (a policy
    field never is). ``field`` names the field concerned, where there is one."""

    def __init__(self, message: str, *, hint: str | None = None, field: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.field = field


class UnknownTenantError(HybridEsError):
    pass


class PolicyViolationError(HybridEsError):
    pass


class EngineError(HybridEsError):
    def __init__(self, message: str, *, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class EngineUnavailableError(EngineError):
    pass


class SearchTimeoutError(EngineUnavailableError):
    pass


class AuthenticationError(EngineError):
    pass


class IndexMissingError(EngineError):
    pass


class CapabilityMissingError(EngineError):
    pass


class VersionConflictError(EngineError):
    pass


class TemplateConflictError(HybridEsError):
    def __init__(self, message: str, *, diffs: dict[str, str], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.diffs = diffs


class BulkIndexError(HybridEsError):
    def __init__(self, message: str, *, failed: list[dict[str, Any]]) -> None:
        super().__init__(message, hint="each failed item is listed with its reason in .failed")
        self.failed = failed


class IngestError(HybridEsError):
    def __init__(self, message: str, *, line: int | None = None, hint: str | None = None) -> None:
        super().__init__(message if line is None else f"line {line}: {message}", hint=hint)
        self.line = line


class PacketError(HybridEsError):
    pass


class PacketNotFoundError(PacketError):
    pass


class ManifestConflictError(PacketError):
    pass


class TraceNotFoundError(HybridEsError):
    pass


class ModelError(HybridEsError):
    pass


def translate_es_error(
    exc: BaseException, *, url: str = "", what: str = "request"
) -> HybridEsError:
    """Map an elasticsearch-py, opensearch-py or transport exception to a :class:`HybridEsError`.

    The only place in the package that knows the clients' exception types. Messages never
    include credentials: ``url`` must be the redacted form (see ``Settings.redacted_url``).
    """
    import elastic_transport
    import elasticsearch

    if isinstance(exc, HybridEsError):
        return exc
    if isinstance(exc, elastic_transport.ConnectionTimeout):
        return _timed_out("Elasticsearch", url, what)
    if isinstance(exc, elastic_transport.TransportError) and not isinstance(
        exc, elasticsearch.ApiError
    ):
        return _unreachable("Elasticsearch", url, exc)
    if isinstance(exc, elasticsearch.ApiError):
        status = exc.meta.status if exc.meta is not None else None
        return from_error_body(status, exc.body, url=url, what=what)
    translated = _translate_opensearch(exc, url=url, what=what)
    if translated is not None:
        return translated
    return EngineError(f"unexpected error during {what}: {type(exc).__name__}: {exc}")


def _timed_out(engine: str, url: str, what: str) -> SearchTimeoutError:
    return SearchTimeoutError(
        f"{engine} at {url} timed out during {what}",
        hint="the cluster is overloaded, or raise HYBRID_ES_REQUEST_TIMEOUT",
    )


def _unreachable(engine: str, url: str, exc: BaseException) -> HybridEsError:
    tls = tls_error(engine, url, exc)
    if tls is not None:
        return tls
    if url.startswith("http://") and "closed connection without response" in _chain_text(exc):
        # What an HTTPS port does with plain HTTP (Elasticsearch 8+ serves HTTPS by default).
        return EngineUnavailableError(
            f"{engine} at {url} closed the connection without answering",
            hint="if the cluster serves HTTPS, use https:// in HYBRID_ES_URL (and set "
            "HYBRID_ES_CA_CERTS to its CA file)",
        )
    script = "scripts/opensearch.sh" if engine == "OpenSearch" else "scripts/es.sh"
    hint = f"start a local node with `{script} start`, or set HYBRID_ES_URL"
    return EngineUnavailableError(f"cannot reach {engine} at {url}", hint=hint)


_VERIFY_FAILED = ("CERTIFICATE_VERIFY_FAILED", "certificate verify failed")


def tls_error(server: str, url: str, exc: BaseException) -> HybridEsError | None:
    """A TLS failure (as the clients and urllib3 word it) as one error naming the setting to fix;
    None when ``exc`` is no TLS failure. An expired certificate is the server's to renew
    (EngineUnavailableError); the rest are this side's settings (ConfigurationError).

    Only the kind of failure is read from the exception: its text is not shown."""
    text = _chain_text(exc)
    if not any(kind in text for kind in ("SSLError", "TlsError", "CertificateError")):
        return None
    where = f"the TLS certificate of {server} at {url}"
    if "Fingerprints did not match" in text or "fingerprint mismatch" in text.lower():
        return ConfigurationError(
            f"{where} does not match HYBRID_ES_SSL_ASSERT_FINGERPRINT",
            hint="set it to the SHA-256 fingerprint of the certificate the cluster serves (or of "
            "its CA): `openssl x509 -in http_ca.crt -noout -fingerprint -sha256`",
        )
    if "certificate has expired" in text:
        return EngineUnavailableError(
            f"{where} has expired",
            hint="renew the certificate on the cluster (and check this machine's clock); "
            "HYBRID_ES_URL names the server",
        )
    if any(m in text for m in ("Hostname mismatch", "IP address mismatch", "doesn't match")):
        return ConfigurationError(
            f"{where} does not name the host in HYBRID_ES_URL",
            hint="connect with a host name that the certificate names (its subjectAltName), or "
            "re-issue the certificate with this host in it",
        )
    if any(m in text for m in _VERIFY_FAILED):
        return ConfigurationError(
            f"{where} is not signed by a CA this client trusts",
            hint="set HYBRID_ES_CA_CERTS to the PEM file of the CA that signed it (a default "
            "Elasticsearch install writes config/certs/http_ca.crt), or "
            "HYBRID_ES_SSL_ASSERT_FINGERPRINT to that CA's SHA-256 fingerprint",
        )
    if "WRONG_VERSION_NUMBER" in text or "wrong version number" in text:
        return ConfigurationError(
            f"{server} at {url} does not speak TLS on that port",
            hint="use http:// in HYBRID_ES_URL, or the port where the cluster serves HTTPS",
        )
    return None


def _chain_text(exc: BaseException, depth: int = 0) -> str:
    """What an exception and the ones behind it say: elastic-transport keeps the TLS reason in
    ``message``, ``errors`` and the cause (its own text can be just "TLS error")."""
    parts = [type(exc).__name__, str(exc), str(getattr(exc, "message", ""))]
    if depth < 4:
        errors = getattr(exc, "errors", ())
        nested = [*(errors if isinstance(errors, tuple | list) else ()), exc.__cause__]
        parts += [_chain_text(e, depth + 1) for e in nested if isinstance(e, BaseException)]
    return " ".join(parts)


def missing_credentials(url: str, *, username: str | None = None) -> ConfigurationError:
    """The error for a cluster that demands credentials (HTTP 401) when none are configured."""
    half = (
        f"HYBRID_ES_USERNAME is set ({username}) but HYBRID_ES_PASSWORD is not; "
        if username
        else ""
    )
    return ConfigurationError(
        f"the cluster at {url} demands credentials, and none are configured ({half}no API key, "
        "bearer token, or user and password)",
        hint="set HYBRID_ES_API_KEY, or HYBRID_ES_BEARER_AUTH, or HYBRID_ES_USERNAME and "
        "HYBRID_ES_PASSWORD (for Elastic Cloud with HYBRID_ES_CLOUD_ID; for a start-local "
        "install, HYBRID_ES_START_LOCAL_ENV=auto reads its elastic-start-local/.env)",
    )


def _translate_opensearch(exc: BaseException, *, url: str, what: str) -> HybridEsError | None:
    try:
        from opensearchpy import exceptions as ose
    except ImportError:  # the opensearch extra is not installed: nothing of its can be raised
        return None
    if isinstance(exc, ose.ConnectionTimeout):
        return _timed_out("OpenSearch", url, what)
    if isinstance(exc, ose.ConnectionError):
        return _unreachable("OpenSearch", url, exc)
    if isinstance(exc, ose.TransportError):
        status = exc.status_code if isinstance(exc.status_code, int) else None
        body = exc.info if isinstance(exc.info, dict) else {"error": str(exc.error)}
        return from_error_body(status, body, url=url, what=what)
    return None


def from_error_body(
    status: int | None, body: Any, *, url: str = "", what: str = "request"
) -> EngineError:
    """Map an HTTP status and an error body (also an ``_msearch`` item) to an error; both engines
    answer in the same shape."""
    reason = error_reason(body)
    if "non-compliant" in reason or ("license" in reason.lower() and status == 403):
        return CapabilityMissingError(f"the licence does not allow {what}: {reason}", status=status)
    if status == 401:
        return AuthenticationError(
            f"the cluster at {url} rejected the credentials",
            hint="check HYBRID_ES_USERNAME/HYBRID_ES_PASSWORD, HYBRID_ES_API_KEY or "
            "HYBRID_ES_BEARER_AUTH",
            status=status,
        )
    if status == 403:
        return AuthenticationError(
            f"the credentials lack a privilege for {what}: {reason}",
            hint="grant the role the privilege, or use a user that has it",
            status=status,
        )
    if status == 409:
        return VersionConflictError(
            f"{what}: the record changed since it was read (version conflict)", status=status
        )
    if status == 404 and "index_not_found" in str(body):
        return IndexMissingError(
            f"index missing during {what}: {reason}",
            hint="run `hybrid-es bootstrap` and ingest documents first",
            status=status,
        )
    if status == 400 and "unknown retriever" in reason:
        return CapabilityMissingError(
            f"the cluster does not support this retriever: {reason}",
            hint="use fusion='client' (the default 'auto' probes this for you)",
            status=status,
        )
    if status in (408, 504) or "timed_out" in reason:
        return SearchTimeoutError(f"{what} timed out at {url}: {reason}", status=status)
    return EngineError(
        f"{what} failed: the cluster answered HTTP {status}: {reason}", status=status
    )


def error_reason(body: Any) -> str:
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            root = err.get("root_cause") or []
            if root and isinstance(root[0], dict):
                return f"{root[0].get('type')}: {root[0].get('reason')}"
            return f"{err.get('type')}: {err.get('reason')}"
        if isinstance(err, str):
            return err
    return str(body)[:500]
