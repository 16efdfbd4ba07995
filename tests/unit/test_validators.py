"""Every validator of an id, a name or a date matches the whole value (issue 23, item 5).

A validator anchored with ``$`` (``re.match``) accepts a trailing newline:
``check_tenant("acme\\n")`` passed, so ``hybrid-es ingest`` created an index whose name ended in
a newline while ``bootstrap --tenant`` refused the same id. One property covers them all: for
each kind of value, generated valid values pass every entry point that takes that kind, and the
same value with a trailing line break, surrounding space, an embedded NUL or line separator,
empty or overlong is refused by every one of them: the library and the CLI agree.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_es.cli.common import make_principal, make_scope
from hybrid_es.cluster.templates import render_role
from hybrid_es.errors import HybridEsError
from hybrid_es.identity import SEPARATOR
from hybrid_es.ingest.documents import Document
from hybrid_es.models import (
    MAX_ID_BYTES,
    TENANT_PATTERN,
    Principal,
    RequestScope,
    check_id,
    check_tenant,
)
from hybrid_es.packets.manifest import packet_id, parse_packet_id
from hybrid_es.tenancy import IndexLayout, index_part
from hybrid_es.traces.retention import parse_age
from tests.conftest import examples

REFUSED = (ValueError, HybridEsError, typer.BadParameter)
"""What an entry point raises for a bad value (pydantic's ValidationError is a ValueError); any
other exception fails the test."""


def _doc(**fields: object) -> Document:
    return Document(**{"id": "d", "tenant": "t", "body": "text.", **fields})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Kind:
    """One kind of validated value and every entry point that validates it."""

    valid: st.SearchStrategy[str]
    entry_points: dict[str, Callable[[str], object]]
    overlong: Callable[[str], str]
    strips_whitespace: bool = False
    """Surrounding whitespace is ignored rather than refused (an age is parsed to a duration,
    never stored as a name); it must still give the same value as the stripped text."""
    empty_is_unset: frozenset[str] = frozenset()
    """Entry points that read an empty value as "not given" (a CLI option's default), checked
    to give None rather than to refuse."""


_ID_CHARS = st.characters(
    blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"), blacklist_characters=":"
)


def _ids(max_size: int = 40) -> st.SearchStrategy[str]:
    return (
        st.text(_ID_CHARS, min_size=1, max_size=max_size)
        .map(lambda s: unicodedata.normalize("NFC", s))
        .filter(lambda s: s == s.strip() and SEPARATOR not in s and bool(s))
    )


def _pid(case: str) -> str:
    return packet_id(case, 1)


KINDS: dict[str, Kind] = {
    "tenant": Kind(
        st.from_regex(TENANT_PATTERN, fullmatch=True),
        {
            "check_tenant": check_tenant,
            "index_part": index_part,
            "IndexLayout.chunks_for": IndexLayout().chunks_for,
            "IndexLayout.fixed.chunks_for": IndexLayout.fixed("c").chunks_for,
            "render_role (bootstrap --tenant)": render_role,
            "Principal(tenant=)": lambda v: Principal(tenant=v, user_id="u"),
            "make_principal (CLI --tenant)": lambda v: make_principal(v, "u"),
            "Document(tenant=)": lambda v: _doc(tenant=v),
        },
        overlong=lambda v: v + "a" * (65 - len(v)),
    ),
    "user id": Kind(
        _ids(),
        {
            "check_id": lambda v: check_id(v, "user id"),
            "Principal(user_id=)": lambda v: Principal(tenant="t", user_id=v),
            "make_principal (CLI --user)": lambda v: make_principal("t", v),
            "Document(acl_users=)": lambda v: _doc(acl_users=(v,)),
        },
        overlong=lambda v: v + "é" * (MAX_ID_BYTES // 2 + 1),
    ),
    "group or role": Kind(
        _ids(),
        {
            "Principal(groups=)": lambda v: Principal(tenant="t", user_id="u", groups=(v,)),
            "Principal(roles=)": lambda v: Principal(tenant="t", user_id="u", roles=(v,)),
            "make_principal (CLI --group)": lambda v: make_principal("t", "u", [v]),
            "Document(acl_groups=)": lambda v: _doc(acl_groups=(v,)),
        },
        overlong=lambda v: v + "g" * (MAX_ID_BYTES + 1),
    ),
    "document id": Kind(
        _ids(),
        {"Document(id=)": lambda v: _doc(id=v)},
        overlong=lambda v: v + "x" * (MAX_ID_BYTES + 1),
    ),
    "case id": Kind(
        _ids(),
        {
            "check_id": lambda v: check_id(v, "case id"),
            "parse_packet_id(packet_id(case, 1))": lambda v: parse_packet_id(_pid(v)),
        },
        overlong=lambda v: v + "c" * (MAX_ID_BYTES + 1),
    ),
    "packet id": Kind(
        _ids().map(_pid),
        {"parse_packet_id": parse_packet_id},
        overlong=lambda v: "c" * (MAX_ID_BYTES + 1) + v,
    ),
    # Issue 36, item 7: scope ids took anything (a trailing newline, a NUL, a decomposed é),
    # in the library, the CLI and the ingest alike.
    "scope id": Kind(
        _ids(),
        {
            "RequestScope(booking_ids=)": lambda v: RequestScope(booking_ids=(v,)),
            "RequestScope(property_ids=)": lambda v: RequestScope(property_ids=(v,)),
            "RequestScope(source_types=)": lambda v: RequestScope(source_types=(v,)),
            "RequestScope(jurisdictions=)": lambda v: RequestScope(jurisdictions=(v,)),
            "make_scope (CLI --booking)": lambda v: make_scope(booking=[v]),
            "make_scope (CLI --property)": lambda v: make_scope(prop=[v]),
            "make_scope (CLI --source-type)": lambda v: make_scope(source_type=[v]),
            "make_scope (CLI --jurisdiction)": lambda v: make_scope(jurisdiction=[v]),
            "Document(booking_ids=)": lambda v: _doc(booking_ids=(v,)),
            "Document(property_ids=)": lambda v: _doc(property_ids=(v,)),
            "Document(source_type=)": lambda v: _doc(source_type=v),
            "Document(jurisdiction=)": lambda v: _doc(jurisdiction=v),
        },
        overlong=lambda v: v + "b" * (MAX_ID_BYTES + 1),
    ),
    "date": Kind(
        st.dates(date(1900, 1, 1), date(2200, 12, 31)).map(date.isoformat),
        {
            "RequestScope(as_of=)": lambda v: RequestScope(as_of=v),  # type: ignore[arg-type]
            "make_scope (CLI --as-of)": lambda v: make_scope(as_of=v),
            "Document(valid_from=)": lambda v: _doc(valid_from=v),
        },
        overlong=lambda v: v + "0",
        empty_is_unset=frozenset({"make_scope (CLI --as-of)"}),
    ),
    "age": Kind(
        st.builds(
            lambda n, unit: f"{n}{unit}",
            st.integers(1, 36500),
            st.sampled_from(["d", "h", "D", "H"]),
        ),
        {"parse_age (traces prune --older-than)": parse_age},
        overlong=lambda v: "1" * 7 + v[-1],
        strips_whitespace=True,
    ),
}


def _middle(v: str, inserted: str) -> str:
    k = max(1, len(v) // 2)
    return v[:k] + inserted + v[k:]


def _outcomes(kind: Kind, value: str) -> dict[str, bool]:
    """entry point -> whether it accepted ``value`` (an empty value is left out where it means
    "not given")."""
    out = {}
    for name, call in kind.entry_points.items():
        if not value and name in kind.empty_is_unset:
            continue
        try:
            call(value)
        except REFUSED:
            out[name] = False
        else:
            out[name] = True
    return out


@settings(database=None, max_examples=examples(200), deadline=None)
@given(st.sampled_from(sorted(KINDS)), st.data())
def test_every_validator_matches_the_whole_value_and_every_entry_point_agrees(name, data):
    # Failed before the fix: check_tenant("acme\n") passed (re.match with "$"), as did
    # IndexLayout.chunks_for and Principal(tenant=...), while render_role refused it; a case id
    # or packet id ending in "\n" passed parse_packet_id; an id holding U+2028 passed check_id.
    kind = KINDS[name]
    value = data.draw(kind.valid, label=name)
    assert _outcomes(kind, value) == dict.fromkeys(kind.entry_points, True), value

    surrounding = [value + "\n", value + "\r\n", " " + value, value + " ", value + "\u0085"]
    hostile = [
        _middle(value, "\x00"),
        _middle(value, "\u2028"),
        _middle(value, "\u2029"),
        _middle(value, "\u0085"),
        _middle(value, "\n"),
        "",
        kind.overlong(value),
    ]
    if kind.strips_whitespace:
        for v in surrounding:
            assert parse_age(v) == parse_age(value), repr(v)
    else:
        hostile += surrounding
    for bad in hostile:
        refused = {k: False for k in kind.entry_points if bad or k not in kind.empty_is_unset}
        assert _outcomes(kind, bad) == refused, (name, bad)


@pytest.mark.parametrize("value", ["", "20260101", "2026-1-1", "2026-01-01T00:00", "2026-01-01\n"])
def test_the_cli_takes_a_date_only_in_the_librarys_form(value):
    # An empty --as-of silently meant today, and 20260101 passed where the library refuses it.
    import typer

    with pytest.raises(typer.BadParameter):
        make_scope(as_of=value)
    with pytest.raises(typer.BadParameter):
        make_scope(stay=f"{value}..2026-04-14")
    assert make_scope(as_of="2026-01-01").as_of is not None


# -- the decisions the property leaves open, written out --------------------------------------


@pytest.mark.parametrize(
    ("tenant", "accepted"),
    [
        ("acme", True),
        ("a", True),
        ("A.b_c-9", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("acme\n", False),  # accepted before issue 23
        ("\u0430cme", False),  # Cyrillic a: a tenant id is ASCII, so no lookalike gets in
        ("acme-", False),
        ("-acme", False),
        ("ac me", False),
        ("ac::me", False),
    ],
)
def test_tenant_ids(tenant, accepted):
    try:
        check_tenant(tenant)
    except ValueError:
        assert not accepted
    else:
        assert accepted


def test_ids_must_be_nfc_and_lookalikes_are_other_ids():
    decomposed = "jose\u0301"  # é as e + combining acute: renders as josé
    with pytest.raises(ValueError, match="not in Unicode NFC form: give it as 'jos\u00e9'"):
        check_id(decomposed, "user id")
    assert check_id("jos\u00e9", "user id") == "jos\u00e9"
    # Any script is allowed; a lookalike is a different id and matches nothing of the other.
    lookalike = Principal(tenant="t", user_id="\u0430lice")  # Cyrillic a
    assert lookalike.user_id != "alice"
    assert check_id("山田", "user id") == "山田"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("a\u2028b", "U+2028, Zl"),
        ("a\u2029b", "U+2029, Zp"),
        ("a\u0085b", "U+0085, Cc"),
        ("a\x00b", "U+0000, Cc"),
        ("a\u202eb", "U+202E, Cf"),  # right-to-left override: reorders what a person reads
        ("a\u200db", "U+200D, Cf"),
    ],
)
def test_ids_refuse_line_breaks_nul_and_invisible_characters_by_code_point(value, why):
    with pytest.raises(ValueError, match=why.replace("+", r"\+")):
        check_id(value, "group or role")


@pytest.mark.parametrize(
    ("option", "kwarg"),
    [
        ("--booking", "booking"),
        ("--property", "prop"),
        ("--source-type", "source_type"),
        ("--jurisdiction", "jurisdiction"),
    ],
)
def test_a_bad_scope_id_is_a_usage_error_naming_its_option(option, kwarg):
    with pytest.raises(typer.BadParameter) as info:
        make_scope(**{kwarg: ["ok", "JPN-1\n"]})
    assert info.value.param_hint == option
    assert "without surrounding whitespace" in info.value.message
    with pytest.raises(typer.BadParameter, match="not in Unicode NFC form"):
        make_scope(**{kwarg: ["jose\u0301"]})


@pytest.mark.parametrize(
    ("pid", "parsed"),
    [
        ("JPN-2026-0417-packet-v1", ("JPN-2026-0417", 1)),
        ("a-packet-v1-packet-v12", ("a-packet-v1", 12)),
        ("JPN-2026-0417-packet-v01", None),  # one packet, one id: no leading zeros
        ("JPN-2026-0417-packet-v0", None),
        ("JPN-2026-0417-packet-v\u0663", None),  # Arabic-Indic 3: int() would read it as 3
        ("JPN-2026-0417-packet-v1\n", None),
        ("-packet-v1", None),
    ],
)
def test_packet_ids_have_one_spelling(pid, parsed):
    if parsed is None:
        with pytest.raises(ValueError, match="is not a packet id"):
            parse_packet_id(pid)
    else:
        assert parse_packet_id(pid) == parsed


def test_ages_read_ascii_digits_only():
    assert parse_age("30d") == timedelta(days=30)
    with pytest.raises(HybridEsError, match="not an age"):
        parse_age("\uff13\uff10d")  # fullwidth 30
