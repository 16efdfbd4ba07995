"""Untrusted text made safe to show: on an operator's terminal, in a table, in a model's context.
Pure.

Records and caller inputs are stored as given (a quote stays a verbatim quote of its source) and
neutralised here, on the way out. Three attacks ride on characters that are not seen as
themselves:

* Terminal escape injection. NUL, the C0 and C1 controls and DEL, above all ESC, which begins
  the ANSI CSI and OSC sequences (``ESC[2J`` clears the screen, ``ESC]0;...BEL`` retitles the
  window; C1 ``\\x9b`` is a one-byte CSI). A carriage return moves back to the start of the line
  so that what follows overwrites it.
* Trojan-Source-style reordering. The bidi controls (U+061C, U+200E, U+200F, U+202A-U+202E,
  U+2066-U+2069) make text display in another order than the one it is read in, so what an
  operator sees is not what the model gets.
* Hidden and forged text. The other invisible format characters (Unicode category Cf: zero-width
  space U+200B, word joiner U+2060, soft hyphen U+00AD, BOM U+FEFF, and the tag characters
  U+E0000-U+E007F, which spell ASCII that a model reads and a person does not see), and a line
  break in something meant to be one line (a case id) that opens a block of its own in a prompt.

What the functions write instead:

* C0 controls, DEL and C1 controls as ``\\xNN`` (``\\x00``, ``\\x1b``, ``\\x9b``), but for carriage
  return, line feed and tab, written ``\\r``, ``\\n`` and ``\\t``. Escaping ESC is enough to defuse
  a whole escape sequence: what followed it (``[2J``) is plain text.
* Format characters (Cf, the bidi controls among them), the line and paragraph separators
  U+2028 and U+2029 (categories Zl, Zp), and lone surrogates (a Python ``str`` can hold one) as
  ``U+XXXX`` (``U+202E``, ``U+2028``, ``U+D800``, ``U+E0041``).

What they keep:

* ``\\n`` and ``\\t`` in :func:`visible` (``\\n`` only with ``keep_newlines``), where a CRLF line
  ending becomes ``\\n`` (as an XML reader reads it too); a carriage return anywhere else is
  escaped. U+2028 and U+2029 break a line and do no more than ``\\n`` can, so they are kept where
  ``\\n`` is kept. :func:`one_line` keeps none of them: its output is one line, for ids and table
  cells.
* The joiners U+200C and U+200D, but only between two characters that are shown as themselves
  and are not ASCII: that is where emoji (``👩`` U+200D ``💻``) and the scripts that need
  joiners in ordinary spelling (Persian, the Indic scripts) put them. Latin text has no use for
  one, so ``ig`` U+200D ``nore`` (which reads "ignore" and slips past a reviewer's search)
  shows ``igU+200Dnore``, and so does a joiner at either end, next to a space or next to another
  joiner.
* Everything else: letters of every script, combining marks and variation selectors (emoji and
  Japanese ideographic variants need them), no-break and ideographic spaces, private-use and
  unassigned code points. Lookalike letters are not this module's business.

The escapes are for reading, not for parsing back: a record that holds the four characters
``\\x1b`` shows the same as one that holds ESC. Where the exact string matters (``--json``),
:func:`json_visible` writes JSON ``\\u`` escapes, which a JSON reader turns back into the exact
character. Each function is idempotent: an escape is plain ASCII, nothing is ever un-escaped,
and a joiner that was kept still has the neighbours that kept it, so ``visible(visible(s)) ==
visible(s)``, and likewise for :func:`one_line` and :func:`json_visible`. Text that went through
the packet renderer can therefore pass through :func:`visible` again, at the CLI, unchanged.
"""

from __future__ import annotations

import unicodedata

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""The characters that reorder text on screen (all of category Cf, so all escaped)."""
JOINERS = frozenset("\u200c\u200d")
"""Zero-width non-joiner and joiner: kept between two non-ASCII characters, escaped elsewhere."""
LINE_SEPARATORS = frozenset("\u2028\u2029")
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""The categories that are escaped, but for what a caller keeps (``\\n``, ``\\t``, the line
separators) and a joiner between two non-ASCII characters. The other characters Python does not
count as printable (no-break spaces, private use, unassigned) are kept."""
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_KEEP_LINES = frozenset("\n\t") | LINE_SEPARATORS


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control, bidi and invisible format character written as a visible
    escape (the module docstring says which and how); tabs kept, and line breaks kept only with
    ``keep_newlines`` (a CRLF as ``\\n``). For record text that may span lines."""
    if keep_newlines:
        text = text.replace("\r\n", "\n")
        return _escaped(text, _KEEP_LINES)
    return _escaped(text, frozenset("\t"))


def one_line(text: str) -> str:
    """``text`` as exactly one line: like :func:`visible`, and line feeds, tabs and line
    separators escaped too. For ids, table cells and anything printed as a single line."""
    return _escaped(text, frozenset())


def json_visible(encoded: str) -> str:
    """JSON text (as ``json.dumps`` writes it) with every character that :func:`visible` could
    escape written as a JSON ``\\u`` escape, joiners included (a JSON reader gets the exact
    character back, so there is nothing to keep for the eye).

    ``json.dumps`` escapes C0 controls itself, but with ``ensure_ascii=False`` (which keeps other
    scripts readable) it writes DEL, C1 controls, bidi and format characters raw, and a lone
    surrogate that no UTF-8 stream can even encode. Outside its strings JSON text is ASCII, so
    each such character is inside a string, where a ``\\u`` escape means the same character; the
    whitespace JSON allows between tokens (``json.dumps`` writes spaces and line feeds) is left
    as it is, since a string never holds it raw."""
    return "\n".join(map(_json_line, encoded.split("\n")))


def _escaped(text: str, keep: frozenset[str]) -> str:
    if text.isprintable():  # the common case, at C speed: nothing to escape
        return text
    return "".join(ch if _kept(text, i, keep) else _escape(ch) for i, ch in enumerate(text))


def _kept(text: str, i: int, keep: frozenset[str]) -> bool:
    ch = text[i]
    if ch.isprintable() or ch in keep or not _hidden(ch):
        return True
    return ch in JOINERS and _between_letters(text, i)


def _hidden(ch: str) -> bool:
    return not ch.isprintable() and unicodedata.category(ch) in _HIDDEN


def _json_line(line: str) -> str:
    if line.isprintable():
        return line
    return "".join(_json_escape(ch) if ch not in "\t\r" and _hidden(ch) else ch for ch in line)


def _between_letters(text: str, i: int) -> bool:
    """Whether the joiner at ``i`` has, on both sides, a non-ASCII character that is shown as
    itself (printable, so never escaped and never another joiner)."""
    if i == 0 or i == len(text) - 1:
        return False
    return all(not c.isascii() and c.isprintable() for c in (text[i - 1], text[i + 1]))


def _escape(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    return f"U+{code:04X}"


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # beyond the BMP: JSON spells it as a UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
