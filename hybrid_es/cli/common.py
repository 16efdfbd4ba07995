"""What every CLI module shares: consoles, settings, the client, JSON output, and the one way
untrusted text reaches the terminal.

Records and caller inputs are printed only through :func:`safe` (tables, titles, lines) and
:func:`emit_json`: control characters, escape sequences and bidi controls show as visible escapes
(``hybrid_es.textsafe``), never raw, and no record is ever read as rich markup.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import re
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hybrid_es.settings import Settings
from hybrid_es.textsafe import json_visible, one_line, visible


class _Console(Console):
    """rich's Console, reading the terminal's width (``COLUMNS``, else the terminal) at each
    print rather than once when this module is imported: a process that imports the CLI before
    it knows its output (the in-process test runner, an application) lays out at the width in
    force when it prints."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._width = None


console = _Console()
err_console = _Console(stderr=True)

# -- options more than one command declares ----------------------------------------------------
#
# Each is a type to annotate a command's parameter with; the caller and the request scope come as
# blocks (:func:`caller_options`, :func:`scope_options`) that hand the command one value.

# The caller: every command that reads or writes tenant data takes these (the CLI stands in for
# the authenticated context that an application hands to the library).
Tenant = Annotated[str, typer.Option(metavar="ID", help="Caller's tenant.")]
User = Annotated[str, typer.Option(metavar="ID", help="Caller's user id.")]
Groups = Annotated[
    list[str] | None,
    typer.Option("--group", metavar="ID", help="Caller's groups (repeatable)."),
]
ScopeVersion = Annotated[
    str | None,
    typer.Option(help="Caller's grant version (default: derived from the groups)."),
]
# The question's request scope (search, and every packet reuse decision).
AsOf = Annotated[
    str | None, typer.Option(metavar="DATE", help="Date the question is about (YYYY-MM-DD).")
]
Stay = Annotated[
    str | None,
    typer.Option(metavar="FROM..TO", help="Stay dates FROM..TO (YYYY-MM-DD..YYYY-MM-DD)."),
]
Booking = Annotated[
    list[str] | None, typer.Option(metavar="ID", help="Booking scope (repeatable).")
]
Property = Annotated[
    list[str] | None,
    typer.Option("--property", metavar="ID", help="Property scope (repeatable)."),
]
SourceType = Annotated[
    list[str] | None,
    typer.Option(metavar="TYPE", help="Allowed source types (repeatable)."),
]
Jurisdiction = Annotated[
    list[str] | None,
    typer.Option(metavar="CODE", help="Jurisdictions (repeatable)."),
]
Historical = Annotated[bool, typer.Option(help="Admit superseded versions.")]
# What the commands share besides.
Json = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
Embedder = Annotated[str | None, typer.Option(help="minilm | e5 | a model path")]

R = TypeVar("R")


def option_block(
    name: str, options: tuple[inspect.Parameter, ...], make: Callable[..., Any]
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """A decorator that turns a command's parameter ``name`` into the command-line ``options``
    (parameters: each a name, an option type such as :data:`Tenant`, and a default) and hands the
    command ``make(**their values)`` in its place, so that a block of options is declared, and
    checked, once. The options stand where ``name`` stood (help lists them there); every
    parameter becomes keyword-only, as typer passes them."""
    names = [p.name for p in options]

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        signature = inspect.signature(command, eval_str=True)
        if name not in signature.parameters:
            raise TypeError(f"{command.__name__} has no parameter {name!r} for its options")
        params: list[inspect.Parameter] = []
        for p in signature.parameters.values():
            params.extend(options if p.name == name else [p])
        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]

        @functools.wraps(command)
        def run(**values: Any) -> R:
            given = {k: values.pop(k) for k in names}
            return command(**values, **{name: make(**given)})

        run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return decorate


def _option(
    name: str, annotation: object, default: object = inspect.Parameter.empty
) -> inspect.Parameter:
    """One option of a block: ``name``, its option type (``Tenant``), its default (none: it is
    required)."""
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


_CALLER = (_option("tenant", Tenant), _option("user", User, "cli"), _option("group", Groups, None))


