"""No record or caller input reaches the operator's terminal raw (issue 23, item 4): NUL, ANSI and
OSC escape sequences (clear screen, set window title) and bidi overrides show as visible escapes
in ``packet render``, every CLI table and line, and ``--json``; and no record is read as rich
markup. The CLI runs in-process with the cluster replaced by fakes that return hostile text."""

from __future__ import annotations

import io
import json
import sys
from datetime import UTC, date, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from hybrid_es.cli import common, packet, search, traces
from hybrid_es.cli.main import _report as report
from hybrid_es.cli.main import app
from hybrid_es.errors import PacketNotFoundError
from hybrid_es.models import AuthorizationDecision, Hit, RequestScope, RuleOutcome, SearchResponse
from hybrid_es.packets.manifest import Manifest, Member, QueryScope
from hybrid_es.packets.render import render
from hybrid_es.packets.service import SECTIONS
from hybrid_es.packets.verdict import Verdict

HOSTILE = "A\x1b]0;pwned\x07B\x1b[2J\x00C\rD\u202eE[bold]F:warning:G\u2066H\x9bI\u200bJ\n</x>"
SHOWN = "A\\x1b]0;pwned\\x07B\\x1b[2J\\x00C\\rDU+202EE[bold]F:warning:GU+2066H\\x9bIU+200BJ\\n</x>"
"""HOSTILE as every table cell and line shows it (``textsafe.one_line``)."""
RAW = ("\x1b", "\x00", "\x07", "\r", "\x9b", "\u202e", "\u2066", "\u200b")
CALLER = ["--tenant", "demo-A", "--user", "u"]


def _no_raw(text: str) -> None:
    found = [f"U+{ord(ch):04X}" for ch in RAW if ch in text]
    assert not found, f"raw {found} in:\n{text}"


@pytest.fixture
def cli(monkeypatch):
    """Run ``hybrid-es ARGS`` at a given terminal width; returns (exit code, stdout)."""

    def run(args: list[str], width: int = 400) -> tuple[int, str]:
        con = Console(width=width, color_system=None, force_terminal=False, soft_wrap=False)
        for module in (common, packet, search, traces):
            monkeypatch.setattr(module, "console", con)
        result = CliRunner().invoke(app, args)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout

    return run


T0 = datetime(2026, 4, 1, tzinfo=UTC)
# model_construct: the hostile ids are what a tampered store could hold, whatever the checks say.
MANIFEST = Manifest.model_construct(
    packet_id=f"{HOSTILE}-packet-v1",
    case_id=HOSTILE,
    packet_version=1,
    status="active",
    superseded_by=None,
    tenant="demo-A",
    principal_id="u",
    principal_scope_version="s",
    policy_version="policy-v1",
    corpus_watermark=1,
    query_scope=QueryScope(label="l", query=HOSTILE, scope=RequestScope(as_of=date(2026, 4, 1))),
    assembled_at=T0,
    expires_at=T0 + timedelta(minutes=5),
    members=(
        Member(source_id=f"D1{HOSTILE}", version=3, chunk_id="c0", chunk_hash="h", section="terms"),
    ),
    sections=SECTIONS,
    unresolved=(HOSTILE,),
)


class _Packets:
    """A PacketService whose every answer carries hostile text."""

    manifest = MANIFEST

    def render(self, *_: Any, **__: Any) -> tuple[Verdict, Any]:
        return Verdict(kind="reuse"), render(self.manifest, {"c0": HOSTILE}, budget_tokens=500)

    def show(self, *_: Any, **__: Any) -> tuple[Any, int]:
        return self.manifest, 0

    def validate(self, *_: Any, **__: Any) -> Verdict:
        return Verdict(kind="deny", reasons=(HOSTILE,), discard=(HOSTILE,))


@pytest.fixture
def packets(monkeypatch):
    monkeypatch.setattr(packet, "_service", lambda warm=True: _Packets())


def test_packet_render_prints_the_context_with_visible_escapes(cli, packets):
    code, out = cli(["packet", "render", "P-packet-v1", *CALLER])
    assert code == 0
    _no_raw(out)
    assert "retrieved records for case " + SHOWN.replace("</x>", "&lt;/x&gt;") in out
    assert (
        "\nA\\x1b]0;pwned\\x07B\\x1b[2J\\x00C\\rDU+202EE[bold]F:warning:GU+2066H\\x9bIU+200BJ\n"
        in out
    )
    assert "[bold]F" in out  # printed, not read as markup
    assert "- " + SHOWN.replace("</x>", "&lt;/x&gt;") + "\n" in out


