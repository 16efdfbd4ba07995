"""How every ``hybrid-es`` help page reads: plain metavars (TEXT, INTEGER, PATH, DATE, ...; none
for a flag), plain names in the usage line (``QUERY``, ``[PATH]``), and one rich layout, in
typer's colours, at the top level and in every command and sub-command (:func:`help_page`).

typer prints a parameter's Python type in help (``<list[str]>``, ``<bool>`` on a flag and on
``--help``, ``{query}`` in the usage line) and has no setting for it; it builds each parameter
itself (``typer.main._get_param``), with no hook for another class. So the commands and groups
built by :class:`App` re-class their parameters, as they are made, as :class:`PlainOption` and
:class:`PlainArgument`: the same objects, parsed the same way, displayed as click displays them.
A parameter's own ``metavar`` (``DATE``, ``FROM..TO``) still wins.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar, cast, get_args

import typer
from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

F = TypeVar("F", bound=Callable[..., Any])

_TYPE_NAMES: dict[object, str] = {
    str: "TEXT",
    int: "INTEGER",
    float: "FLOAT",
    bool: "BOOLEAN",
    Path: "PATH",
}


def type_name(param: TyperOption | TyperArgument) -> str:
    """The plain name of what ``param`` takes: TEXT, INTEGER, FLOAT, PATH (a list's element
    type, for an option that may be repeated); VALUE for anything else."""
    desc = param.type_descriptor
    annotation: object = desc.annotation
    if desc.is_list and get_args(annotation):
        annotation = get_args(annotation)[0]
    if desc.is_path:
        return "PATH"
    return _TYPE_NAMES.get(annotation, "VALUE")


class PlainOption(TyperOption):
    """An option shown with its metavar, else the plain name of its type; a flag with none."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        return self.metavar or type_name(self)


class PlainArgument(TyperArgument):
    """An argument named in capitals (``QUERY``, its metavar if it has one), with the plain name
    of its type beside it, and in the usage line as click writes it: ``QUERY``, ``[QUERY]``,
    ``QUERY...``."""

    @property
    def display_name_raw(self) -> str:
        return self.metavar or (self.name or "").upper()

    def display_type_rich(self, ctx: Any) -> str | None:
        return type_name(self)

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def plain(params: Iterable[Any]) -> None:
    """Re-class typer's options and arguments in ``params`` as their plain subclasses (which add
    no state: only how they are displayed changes)."""
    for p in params:
        if type(p) is TyperOption:
            p.__class__ = PlainOption
        elif type(p) is TyperArgument:
            p.__class__ = PlainArgument


