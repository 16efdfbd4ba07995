"""Bad CLI input is a usage error that names the option, says what was wrong and the expected
form, and exits with the usage code, 64 as in Elasticsearch's CLI (issue 14, item 7; it was
click's 2) (issue 11, item 14: these printed a type name such as "BadParameter" or
"ValidationError" and "rerun with --debug"). No cluster is contacted. The command runs in the
test's process (tests/cli_in_process.py), with only the environment given here; the console
script as a process is tests/unit/test_cli_exit_codes.py's."""

from __future__ import annotations

import pytest

from tests.cli_in_process import run_cli

CASES = [
    (
        ["search", "q", "--tenant", "demo-A", "--as-of", "2026-13-01"],
        ["--as-of", "'2026-13-01' is not a date", "YYYY-MM-DD"],
    ),
    (
        ["search", "q", "--tenant", "demo-A", "--stay", "X"],
        ["--stay", "'X' is not a stay", "FROM..TO"],
    ),
    (
        ["search", "q", "--tenant", "demo-A", "--stay", "2026-04-14..2026-04-10"],
        ["--stay", "ends before it starts"],
    ),
    (
        ["search", "q", "--tenant", "demo-A", "--stay", "2026-04-10..2026-04-3x"],
        ["--stay", "'2026-04-3x' is not a date"],
    ),
    (["search", "q", "--tenant", ""], ["--tenant", "is not a valid tenant id", "letters, digits"]),
    (["search", "q", "--tenant", "a::b"], ["--tenant", "is not a valid tenant id"]),
    (["search", "q", "--tenant", "demo-A", "--user", " x"], ["--user", "surrounding whitespace"]),
    (
        [
            "search",
            "q",
            "--tenant",
            "demo-A",
            "--as-of",
            "2026-04-01",
            "--stay",
            "2026-04-01..2026-04-02",
        ],
        ["--as-of", "not both"],
    ),
    (
        ["packet", "validate", "P-packet-v1", "--tenant", "demo-A", "--as-of", "tomorrow"],
        ["--as-of", "'tomorrow' is not a date"],
    ),
    (["ingest", "x.jsonl", "--tenant", "demo-A", "--map", "doc_id"], ["--map", "SOURCE=TARGET"]),
    (
        ["ingest", "x.jsonl", "--tenant", "demo-A", "--default-acl", "all"],
        ["--default-acl", "none or everyone"],
    ),
    (["traces", "tail"], ["--tenant", "--operator"]),
    (["ingest", "--tenant", "demo-A"], ["--from-index", "PATH"]),
    (["ingest", "x.jsonl", "--from-index", "docs", "--tenant", "demo-A"], ["one of them"]),
    (
        ["ingest", "--from-index", "docs", "--tenant", "demo-A", "--slices", "2"],
        ["--slice", "--workers 2"],
    ),
    (
        ["ingest", "--from-index", "docs", "--tenant", "demo-A", "--slices", "2", "--slice", "2"],
        ["--slice must be 0..1"],
    ),
    (
        ["ingest", "--from-index", "docs", "--tenant", "demo-A", "--map", "a=nowhere"],
        ["--map", "unknown target", "metadata.*"],
    ),
    (
        ["ingest", "x.jsonl", "--tenant", "demo-A", "--map", "perms=acl"],
        ["--map", "unknown target field(s) acl"],
    ),
]


@pytest.mark.parametrize(("args", "expected"), CASES, ids=[" ".join(c[0][:3]) for c in CASES])
def test_bad_input_is_a_usage_error_naming_the_option(args, expected):
    proc = run_cli(
        *args,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "300", "HYBRID_ES_URL": "http://127.0.0.1:9"},
    )
    err = " ".join(proc.stderr.split())
    assert proc.returncode == 64, proc.stderr
    for part in expected:
        assert part in err, (part, err)
    for noise in ("BadParameter", "ValidationError", "--debug", "Traceback"):
        assert noise not in err