def caller_options(
    *, scope_version: bool = False
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """The caller as options (``--tenant``, ``--user``, ``--group``; with ``scope_version``,
    ``--scope-version`` too), handed to the command as its ``caller`` parameter: a Principal
    (:func:`make_principal`: a mistake is a usage error naming its option)."""
    extra = (_option("scope_version", ScopeVersion, None),) if scope_version else ()
    return option_block(
        "caller",
        _CALLER + extra,
        lambda tenant, user, group, scope_version=None: make_principal(
            tenant, user, group, scope_version
        ),
    )


scope_options = option_block(
    "scope",
    (
        _option("as_of", AsOf, None),
        _option("stay", Stay, None),
        _option("booking", Booking, None),
        _option("prop", Property, None),
        _option("source_type", SourceType, None),
        _option("jurisdiction", Jurisdiction, None),
        _option("historical", Historical, False),
    ),
    lambda **options: make_scope(**options),
)
"""The question's request scope as options (``--as-of``, ``--stay``, ``--booking``,
``--property``, ``--source-type``, ``--jurisdiction``, ``--historical``), handed to the command as
its ``scope`` parameter: a RequestScope (:func:`make_scope`: a mistake is a usage error naming its
option)."""


_command_line_settings: dict[str, Any] = {}
"""Settings given by the root command's global options, over the environment's."""


def given_on_command_line(**values: Any) -> None:
    """Record the settings that the root command's global options give (None: not given);
    :func:`settings` applies them over the environment's."""
    _command_line_settings.clear()
    _command_line_settings.update({k: v for k, v in values.items() if v is not None})


def settings() -> Settings:
    """The settings from the environment, and from the global options
    (:func:`given_on_command_line`); a bad value is a ConfigurationError naming its
    variable. Library warnings (an unverified TLS connection, dropped traces) show on stderr."""
    from pydantic import ValidationError

    from hybrid_es.settings import configuration_error

    _show_warnings()
    try:
        s = Settings(**_command_line_settings)
    except ValidationError as exc:
        raise configuration_error(exc) from None
    # Traces are on in the CLI unless HYBRID_ES_TRACES says otherwise (off in the library).
    if not any(k.upper() == "HYBRID_ES_TRACES" for k in os.environ):
        s = s.model_copy(update={"traces": True})
    return s


class _WarningLine(logging.Handler):
    """hybrid-es's WARNING log records as ``warning: ...`` lines on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(
            Text.assemble(("warning: ", "yellow"), safe(record.getMessage(), lines=True)),
            highlight=False,
        )


def _show_warnings() -> None:
    logger = logging.getLogger("hybrid_es")
    # Not beside --log-level/--log-format's own handler (cli.main), which shows them already.
    if not any(
        isinstance(h, _WarningLine) or getattr(h, "_hybrid_es_cli", False) for h in logger.handlers
    ):
        logger.addHandler(_WarningLine(logging.WARNING))


def client(s: Settings) -> Any:
    """The engine for ``s``, its flavour probed once per process (``hybrid_es.connect``)."""
    from hybrid_es.cluster.engine import connect

    key = ("engine", s.redacted_url(), s.username, s.api_key is not None, bool(s.bearer_auth))
    if key not in _process:
        _process[key] = connect(s)
    return _process[key]


def emit_json(data: Any) -> None:
    """``data`` as JSON on stdout: other scripts as they are, but every control, bidi and format
    character as a ``\\u`` escape (``textsafe.json_visible``), so a reader gets the exact
    strings back and a terminal gets nothing it would act on."""
    text = json.dumps(data, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write(json_visible(text) + "\n")


def safe(value: object, *, lines: bool = False, style: str = "") -> Text:
    """``str(value)`` as rich text to print: a table cell, a title, a line. Every control
    character, escape sequence, bidi control and invisible format character shows as a visible
    escape (``textsafe.one_line``, or ``textsafe.visible`` with ``lines``, which keeps line
    breaks), and a Text is printed as it is, so a record's ``[bold]`` or ``:warning:`` is never
    read as rich markup or an emoji code."""
    text = str(value)
    return Text(visible(text) if lines else one_line(text), style=style)


def title(text: str) -> Text:
    """A table title through :func:`safe`, in the style rich gives a title written as a str."""
    return safe(text, style="table.title")


def add_row(table: Table, *cells: object) -> None:
    """A row of ``table`` with every cell through :func:`safe`."""
    table.add_row(*(safe(c) for c in cells))


def bad(option: str, message: str) -> typer.BadParameter:
    """A usage error naming ``option`` (exit status 64, the usage line, then the message)."""
    return typer.BadParameter(message, param_hint=option)


def _date(option: str, value: str) -> Any:
    from datetime import date

    # The library's own form only: fromisoformat alone also takes 20260101 (and "" was today).
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        raise bad(option, f"{value!r} is not a date (expected YYYY-MM-DD)")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise bad(option, f"{value!r} is not a date (expected YYYY-MM-DD)") from None


def make_scope(
    *,
    as_of: str | None = None,
    stay: str | None = None,
    booking: list[str] | None = None,
    prop: list[str] | None = None,
    source_type: list[str] | None = None,
    jurisdiction: list[str] | None = None,
    historical: bool = False,
) -> Any:
    """A RequestScope from CLI options; every mistake is a usage error naming its option."""
    from pydantic import ValidationError

    from hybrid_es.models import RequestScope

    stay_from = stay_to = None
    if stay is not None:  # an empty value is a mistake, not "no stay"
        a, sep, b = stay.partition("..")
        if not sep:
            raise bad(
                "--stay", f"{stay!r} is not a stay (expected FROM..TO, e.g. 2026-04-10..2026-04-14)"
            )
        stay_from, stay_to = _date("--stay", a), _date("--stay", b)
        if stay_from > stay_to:
            raise bad("--stay", f"{stay!r} ends before it starts (expected FROM..TO)")
    day = _date("--as-of", as_of) if as_of is not None else None
    if day and stay:
        raise bad("--as-of", "give either --as-of or --stay, not both")
    options = {
        "booking_ids": "--booking",
        "property_ids": "--property",
        "source_types": "--source-type",
        "jurisdictions": "--jurisdiction",
    }
    try:
        return RequestScope(
            as_of=day,
            stay_from=stay_from,
            stay_to=stay_to,
            booking_ids=tuple(booking or ()),
            property_ids=tuple(prop or ()),
            source_types=tuple(source_type or ()),
            jurisdictions=tuple(jurisdiction or ()),
            historical=historical,
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        message = str(err["msg"]).removeprefix("Value error, ")
        raise bad(options.get(field, "--as-of"), message) from None


def make_principal(
    tenant: str,
    user: str,
    groups: list[str] | None = None,
    scope_version: str | None = None,
    *,
    operator: bool = False,
    writer: bool = False,
) -> Any:
    """The caller's Principal from CLI options; an invalid value is a usage error naming the
    option it came from. ``scope_version`` None derives it from the groups. ``operator`` and
    ``writer`` give it the operator's and the tenant writer's role."""
    from pydantic import ValidationError

    from hybrid_es.models import OPERATOR_ROLE, WRITER_ROLE, Principal

    options = {"tenant": "--tenant", "user_id": "--user", "groups": "--group"}
    try:
        return Principal(
            tenant=tenant,
            user_id=user,
            groups=tuple(groups or ()),
            roles=(*((OPERATOR_ROLE,) if operator else ()), *((WRITER_ROLE,) if writer else ())),
            scope_version=scope_version or "",
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "tenant"
        message = str(err["msg"]).removeprefix("Value error, ")
        raise bad(options.get(field, f"--{field}"), message) from None


def tracer(s: Settings) -> Any:
    """This process's trace hooks (``traces.wiring``): one background writer to the trace
    storage, shared by every searcher and packet service of the process and flushed at exit;
    hooks that do nothing when ``HYBRID_ES_TRACES=false``.

    A cluster that refuses or cannot take traces costs nothing but the drops it counts, and
    the process reports them as it exits (a ``warning: traces: ... dropped`` line on stderr:
    ``traces.wiring.close_writer``).
    """
    from hybrid_es.traces.wiring import NoTracer, close_writer, search_tracer, trace_writer

    if not s.traces:
        return NoTracer()
    if "tracer" not in _process:
        import atexit

        writer = trace_writer(client(s), s)
        atexit.register(close_writer, writer, 5.0)
        _process["tracer"] = search_tracer(writer, s)
    return _process["tracer"]


_process: dict[Any, Any] = {}


def hash_key(s: Settings) -> bytes:
    """The deployment's trace hash key, else this process's random one."""
    from hybrid_es.traces.wiring import hash_key as key

    return key(s)


def deployment(s: Settings, embedder: str | None = None, fusion: str | None = None) -> Any:
    """The deployment the command works on (:class:`hybrid_es.HybridEs`, the library's front
    door) with this process's engine and shared tracer (one trace writer per process, flushed
    at exit); ``embedder`` and ``fusion``: a command's options over the settings."""
    from hybrid_es.deployment import HybridEs

    mode = fusion or s.fusion
    if mode not in ("auto", "native", "client"):
        raise typer.BadParameter(f"--fusion must be auto, native or client, not {mode!r}")
    return HybridEs(
        s,
        client=client(s),
        embedder=embedder,
        tracer=tracer(s) if s.traces else None,
        traces=s.traces,
        fusion=mode,
    )