class _Plain:
    """What :class:`PlainCommand` and :class:`PlainGroup` add to typer's: plain parameters (the
    ``--help`` option among them, which click makes on first use), and help laid out by
    :func:`help_page`."""

    params: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        plain(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        plain([option])
        return option

    def format_help(self, ctx: Any, formatter: Any) -> None:
        formatter.write(help_page(cast(Any, self), ctx))


class PlainCommand(_Plain, TyperCommand):
    """A typer command with plain help (module docstring)."""


class PlainGroup(_Plain, TyperGroup):
    """A typer group with plain help (module docstring)."""


class App(typer.Typer):
    """A typer app whose groups and commands are :class:`PlainGroup` and :class:`PlainCommand`
    (so their help reads the same, :func:`help_page`), without shell-completion options, and
    showing its help when given no command."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", PlainGroup)
        kwargs.setdefault("add_completion", False)
        kwargs.setdefault("no_args_is_help", True)
        super().__init__(**kwargs)

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[F], F]:
        return super().command(name, cls=cls or PlainCommand, **kwargs)


# -- the help page ------------------------------------------------------------------------------
#
# typer's rich layout gives each option five columns (the required mark, long names, short
# names, negative names, type) before its help, so at 80 columns (a standard terminal, or output
# piped) the help is squeezed to about 25 and words and even option names end in "…". This one
# has two: the option as click writes it (``--tenant TEXT``, ``--historical / --no-historical``,
# wrapped at a space when long) and its help, with typer's colours, at every level.

NAMES_WIDTH = 28
"""The widest the option column grows; a longer entry wraps at its spaces (`` / ``)."""

_OPTION, _NEGATIVE, _METAVAR, _EXTRA = "bold cyan", "bold magenta", "bold yellow", "dim"


def paragraphs(text: str | None) -> list[str]:
    """``text`` (a docstring or help string) as paragraphs, each one line; a paragraph that starts
    with click's ``\\b`` keeps its lines (the marker dropped)."""
    if not text:
        return []
    out = []
    for para in inspect.cleandoc(text).partition("\f")[0].split("\n\n"):
        if para.startswith("\b"):
            out.append(para.removeprefix("\b").strip("\n"))
        elif para.strip():
            out.append(" ".join(para.split()))
    return out


def _names(opts: Iterable[str]) -> str:
    """Option names as click lists them: short ones first (``-n, --lines``)."""
    return ", ".join(sorted(opts, key=lambda o: o.startswith("--")))


def _term(param: Any, ctx: Any) -> Text:
    """How ``param`` is named in its panel: ``--tenant TEXT``, ``-n, --lines INTEGER``,
    ``--historical / --no-historical``, ``QUERY TEXT`` (``PATH``, not ``PATH PATH``)."""
    name = param.display_name_raw if isinstance(param, TyperArgument) else _names(param.opts)
    term = Text()
    term.append(name, style=_OPTION)  # a span: the cell's padding stays unstyled
    kind = param.display_type_rich(ctx)
    if kind and kind != name:
        term.append(f" {kind}", style=_METAVAR)
    if param.secondary_opts:
        term.append(" / ")
        term.append(_names(param.secondary_opts), style=_NEGATIVE)
    return term


def _description(param: Any, ctx: Any) -> Text | None:
    """``param``'s help, and after it, dimmed, what click adds (``[default: cli]``,
    ``[required]``); None for a hidden parameter."""
    record = param.get_help_record(ctx)
    if record is None:
        return None
    text = " ".join(record[1].split())
    own = " ".join((param.help or "").split())
    if not text.startswith(own):  # not click's "help  [extra]": shown as it is
        own = text
    out = Text(own)
    extra = text[len(own) :].strip()
    if extra:
        out.append(" " if own else "")
        out.append(extra, style=_EXTRA)
    return out


def _panel(title: str, rows: list[tuple[Text, Text]]) -> Panel:
    table = Table.grid(padding=(0, 2), expand=True)
    table.add_column(max_width=NAMES_WIDTH, overflow="fold")
    table.add_column(ratio=1, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return Panel(table, title=title, title_align="left", border_style="dim")


def help_page(command: Any, ctx: Any) -> str:
    """``command``'s help as printed: the usage line, its help, its arguments, options and
    commands (each in a panel, as typer draws them), and its epilog, laid out at the terminal's
    width (rich's: ``COLUMNS``, else the terminal's, else 80 when piped), in colour on a
    terminal."""
    console = Console(highlight=False)
    pieces = " ".join(command.collect_usage_pieces(ctx))
    usage = Text.assemble(("Usage: ", "yellow"), (f"{ctx.command_path} {pieces}", "bold"))
    parts: list[Any] = [Padding(usage, (1, 1, 1, 1))]
    text = paragraphs(command.help)
    if text:
        body = Text(text[0])
        for para in text[1:]:
            body.append(f"\n\n{para}", style="dim")
        parts.append(Padding(body, (0, 1, 1, 1)))
    arguments: list[tuple[Text, Text]] = []
    options: list[tuple[Text, Text]] = []
    for param in command.get_params(ctx):
        description = _description(param, ctx)
        if description is not None:
            rows = arguments if isinstance(param, TyperArgument) else options
            rows.append((_term(param, ctx), description))
    if arguments:
        parts.append(_panel("Arguments", arguments))
    if options:
        parts.append(_panel("Options", options))
    commands: list[tuple[Text, Text]] = []
    for name in getattr(command, "list_commands", lambda _: [])(ctx):
        sub = command.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            first = paragraphs(sub.short_help or sub.help)
            commands.append((Text.assemble((name, _OPTION)), Text(first[0] if first else "")))
    if commands:
        parts.append(_panel("Commands", commands))
    epilog = paragraphs(command.epilog)
    if epilog:
        parts.append(Padding(Text("\n\n".join(epilog)), (1, 1, 0, 1)))
    with console.capture() as captured:
        console.print(Group(*parts))
    return captured.get()
