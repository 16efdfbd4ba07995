"""``hybrid-es search --filter``: a bad filter is a usage error (exit 64) naming ``--filter`` and
what is wrong, before any model is loaded or the cluster is contacted (the URL here answers
nothing: reaching it would exit 69). The command runs in the test's process
(tests/cli_in_process.py), with only the environment given here."""

from __future__ import annotations

import pytest

from tests.cli_in_process import run_cli

DECLARED = "team:keyword,year:number,published:date,draft:boolean"
SEARCH = ["search", "q", "--tenant", "demo-A"]
CASES = [
    ("{team: ops}", DECLARED, ["--filter", "not JSON: malformed JSON"]),
    ('{"x": NaN}', DECLARED, ["--filter", "not JSON"]),
    ('["team", "ops"]', DECLARED, ["--filter", "a filter is a JSON object"]),
    ('{"tenant": "demo-B"}', DECLARED, ["--filter", "tenant is a policy field", "team (keyword)"]),
    (
        '{"$or": [{"team": "ops"}, {"acl_groups": "*"}]}',
        DECLARED,
        ["acl_groups is a policy field"],
    ),
    ('{"colour": "red"}', DECLARED, ["'colour' is not a filterable field", "year (number)"]),
    ('{"team": {"$regex": "o.*"}}', DECLARED, ["unsupported operator '$regex'"]),
    ('{"year": "2024"}', DECLARED, ["year is a number field and $eq needs a number"]),
    ('{"team": "ops"}', "", ["'team' is not a filterable field", "filterable fields: none"]),
]


@pytest.mark.parametrize(("text", "declared", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_filter_is_a_usage_error(text, declared, expected):
    proc = run_cli(
        *SEARCH,
        "--filter",
        text,
        env={
            "PATH": "/usr/bin:/bin",
            "COLUMNS": "300",
            "HYBRID_ES_URL": "http://127.0.0.1:9",
            "HYBRID_ES_FILTERABLE_FIELDS": declared,
        },
    )
    err = " ".join(proc.stderr.split())
    assert proc.returncode == 64, proc.stderr
    for part in expected:
        assert part in err, (part, err)
    for noise in ("BadParameter", "FilterError", "--debug", "Traceback"):
        assert noise not in err


def test_a_bad_declaration_is_a_configuration_error():
    proc = run_cli(
        *SEARCH,
        "--filter",
        '{"team": "ops"}',
        env={
            "PATH": "/usr/bin:/bin",
            "COLUMNS": "300",
            "HYBRID_ES_URL": "http://127.0.0.1:9",
            "HYBRID_ES_FILTERABLE_FIELDS": "team:text",
        },
    )
    assert proc.returncode == 78, proc.stderr
    assert "HYBRID_ES_FILTERABLE_FIELDS" in proc.stderr and "unknown type 'text'" in proc.stderr
