"""What every CLI module shares: consoles, settings, the client, JSON output, and the one way
untrusted text reaches the terminal.

Records and caller inputs are printed only through :func:`safe` (tables, titles, lines) and
:func:`emit_json`: control characters, escape sequences and bidi controls show as visible escapes
(``hybrid_es.textsafe``), never raw, and no record is ever read as rich markup.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hybrid_es.settings import Settings
from hybrid_es.textsafe import json_visible, one_line, visible

console = Console()
err_console = Console(stderr=True)

# The caller: every command that reads or writes tenant data takes these (the CLI stands in for
# the authenticated context that an application hands to the library).
Tenant = Annotated[str, typer.Option(help="Caller's tenant.")]
User = Annotated[str, typer.Option(help="Caller's user id.")]
Groups = Annotated[list[str] | None, typer.Option("--group", help="Caller's groups.")]
ScopeVersion = Annotated[
    str | None,
    typer.Option(help="Caller's grant version (default: derived from the groups)."),
]
# The question's request scope (search, and every packet reuse decision).
AsOf = Annotated[str | None, typer.Option(help="Date the question is about (YYYY-MM-DD).")]
Stay = Annotated[str | None, typer.Option(help="Stay dates FROM..TO (YYYY-MM-DD..YYYY-MM-DD).")]
Booking = Annotated[list[str] | None, typer.Option(help="Booking scope.")]
Property = Annotated[list[str] | None, typer.Option("--property", help="Property scope.")]
SourceType = Annotated[list[str] | None, typer.Option(help="Allowed source types.")]
Jurisdiction = Annotated[list[str] | None, typer.Option(help="Jurisdictions.")]
Historical = Annotated[bool, typer.Option(help="Admit superseded versions.")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def settings() -> Settings:
    """The settings from the environment; a bad value is a ConfigurationError naming its
    variable. Library warnings (an unverified TLS connection, dropped traces) show on stderr."""
    from pydantic import ValidationError

    from hybrid_es.settings import configuration_error

    _show_warnings()
    try:
        return Settings()
    except ValidationError as exc:
        raise configuration_error(exc) from None


class _WarningLine(logging.Handler):
    """hybrid-es's WARNING log records as ``warning: ...`` lines on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(
            Text.assemble(("warning: ", "yellow"), safe(record.getMessage(), lines=True)),
            highlight=False,
        )


def _show_warnings() -> None:
    logger = logging.getLogger("hybrid_es")
    if not any(isinstance(h, _WarningLine) for h in logger.handlers):
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


def make_principal(
    tenant: str,
    user: str,
    groups: list[str] | None = None,
    scope_version: str | None = None,
    *,
    operator: bool = False,
) -> Any:
    """The caller's Principal from CLI options; an invalid value is a usage error naming the
    option it came from. ``scope_version`` None derives it from the groups."""
    from pydantic import ValidationError

    from hybrid_es.models import OPERATOR_ROLE, Principal

    options = {"tenant": "--tenant", "user_id": "--user", "groups": "--group"}
    try:
        return Principal(
            tenant=tenant,
            user_id=user,
            groups=tuple(groups or ()),
            roles=(OPERATOR_ROLE,) if operator else (),
            scope_version=scope_version or "",
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "tenant"
        message = str(err["msg"]).removeprefix("Value error, ")
        raise bad(options.get(field, f"--{field}"), message) from None


def tracer(s: Settings) -> Any:
    """This process's trace hooks: one background writer to the trace storage, flushed at exit.

    A cluster that refuses or cannot take traces costs nothing but the drops it counts.
    """
    if "tracer" not in _process:
        import atexit

        from hybrid_es.traces.hooks import search_hook
        from hybrid_es.traces.storage import trace_storage
        from hybrid_es.traces.writer import TraceWriter

        writer = TraceWriter(client(s), trace_storage(client(s), s))
        atexit.register(writer.close, 5.0)
        _process["tracer"] = search_hook(
            writer, query_text=s.trace_query_text, hash_key=hash_key(s)
        )
    return _process["tracer"]


_process: dict[Any, Any] = {}


def hash_key(s: Settings) -> bytes:
    """The deployment's trace hash key, else this process's random one."""
    from hybrid_es.hashing import PROCESS_KEY

    return s.trace_hash_key.get_secret_value().encode() if s.trace_hash_key else PROCESS_KEY


def make_searcher(
    s: Settings,
    embedder: str | None = None,
    fusion: str | None = None,
    *,
    warm: bool = True,
    rerank: bool = True,
) -> Any:
    """A HybridSearcher for the configured indices; ``warm`` loads its models up front
    (``HybridSearcher.warm_up``; the reranker too with ``rerank``). Commands that may not embed
    at all, such as ``packet show``, leave them to load on first use."""
    from hybrid_es.retrieval.embedder import make_embedder
    from hybrid_es.retrieval.queries import RetrievalParams
    from hybrid_es.retrieval.reranker import CrossEncoderReranker
    from hybrid_es.retrieval.searcher import HybridSearcher

    mode = fusion or s.fusion
    if mode not in ("auto", "native", "client"):
        raise typer.BadParameter(f"--fusion must be auto, native or client, not {mode!r}")
    searcher = HybridSearcher(
        client(s),
        make_embedder(embedder or s.embedder, query_threads=s.embed_threads),
        layout=s.layout(),
        hash_key=hash_key(s),
        fusion_method=s.fusion_method,  # type: ignore[arg-type]
        alpha=s.fusion_alpha,
        embed_batch=s.embed_batch,
        reranker=CrossEncoderReranker(
            s.reranker_model,
            precision=s.reranker_precision,  # type: ignore[arg-type]
            max_length=s.reranker_max_length,
            threads=s.reranker_threads,
        )
        if s.reranker_model
        else None,
        fusion=mode,  # type: ignore[arg-type]
        url=s.redacted_url(),
        on_response=tracer(s),
        on_error=tracer(s).on_error,
        query_cache_size=s.query_cache_size,
        params=RetrievalParams(
            max_query_chars=s.max_query_chars, max_query_terms=s.max_query_terms
        ),
    )
    if warm:
        searcher.warm_up(rerank=rerank)  # load the models before anything is timed
    return searcher


def hits_table(heading: str) -> Table:
    """The one hit table of ``search`` and ``traces show``: rank, chunk, version, per-leg ranks,
    fused and rerank scores, authorization. Fill it with :func:`add_row`."""
    t = Table(title=title(heading))
    t.add_column("#", justify="right")
    t.add_column("chunk", no_wrap=True)
    for name in ("ver", "sparse", "dense", "fused", "rerank"):
        t.add_column(name, justify="right")
    t.add_column("authorization")
    return t


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