def make_searcher(
    s: Settings,
    embedder: str | None = None,
    fusion: str | None = None,
    *,
    warm: bool = True,
    rerank: bool = True,
) -> Any:
    """The deployment's searcher (:func:`deployment`); ``warm`` loads its models up front
    (``HybridSearcher.warm_up``; the reranker too with ``rerank``). Commands that may not embed
    at all, such as ``packet show``, leave them to load on first use."""
    searcher = deployment(s, embedder, fusion).searcher
    if warm:
        searcher.warm_up(rerank=rerank)  # load the models before anything is timed
    return searcher


WIDE_HITS = 120
"""Columns from which the hit table has one column per provenance field; below that (a standard
80-column terminal, or output piped, which rich lays out at 80) each hit is one block of lines."""

EXCERPT_CELLS = 130
"""How much of a hit's text ``search`` shows: two lines at 80 columns, wrapped at words."""


def excerpt(text: str, cells: int = EXCERPT_CELLS) -> str:
    """The start of a record's ``text`` to show under its title: spaces, tabs and line breaks
    run together as one space, cut at a word within ``cells`` terminal cells (wide characters
    count two), ``…`` where it was cut. Raw: print it through :func:`safe`, which makes every
    other control character visible."""
    from rich.cells import cell_len, set_cell_size

    flat = re.sub(r"[ \t\n]+", " ", text).strip()
    if cell_len(flat) <= cells:
        return flat
    head = set_cell_size(flat, cells - 1).rstrip()
    word_end = head.rfind(" ")
    if word_end > len(head) * 3 // 4:  # a long word or unspaced script is cut where it is
        head = head[:word_end]
    return head.rstrip() + "…"


