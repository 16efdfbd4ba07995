"""The CLI's exit statuses are Elasticsearch's own CLI codes (the BSD sysexits values of
``org.elasticsearch.cli.ExitCodes``), one per kind of failure, mapped in ``cli/exits.py`` only and
listed by ``--help``. Each is checked here with the real command in a subprocess; none of these
needs a cluster (a closed port is the unavailable one). Permission denied (77) needs the real
cluster's refusal: tests/integration/test_bootstrap.py and test_secrets.py check it."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

from hybrid_es import errors
from hybrid_es.cli.exits import ERROR_CODES, ExitCode, exit_code_for

CLOSED = "http://127.0.0.1:9"
"""A URL on a port nothing listens on: the connection is refused at once."""


def _cli(*args: str, code: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": "/usr/bin:/bin",
        "COLUMNS": "200",
        "HYBRID_ES_URL": CLOSED,
        "HYBRID_ES_USERNAME": "elastic",
        "HYBRID_ES_PASSWORD": "not-used-here",
        "HYBRID_ES_MAX_RETRIES": "0",
    }
    command = ["-c", code] if code else ["-m", "hybrid_es.cli"]
    return subprocess.run(
        [sys.executable, *command, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
    )


def test_the_codes_are_elasticsearchs():
    # org.elasticsearch.cli.ExitCodes: USAGE 64, DATA_ERROR 65, NO_INPUT 66, UNAVAILABLE 69,
    # CODE_ERROR 70, CANT_CREATE 73, TEMP_FAILURE 75, PROTOCOL 76, NOPERM 77, CONFIG 78.
    assert (ExitCode.USAGE, ExitCode.DATA_ERROR, ExitCode.NO_INPUT) == (64, 65, 66)
    assert (ExitCode.UNAVAILABLE, ExitCode.CODE_ERROR, ExitCode.CANT_CREATE) == (69, 70, 73)
    assert (ExitCode.TEMP_FAILURE, ExitCode.PROTOCOL) == (75, 76)
    assert (ExitCode.NOPERM, ExitCode.CONFIG) == (77, 78)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.ConfigurationError("x"), 78),
        (errors.CapabilityMissingError("x"), 78),
        (errors.ModelError("x"), 78),
        (errors.BadQueryError("x"), 64),
        (errors.IngestError("x"), 65),
        (errors.BulkIndexError("x", failed=[]), 65),
        (errors.IndexMissingError("x"), 66),
        (errors.UnknownTenantError("x"), 66),
        (errors.PacketNotFoundError("x"), 66),
        (errors.TraceNotFoundError("x"), 66),
        (errors.EngineUnavailableError("x"), 69),
        (errors.TemplateConflictError("x", diffs={}), 73),
        (errors.SearchTimeoutError("x"), 75),
        (errors.VersionConflictError("x"), 75),
        (errors.ManifestConflictError("x"), 75),
        (errors.EngineError("x"), 76),
        (errors.AuthenticationError("x", status=401), 77),
        (errors.AuthenticationError("x", status=403), 77),
        (errors.PolicyViolationError("x"), 77),
        (errors.HybridEsError("x"), 1),
        (RuntimeError("a bug"), 70),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_each_error_has_its_code(error, code):
    assert exit_code_for(error) == code


def test_a_new_subclass_inherits_its_parents_code():
    class CertificateExpiredError(errors.EngineUnavailableError):
        pass

    assert CertificateExpiredError not in ERROR_CODES
    assert exit_code_for(CertificateExpiredError("x")) == ExitCode.UNAVAILABLE


def test_help_lists_every_exit_code():
    out = _cli("--help")
    assert out.returncode == 0, out.stderr
    assert "Exit status (Elasticsearch's CLI codes)" in out.stdout
    for code in ExitCode:
        assert f" {int(code)}  " in out.stdout, code


def test_version():
    out = _cli("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"hybrid-es {version('hybrid-es')}"


@pytest.mark.parametrize(
    "args",
    [["--no-such-option"], ["search"], ["no-such-command"], []],
    ids=["unknown option", "missing argument", "unknown command", "no command"],
)
def test_usage_errors_exit_64(args):
    out = _cli(*args)
    assert out.returncode == ExitCode.USAGE == 64, out.stdout + out.stderr
    assert "Traceback" not in out.stderr


def test_an_unavailable_cluster_exits_69():
    out = _cli("capabilities")
    assert out.returncode == ExitCode.UNAVAILABLE == 69, out.stderr
    assert "cannot reach" in out.stderr and "hint:" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_bad_setting_exits_78_naming_the_variable_not_its_value():
    out = _cli("capabilities", HYBRID_ES_MAX_RETRIES="s3cret-not-a-number")
    assert out.returncode == ExitCode.CONFIG == 78, out.stderr
    assert "HYBRID_ES_MAX_RETRIES" in out.stderr and "s3cret" not in out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "ValidationError" not in out.stderr


@pytest.mark.parametrize("missing", ["typer", "rich"])
def test_the_console_script_without_the_cli_extra_says_what_to_install(missing):
    # None in sys.modules makes the import fail as if the package were not installed.
    code = f"import sys; sys.modules[{missing!r}] = None; from hybrid_es.cli import main; main()"
    out = _cli("--help", code=code)
    assert out.returncode == ExitCode.CONFIG, out.stderr
    assert f"needs {missing}" in out.stderr and "pip install '.[cli]'" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_header_value_outside_latin_1_exits_78_naming_the_header():
    # Before: accepted by the settings, then a UnicodeEncodeError out of the first request,
    # "unexpected error" with exit 76.
    options = '{"headers": {"X-Hybrid-Es-Team": "\u00e9quipe \u20ac"}}'
    out = _cli("capabilities", HYBRID_ES_CLIENT_OPTIONS=options)
    assert out.returncode == ExitCode.CONFIG == 78, out.stderr
    assert "X-Hybrid-Es-Team" in out.stderr and "Latin-1" in out.stderr
    assert "Traceback" not in out.stderr and "UnicodeEncodeError" not in out.stderr


def test_start_local_env_is_read_only_when_asked_for_and_never_with_your_credentials(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text(f"ES_LOCAL_URL={CLOSED}\nES_LOCAL_PASSWORD=from-the-file\n")
    # The base environment holds a user and password: the file's URL is refused beside them.
    out = _cli("--start-local-env", str(env_file), "capabilities", HYBRID_ES_URL="")
    assert out.returncode == ExitCode.CONFIG == 78, out.stderr
    assert "HYBRID_ES_PASSWORD" in out.stderr and "HYBRID_ES_START_LOCAL_ENV" in out.stderr
    assert "not-used-here" not in out.stderr
    # Without credentials of your own, the file's URL with its own (the closed port).
    mine = {"HYBRID_ES_URL": "", "HYBRID_ES_USERNAME": "", "HYBRID_ES_PASSWORD": ""}
    out = _cli("--start-local-env", str(env_file), "capabilities", **mine)
    assert out.returncode == ExitCode.UNAVAILABLE == 69, out.stderr
    assert CLOSED in out.stderr and "cannot reach" in out.stderr