def test_packet_render_json_keeps_the_exact_strings_escaped(cli, packets):
    code, out = cli(["packet", "render", "P-packet-v1", *CALLER, "--json"])
    assert code == 0
    _no_raw(out)
    assert "\\u202e" in out and "\\u001b" in out  # JSON escapes, not raw characters
    assert json.loads(out)["rendered"]["unresolved"] == [HOSTILE]


def test_packet_show_tables_show_escapes(cli, packets):
    code, out = cli(["packet", "show", "P-packet-v1", *CALLER])
    assert code == 0
    _no_raw(out)
    assert f"{SHOWN}-packet-v1 (active)" in out  # the title
    assert f"│ unresolved              │ {SHOWN} " in out
    assert f"D1{SHOWN}" in out


def test_packet_validate_prints_reasons_on_one_line_each(cli, packets):
    code, out = cli(["packet", "validate", "P-packet-v1", *CALLER])
    assert code == 3
    assert out == f"P-packet-v1: deny\n  - {SHOWN}\n  discard: {SHOWN}\n"


def _hit() -> Hit:
    return Hit(
        chunk_id=f"D1::v3::{HOSTILE}",
        doc_id="D1",
        index="chunks",
        source_version=3,
        title=f"T{HOSTILE}",
        text=f"X{HOSTILE} and more",
        fused_score=0.5,
        final_rank=1,
        fusion_path="client-rrf",
        authorization=AuthorizationDecision(
            allowed=True,
            outcomes=(RuleOutcome(rule="acl", passed=True, detail=HOSTILE),),
            policy_version="policy-v1",
        ),
    )


@pytest.fixture
def searcher(monkeypatch):
    response = SearchResponse(
        query_hash="h",
        fusion_path="client-rrf",
        fusion_reason=HOSTILE,
        reranked=False,
        rerank_note=HOSTILE,
        hits=(_hit(),),
        candidates=1,
        timings_ms={"total": 1.0},
    )
    fake = SimpleNamespace(search=lambda *a, **k: response, params=SimpleNamespace(window=50))
    monkeypatch.setattr(
        search, "settings", lambda: SimpleNamespace(rerank_depth=20, filterable_fields=())
    )
    monkeypatch.setattr(search, "make_searcher", lambda *a, **k: fake)


def test_search_table_and_lines_show_escapes(cli, searcher):
    code, out = cli(["search", HOSTILE, *CALLER])
    assert code == 0
    _no_raw(out)
    assert (
        "'A\\x1b]0;pwned\\x07B\\x1b[2J\\x00C\\rD\\u202eE[bold]F:warning:G\\u2066H\\x9bI"
        "\\u200bJ\\n</x>' as demo-A/u" in out
    )
    assert f"D1::v3::{SHOWN}" in out
    assert f"allow: {SHOWN}" in out
    # The title and the excerpt (its line breaks run together as spaces) are record text too.
    assert f"T{SHOWN}" in out
    assert "X" + SHOWN.replace("\\n", " ") + " and more" in out
    assert f"fusion: client-rrf ({SHOWN})\nrerank: {SHOWN}\n" in out


def test_search_json_escapes_bidi_and_c1_but_parses_back(cli, searcher):
    code, out = cli(["search", "q", *CALLER, "--json"])
    assert code == 0
    _no_raw(out)
    data = json.loads(out)
    assert data["rerank_note"] == HOSTILE and data["hits"][0]["chunk_id"] == f"D1::v3::{HOSTILE}"
    assert data["hits"][0]["title"] == f"T{HOSTILE}"
    assert data["hits"][0]["text"] == f"X{HOSTILE} and more"  # whole, not the excerpt


def test_tables_keep_their_layout_at_80_columns(cli, searcher, packets):
    for args in (["search", HOSTILE, *CALLER], ["packet", "show", "P-packet-v1", *CALLER]):
        code, out = cli(args, width=80)
        assert code == 0
        _no_raw(out)
        lines = out.splitlines()
        assert all(cell_len(line) <= 80 for line in lines), out
        # Each table's rows are whole: every line between its top and bottom edge starts and
        # ends with a border.
        inside = False
        for line in lines:
            if line.startswith(("┏", "┌")):
                inside = True
            elif inside:
                assert line[0] in "┃│┡├└" and line[-1] in "┃│┩┤┘", line
                inside = not line.startswith("└")
        if args[0] == "search":  # the hit's title and excerpt, folded in their cell, escaped
            cell = "".join("".join("".join(ln.split("│")[2:-1]) for ln in lines).split())
            assert "".join(f"T{SHOWN}".split()) in cell
            excerpt = "X" + SHOWN.replace("\\n", " ") + " and more"  # line breaks: spaces
            assert "".join(excerpt.split()) in cell