def hits_view(
    heading: str,
    rows: list[tuple[object, ...]],
    *,
    width: int | None = None,
    texts: list[tuple[str, str]] | None = None,
) -> Table:
    """The one hit view of ``search`` and ``traces show``. ``rows`` hold, per hit: rank, chunk,
    version, sparse rank, dense rank, fused score, rerank score, authorization (as text);
    ``texts``, where given (``search``), each hit's title and excerpt (:func:`excerpt`).

    At ``width`` (default: the console's) of :data:`WIDE_HITS` or more, a table with one column
    each (the title and excerpt in one, after the rank); narrower, a two-column table whose
    second column stacks, per hit, the title and excerpt, the chunk and version, the ranks and
    scores, and the decision, so every field stays whole at 80 columns instead of being cut to
    ``spa…``. Every cell goes through :func:`safe`."""
    wide = (width or console.width) >= WIDE_HITS
    t = Table(title=title(heading), show_lines=texts is not None)
    t.add_column("#", justify="right")
    if wide:
        if texts is not None:
            t.add_column("hit", ratio=1, overflow="fold")
        t.add_column("chunk", no_wrap=True)
        for name in ("ver", "sparse", "dense", "fused", "rerank"):
            t.add_column(name, justify="right")
        t.add_column("authorization")
        for i, row in enumerate(rows):
            cells = [safe(c) for c in row]
            if texts is not None:
                cells.insert(1, _hit_text(*texts[i]))
            t.add_row(*cells)
        return t
    t.add_column(
        ("title and excerpt, " if texts is not None else "") + "chunk, provenance and decision",
        overflow="fold",
    )
    for i, (rank, chunk, ver, sparse, dense, fused, rerank, decision) in enumerate(rows):
        lines = [] if texts is None else [_hit_text(*texts[i])]
        lines += [
            safe(f"{chunk}  v{ver}", style="bold" if texts is None else ""),
            safe(f"sparse {sparse} · dense {dense} · fused {fused} · rerank {rerank}"),
            safe(decision),
        ]
        t.add_row(safe(rank), Text("\n").join(lines))
    return t


def _hit_text(heading: str, text: str) -> Text:
    """A hit's title (bold; ``(no title)`` where it has none) over its excerpt, both through
    :func:`safe`."""
    out = safe(heading, style="bold") if heading else Text("(no title)", style="bold dim")
    if text:
        out.append("\n")
        out.append_text(safe(text))
    return out


class RichProgress:
    """Progress bars on stderr for a library call that takes an ``evaluation.progress.Progress``
    (one bar per stage, with a note column); nothing is drawn with ``--json``."""

    def __init__(self, *, disable: bool = False) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        # Labels and notes are plain text (one_line in stage and update), never markup.
        self._bar = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[note]}", markup=False),
            console=err_console,
            disable=disable,
        )

    def __enter__(self) -> RichProgress:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(None, None, None)

    def stage(self, label: str, total: int | None = None, note: str = "") -> _RichStage:
        task = self._bar.add_task(one_line(label), total=total, note=one_line(note))
        return _RichStage(self._bar, task)


class _RichStage:
    def __init__(self, bar: Any, task: Any) -> None:
        self._bar, self._task = bar, task

    def advance(self, n: int = 1) -> None:
        self._bar.advance(self._task, n)

    def update(self, *, completed: int, total: int | None = None, note: str = "") -> None:
        fields: dict[str, Any] = {"completed": completed, "note": one_line(note)}
        if total is not None:
            fields["total"] = total
        self._bar.update(self._task, **fields)
