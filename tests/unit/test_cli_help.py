"""Every command's ``--help`` is readable at 80 columns (issue 25, item 7): no line wider than the
terminal, no word cut short with an ellipsis, no option name or word of an option's help broken
across lines (at a hyphen or anywhere else); and at 150 columns rich's layout, whole as well."""

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
