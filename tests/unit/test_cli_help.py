"""Every command's ``--help`` is readable at 80 columns (issue 25, item 7): no line wider than the
terminal, no word cut short with an ellipsis, no option name or word of an option's help broken
across lines (at a hyphen or anywhere else); and at 150 columns, whole as well. It reads like a
tool's (issue 39, item 4): plain metavars and usage names, never a Python type; help for every
option and argument; the same rich layout and colours at the top level and in every command."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from hybrid_es.cli.main import app

pytest.importorskip("rich")


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


def _help(path: tuple[str, ...], columns: int) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


def _tokens(text: str) -> set[str]:
    """The words of ``text`` as printed: runs without blanks, box lines or commas (rich prints
    an option's names as ``--space,--kibana-space``)."""
    return set(re.findall(r"[^\s│╭╮╰╯─,]+", text))


def test_every_command_is_covered():
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"search", "ingest", "bootstrap", "verify", "packet build", "traces tail"} <= names


@pytest.mark.parametrize("path, cmd", COMMANDS, ids=[" ".join(p) or "root" for p, _ in COMMANDS])
@pytest.mark.parametrize("columns", [80, 150])
def test_help_keeps_every_name_and_word_whole(path, cmd, columns):
    out = _help(path, columns)
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= columns
    printed = _tokens(out)
    for param in cmd.params:
        for name in (*param.opts, *param.secondary_opts):
            if name.startswith("-"):
                assert name in printed, f"{name} is not printed whole"
        for word in _tokens(getattr(param, "help", None) or ""):
            assert word in printed, f"{word!r} of {param.name}'s help is broken or cut"


PYTHON_IN_HELP = re.compile(
    r"list\[|(str|int|float|bool|Path)\]|<(bool|int|str|float|path|Path|list|tuple|dict)\b|Optional|NoneType|Union\[|"
    r"PosixPath|typing\.|<class |\{[a-z_]+\}"
)
"""How typer shows Python in help: ``<list[str]>``, ``<bool>``, ``Optional[...]``, ``{query}``."""


@pytest.mark.parametrize("path, cmd", COMMANDS, ids=[" ".join(p) or "root" for p, _ in COMMANDS])
def test_help_shows_plain_metavars_and_usage_names_and_helps_every_option(path, cmd):
    out = _help(path, 100)
    found = PYTHON_IN_HELP.findall(out)
    assert not PYTHON_IN_HELP.search(out), f"Python in help: {found}\n{out}"
    usage = next(line for line in out.splitlines() if "Usage:" in line)
    assert re.search(
        r"Usage: [a-z-]+[ a-z-]* \[OPTIONS\]( \[?[A-Z_]+\]?| COMMAND \[ARGS\]\.\.\.)*\s*$", usage
    ), usage
    for param in cmd.params:
        assert (getattr(param, "help", None) or "").strip(), f"{param.name} has no help"
        if param.param_type_name == "argument":
            assert param.name.upper() in usage  # QUERY, PATH, PACKET_ID
    ctx = cmd.make_context(" ".join(("hybrid-es", *path)), [], resilient_parsing=True)
    for param in cmd.get_params(ctx):
        kind = param.display_type_rich(ctx)
        if getattr(param, "is_flag", False):
            assert kind is None, f"{param.name}: a flag shows {kind!r}"
        else:
            assert kind and re.fullmatch(r"[A-Z][A-Z_.|=a-z]*", kind), f"{param.name}: {kind!r}"


@pytest.mark.parametrize("path, cmd", COMMANDS, ids=[" ".join(p) or "root" for p, _ in COMMANDS])
def test_every_help_has_the_same_layout_and_colours(path, cmd):
    """Top level and sub-commands alike: the usage line, panels, option names in bold cyan and
    metavars in bold yellow on a terminal (FORCE_COLOR stands in for one)."""
    result = CliRunner().invoke(
        app, [*path, "--help"], env={"COLUMNS": "80", "FORCE_COLOR": "1"}, color=True
    )
    assert result.exit_code == 0, result.output
    out = result.output
    text = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert "\x1b[33mUsage: \x1b[0m" in out and "\x1b[1;36m--help\x1b[0m" in out
    assert "╭─ Options " in text
    if getattr(cmd, "commands", None):
        assert "╭─ Commands " in text
    elif any(p.param_type_name == "argument" for p in cmd.params):
        assert "╭─ Arguments " in text
    if any(not getattr(p, "is_flag", False) for p in cmd.params):
        assert "\x1b[1;33m " in out  # a metavar