TRACE = {
    "@timestamp": "2026-04-01T09:00:00+00:00",
    "trace": {"id": "t-1"},
    "event": {"action": "search"},
    "organization": {"id": "demo-A"},
    "user": {"id": "u"},
    "hybrid_es": {
        "query_text": HOSTILE,
        "query_hash": HOSTILE,
        "fusion_path": "client-rrf",
        "hit_count": 1,
        "latency_ms": {"total": 2.5},
        "candidates": [{"final_rank": 1, "chunk_id": HOSTILE, "authorization": HOSTILE}],
    },
    "error": {"message": HOSTILE, "type": HOSTILE},
}


@pytest.fixture
def reader(monkeypatch):
    fake = SimpleNamespace(
        index="traces-*", tail=lambda *a, **k: [TRACE], show=lambda *a, **k: TRACE
    )
    monkeypatch.setattr(traces, "_reader", lambda index: fake)


def test_traces_tail_and_show_show_escapes(cli, reader):
    code, out = cli(["traces", "tail", *CALLER])
    assert code == 0
    _no_raw(out)
    assert f"error: {SHOWN}" in out
    code, out = cli(["traces", "show", "t-1", *CALLER])
    assert code == 0
    _no_raw(out)
    assert f"│ hybrid_es.query_text  │ {SHOWN} │" in out
    # Query text and hash, error type and message, and the candidate's chunk and authorization.
    assert out.count(SHOWN) == 6


def test_an_error_message_is_shown_escaped(monkeypatch):
    buf = io.StringIO()
    cli_main = sys.modules[report.__module__]  # hybrid_es.cli.main, not the function of that name
    monkeypatch.setattr(cli_main, "err_console", Console(file=buf, width=400, color_system=None))
    with pytest.raises(SystemExit):
        report(PacketNotFoundError(f"packet {HOSTILE} not found", hint=HOSTILE))
    assert buf.getvalue() == (
        "error: packet A\\x1b]0;pwned\\x07B\\x1b[2J\\x00C\\rDU+202EE[bold]F:warning:GU+2066H"
        "\\x9bIU+200BJ\n</x> not found\nhint: A\\x1b]0;pwned\\x07B\\x1b[2J\\x00C\\rDU+202EE"
        "[bold]F:warning:GU+2066H\\x9bIU+200BJ\n</x>\n"
    )


def test_emit_json_escapes_what_json_dumps_leaves_raw(capsys):
    common.emit_json({"t": "\x7f\x9b\u202e\u2028日本"})
    assert capsys.readouterr().out == '{\n  "t": "\\u007f\\u009b\\u202e\\u2028日本"\n}\n'


def test_every_hits_provenance_is_whole_at_80_and_at_150_columns():
    """Issue 25: at 80 columns (or piped) the provenance table showed `spa…`, `de…`, `aut…`.
    Narrow, each hit is a block of lines; wide, one column per field. Either way every field of
    every hit is printed whole."""
    from rich.console import Console

    from hybrid_es.cli.common import WIDE_HITS, hits_view

    decision = "allow: acl group travel-agents; v3 current; valid 2026-04-01..2027-03-31"
    rows: list[tuple[object, ...]] = [
        (1, "D1-current-contract::v3::c0000", 3, 1, 2, "1.000000", "-", decision),
        (2, "D2-accessibility-note::v2::c0000", 2, "-", 1, "0.537867", "0.125", decision),
    ]
    for width in (80, 150):
        buf = io.StringIO()
        con = Console(file=buf, width=width, color_system=None)
        con.print(hits_view("q as demo-A/agent-1", rows, width=width))
        out = buf.getvalue()
        assert "…" not in out and all(cell_len(line) <= width for line in out.splitlines())
        flat = " ".join(out.split())  # the decision may wrap: its words stay whole
        for row in rows:
            assert str(row[1]) in out and str(row[5]) in out
            assert all(word in flat for word in decision.split())
        if width < WIDE_HITS:
            assert "sparse 1 · dense 2 · fused 1.000000 · rerank -" in out
            assert "sparse - · dense 1 · fused 0.537867 · rerank 0.125" in out
        else:
            assert "┃ sparse ┃" in out or "sparse" in out.splitlines()[1]
