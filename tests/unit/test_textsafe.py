"""Untrusted text is shown, never obeyed: control characters, terminal escape sequences, bidi
controls and invisible format characters come out of ``hybrid_es.textsafe`` as visible escapes
(issue 23, item 4: a record's NUL, ANSI/OSC sequences and U+202E reached the operator's terminal
and the model's context raw)."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_es.textsafe import BIDI_CONTROLS, json_visible, one_line, visible

PERSIAN = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # "I want": a ZWNJ in its spelling
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

# (raw, visible(raw), one_line(raw)), written out.
CASES = [
    (
        "plain text, 日本語 and émigré",
        "plain text, 日本語 and émigré",
        "plain text, 日本語 and émigré",
    ),
    ("\x1b]0;pwned\x07title", "\\x1b]0;pwned\\x07title", "\\x1b]0;pwned\\x07title"),
    ("\x1b[2Jcleared", "\\x1b[2Jcleared", "\\x1b[2Jcleared"),
    ("a\x00b\x7fc\x9bd\x85e", "a\\x00b\\x7fc\\x9bd\\x85e", "a\\x00b\\x7fc\\x9bd\\x85e"),
    ("paid\rrefunded", "paid\\rrefunded", "paid\\rrefunded"),
    ("line 1\r\nline 2\n\tend", "line 1\nline 2\n\tend", "line 1\\r\\nline 2\\n\\tend"),
    ("total \u202e0001 JPY", "total U+202E0001 JPY", "total U+202E0001 JPY"),
    (
        "\u2066x\u2069\u200e\u200f\u061c",
        "U+2066xU+2069U+200EU+200FU+061C",
        "U+2066xU+2069U+200EU+200FU+061C",
    ),
    ("a\u2028b\u2029c", "a\u2028b\u2029c", "aU+2028bU+2029c"),
    (
        "zero\u200bwidth\u2060\ufeff\u00ad",
        "zeroU+200BwidthU+2060U+FEFFU+00AD",
        "zeroU+200BwidthU+2060U+FEFFU+00AD",
    ),
    ("tag \U000e0041\U000e0042", "tag U+E0041U+E0042", "tag U+E0041U+E0042"),
    ("lone \ud800 surrogate", "lone U+D800 surrogate", "lone U+D800 surrogate"),
    # Joiners: kept inside emoji and scripts that need them, shown in Latin text and at the edges.
    ("👩\u200d💻", "👩\u200d💻", "👩\u200d💻"),
    (PERSIAN, PERSIAN, PERSIAN),
    ("ig\u200dnore", "igU+200Dnore", "igU+200Dnore"),
    ("\u200d👩", "U+200D👩", "U+200D👩"),
    ("👩\u200d\u200d💻", "👩U+200DU+200D💻", "👩U+200DU+200D💻"),
    # Kept: no-break and ideographic spaces, variation selectors, combining marks, private use.
    (
        "a\u00a0b\u3000c\u2764\ufe0fe\u0301\ue000",
        "a\u00a0b\u3000c\u2764\ufe0fe\u0301\ue000",
        "a\u00a0b\u3000c\u2764\ufe0fe\u0301\ue000",
    ),
    # Escapes are plain text: a record that spells one shows as it is.
    ("\\x1b U+202E", "\\x1b U+202E", "\\x1b U+202E"),
]


@pytest.mark.parametrize(("raw", "shown", "single"), CASES)
def test_each_class_is_shown_as_written(raw, shown, single):
    assert visible(raw) == shown
    assert one_line(raw) == single


def test_visible_without_newlines_keeps_only_tabs():
    assert visible("a\nb\r\nc\td\u2028", keep_newlines=False) == "a\\nb\\r\\nc\tdU+2028"


def test_every_bidi_control_is_escaped():
    assert frozenset(BIDI) == BIDI_CONTROLS
    for ch in BIDI_CONTROLS:
        assert one_line(f"x{ch}y") == f"xU+{ord(ch):04X}y"
        assert visible(f"x{ch}y") == f"xU+{ord(ch):04X}y"


def _dangerous(ch: str) -> bool:
    """What may never be written raw by one_line, joiners between letters aside."""
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") and ch not in "\u200c\u200d"


def test_no_control_or_format_character_of_any_plane_survives():
    # Every code point of these categories, in the Unicode of the running Python.
    hidden = [c for c in map(chr, range(0x110000)) if _dangerous(c)]
    assert len(hidden) > 65 + 2048  # C0, DEL and C1; the surrogates; the Cf of every plane
    text = "".join(hidden)
    assert not any(_dangerous(c) for c in one_line(text))
    assert not any(_dangerous(c) for c in visible(text) if c not in "\n\t\u2028\u2029")


TEXT = st.text(
    alphabet=st.one_of(
        st.characters(),  # every category but surrogates: a lone one is sampled below
        st.sampled_from("\x1b\x00\r\n\t\x9b\u202e\u2066\u200c\u200d\u2028\U000e0041\ud800👩\u06cc"),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_output_is_safe_and_idempotent(text):
    once = visible(text)
    assert visible(once) == once
    assert not any(_dangerous(c) and c not in "\n\t\u2028\u2029\u200c\u200d" for c in once)
    assert "\r" not in once
    line = one_line(text)
    assert one_line(line) == line
    assert not any(
        _dangerous(c) or c in "\n\t\u2028\u2029" for c in line if c not in "\u200c\u200d"
    )


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(TEXT, lambda inner: st.lists(inner) | st.dictionaries(TEXT, inner), max_leaves=8)
)
def test_json_keeps_the_exact_strings_and_writes_no_hidden_character(data):
    encoded = json_visible(json.dumps(data, indent=2, ensure_ascii=False))
    assert json.loads(encoded) == data
    assert not any(_dangerous(c) or c in "\u200c\u200d" for c in encoded if c != "\n")
    assert json_visible(encoded) == encoded


def test_json_escapes_written_out():
    raw = {"t": "a\x1b[2J\u202e\x9b\u200d\U000e0041\ud800日本"}
    encoded = json_visible(json.dumps(raw, ensure_ascii=False))
    assert encoded == '{"t": "a\\u001b[2J\\u202e\\u009b\\u200d\\udb40\\udc41\\ud800日本"}'
    assert json.loads(encoded) == raw
