"""Exit statuses of ``hybrid-es``, and the one table that maps the library's errors to them.

The codes are Elasticsearch's own command-line codes (``org.elasticsearch.cli.ExitCodes``, the BSD
``sysexits.h`` values), so that a script driving both tools reads ``$?`` the same way: 64 usage,
69 unavailable, 77 permission denied, 78 configuration. Two codes are this tool's answers rather
than errors (1: a check found problems or some records failed; 3: a packet may not be released).

This module imports neither typer nor rich: the console script's guard uses it when the ``cli``
extra is missing.
"""

from __future__ import annotations

from enum import IntEnum

from hybrid_es.errors import (
    AuthenticationError,
    BadQueryError,
    BulkIndexError,
    CapabilityMissingError,
    ConfigurationError,
    EngineError,
    EngineUnavailableError,
    HybridEsError,
    IndexMissingError,
    IngestError,
    ManifestConflictError,
    ModelError,
    PacketError,
    PacketNotFoundError,
    PolicyViolationError,
    SearchTimeoutError,
    TemplateConflictError,
    TraceNotFoundError,
    UnknownTenantError,
    VersionConflictError,
)


class ExitCode(IntEnum):
    """The statuses ``hybrid-es`` exits with (``--help`` lists them)."""

    OK = 0
    FAILED = 1
    """The command ran and reports a problem: ``bootstrap --check`` found missing or conflicting
    templates, some ``ingest`` records failed."""
    NOT_RELEASABLE = 3
    """``packet validate`` / ``packet render``: the verdict is not ``reuse``."""
    USAGE = 64
    DATA_ERROR = 65
    NO_INPUT = 66
    UNAVAILABLE = 69
    CODE_ERROR = 70
    CANT_CREATE = 73
    TEMP_FAILURE = 75
    PROTOCOL = 76
    NOPERM = 77
    CONFIG = 78
    INTERRUPTED = 130


ERROR_CODES: dict[type[BaseException], ExitCode] = {
    # The most specific class wins (see exit_code_for): a subclass added later inherits its
    # parent's code until it is given its own line here.
    HybridEsError: ExitCode.FAILED,
    ConfigurationError: ExitCode.CONFIG,
    CapabilityMissingError: ExitCode.CONFIG,
    ModelError: ExitCode.CONFIG,
    BadQueryError: ExitCode.USAGE,
    IngestError: ExitCode.DATA_ERROR,
    BulkIndexError: ExitCode.DATA_ERROR,
    PacketError: ExitCode.DATA_ERROR,
    UnknownTenantError: ExitCode.NO_INPUT,
    IndexMissingError: ExitCode.NO_INPUT,
    PacketNotFoundError: ExitCode.NO_INPUT,
    TraceNotFoundError: ExitCode.NO_INPUT,
    EngineUnavailableError: ExitCode.UNAVAILABLE,
    TemplateConflictError: ExitCode.CANT_CREATE,
    SearchTimeoutError: ExitCode.TEMP_FAILURE,
    VersionConflictError: ExitCode.TEMP_FAILURE,
    ManifestConflictError: ExitCode.TEMP_FAILURE,
    EngineError: ExitCode.PROTOCOL,
    AuthenticationError: ExitCode.NOPERM,
    PolicyViolationError: ExitCode.NOPERM,
}


def exit_code_for(exc: BaseException) -> ExitCode:
    """The status for an error that ended a command: its nearest class in :data:`ERROR_CODES`
    (walking the class's method resolution order); anything else is a bug, ``CODE_ERROR``."""
    for cls in type(exc).__mro__:
        if cls in ERROR_CODES:
            return ERROR_CODES[cls]
    return ExitCode.CODE_ERROR


HELP_ROWS: tuple[tuple[ExitCode, str], ...] = (
    (ExitCode.OK, "success"),
    (ExitCode.FAILED, "the command ran and reports a problem (bootstrap --check, failed records)"),
    (ExitCode.NOT_RELEASABLE, "packet validate/render: the packet may not be reused"),
    (ExitCode.USAGE, "usage error: a bad option, argument or query"),
    (ExitCode.DATA_ERROR, "bad input data (ingest files, rejected bulk items)"),
    (ExitCode.NO_INPUT, "not found: index, tenant corpus, packet or trace"),
    (ExitCode.UNAVAILABLE, "the cluster cannot be reached (connection or TLS)"),
    (ExitCode.CODE_ERROR, "unexpected internal error (rerun with --debug)"),
    (ExitCode.CANT_CREATE, "a template differs from the installed one (use --force)"),
    (ExitCode.TEMP_FAILURE, "timed out or lost a concurrent update: retry"),
    (ExitCode.PROTOCOL, "the cluster answered with an error"),
    (ExitCode.NOPERM, "permission denied: credentials, privileges, or the policy check"),
    (ExitCode.CONFIG, "configuration: settings, licence or capability, model, missing extra"),
    (ExitCode.INTERRUPTED, "interrupted"),
)


def help_text() -> str:
    """The exit-status table that ``hybrid-es --help`` prints after the commands."""
    lines = [f"{int(code):>3}  {what}" for code, what in HELP_ROWS]
    # One paragraph of single lines: typer's rich help keeps single line breaks, and click's
    # plain help (TYPER_USE_RICH=0) keeps them in a paragraph that starts with a backspace (\\b).
    table = "\n".join(lines)
    return f"Exit status (Elasticsearch's CLI codes):\n\n\b\n{table}"
