"""A rough outline of a source file: where names are defined, which definitions enclose a given
offset, and what the file says about itself. Feeds the extractive header of code chunks. Pure.

Regular expressions, not parsers: they cover the common shapes of Rust, C, C++, Java, Python, Go
and JavaScript/TypeScript definitions, and scope is read from indentation. A miss costs a shorter
header, never a wrong one: every name comes from the file itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CODE_SUFFIXES = frozenset(
    {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".rs", ".java", ".kt", ".scala", ".py"}
    | {".go", ".js", ".jsx", ".ts", ".tsx", ".rb", ".cs", ".swift", ".php", ".m", ".mm", ".sh"}
)

_MODIFIERS = (
    r"(?:(?:pub(?:\([^)\n]*\))?|public|private|protected|internal|static|final|abstract|sealed|"
    r"async|unsafe|extern(?:\s+\"[^\"\n]*\")?|export|default|inline|virtual|const|"
    r"template\s*<[^>\n]*>|@\w+(?:\([^)\n]*\))?)\s+)*"
)
_KEYWORD_DEF = re.compile(
    rf"^(?P<indent>[ \t]*){_MODIFIERS}"
    r"(?P<kind>fn|struct|enum|trait|impl|mod|union|class|interface|record|def|func|function|"
    r"namespace|macro_rules!)(?![\w!])(?P<rest>[^\n]*)",
    re.M,
)
# A C-family function or method: a return type, a name, an opening parenthesis, and no ';' on
# the line (a call statement or a prototype ends with one).
_C_FUNCTION = re.compile(
    r"^(?P<indent>[ \t]*)(?=\S)"
    r"(?!(?:if|for|while|switch|return|else|do|case|catch|sizeof|new|delete|throw|typedef|using|"
    r"goto|let|var|await|yield|assert|print)\b)"
    r"[\w:<>\[\],*&~ \t]*?[\w>*&\]][ \t]+[*&]*(?P<name>[A-Za-z_~][\w:~]*)[ \t]*\([^;\n]*$",
    re.M,
)
_DEFINE = re.compile(r"^(?P<indent>)#\s*define\s+(?P<name>[A-Za-z_]\w*)", re.M)
_GENERICS = re.compile(r"<[^<>]*>")
_IMPL = re.compile(r"^\s*([\w:]+)(?:\s+for\s+([\w:]+))?")
_NAME = re.compile(r"[A-Za-z_]\w*")

_COMMENT_LINE = re.compile(r"^\s*(?://[/!]?|#(?![!\w\[])|\*(?!/)|/\*\*?|\"\"\"|''')\s?(.*?)\s*$")
_BOILERPLATE = re.compile(
    r"copyright|licen[cs]e|spdx|all rights reserved|\bwarrant|permission is hereby|redistribut|"
    r"-\*-|auto-?generated|do not edit|^@\w+",
    re.I,
)
_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)


@dataclass(frozen=True)
class Definition:
    kind: str
    name: str
    offset: int
    indent: int


def is_code(path: str | None, source_type: str) -> bool:
    """Whether a document is source code: its source type says so, or its path's suffix does."""
    if source_type == "code":
        return True
    return bool(path) and any(str(path).lower().endswith(s) for s in CODE_SUFFIXES)


def _indent(raw: str) -> int:
    return len(raw.expandtabs(4))


def _impl_name(rest: str) -> str:
    while _GENERICS.search(rest):
        rest = _GENERICS.sub("", rest)
    m = _IMPL.match(rest)
    if not m:
        return ""
    trait, target = m.group(1), m.group(2)
    return f"{trait} for {target}" if target else trait


def definitions(text: str) -> list[Definition]:
    """Definitions in ``text`` in order of appearance (kind, name, offset, indentation)."""
    found: dict[int, Definition] = {}
    for m in _KEYWORD_DEF.finditer(text):
        kind, rest = m.group("kind"), m.group("rest")
        if kind in ("struct", "enum", "union", "class") and ";" in rest and "{" not in rest:
            continue  # a forward declaration or a variable of that type
        if kind == "impl":
            name = _impl_name(rest)
        else:
            n = _NAME.search(_GENERICS.sub("", rest))
            name = n.group(0) if n else ""
        if name:
            found[m.start()] = Definition(kind, name, m.start(), _indent(m.group("indent")))
    for pattern, kind in ((_C_FUNCTION, "function"), (_DEFINE, "macro")):
        for m in pattern.finditer(text):
            if m.start() not in found:
                found[m.start()] = Definition(
                    kind, m.group("name"), m.start(), _indent(m.group("indent"))
                )
    return [found[k] for k in sorted(found)]


def enclosing(defs: list[Definition], text: str, offset: int) -> list[Definition]:
    """The definitions whose bodies contain ``offset``, outermost first, read from indentation:
    a definition encloses what follows it until a line at its own indentation or less."""
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start : text.find("\n", line_start) if "\n" in text[line_start:] else None]
    indent = _indent(line[: len(line) - len(line.lstrip())]) if line.strip() else 0
    stack: list[Definition] = []
    for d in defs:
        if d.offset >= line_start:
            break
        while stack and stack[-1].indent >= d.indent:
            stack.pop()
        stack.append(d)
    # Lines between the last definition and the offset at a shallower indentation close scopes.
    last = stack[-1].offset if stack else 0
    for raw in text[last:line_start].splitlines()[1:]:
        if raw.strip() and not raw.lstrip().startswith(("}", ")", "]", "//", "#", "*", "/*")):
            lvl = _indent(raw[: len(raw) - len(raw.lstrip())])
            while stack and stack[-1].indent >= lvl:
                stack.pop()
    while stack and stack[-1].indent >= indent:
        stack.pop()
    return stack


def _comment_text(raw: str) -> str | None:
    """The text of a comment line ('' for an empty one), or None when the line is not one."""
    m = _COMMENT_LINE.match(raw)
    if not m:
        return None
    return re.sub(r"(\*/|\"\"\"|\'\'\')\s*$", "", m.group(1)).strip()


def summary(text: str, *, max_words: int = 24) -> str:
    """What the file says about itself: its first comment or docstring paragraph that is not a
    licence or editor line, cut to its first sentence; else its Java/Kotlin package; else ''.

    Only the head of the file counts, up to the end of the first definition's line: a comment
    inside a function body talks about that body, not about the file.
    """
    defs = definitions(text)
    head = text[: text.find("\n", defs[0].offset) if defs else len(text)]
    block: list[str] = []
    chosen = ""
    for raw in head.splitlines()[:120]:
        body = _comment_text(raw)
        if body:
            block.append(body)
            continue
        # An empty comment line, the end of a block comment, a blank or a code line: a paragraph
        # ends. Keep it unless it is boilerplate; code lines between comments are skipped.
        if block:
            para = " ".join(block)
            block = []
            if not _BOILERPLATE.search(para):
                chosen = para
                break
    else:
        para = " ".join(block)
        if block and not _BOILERPLATE.search(para):
            chosen = para
    if chosen:
        sentence = re.split(r"(?<=[.!?])\s", chosen, maxsplit=1)[0]
        words = sentence.split()
        cut = " ".join(words[:max_words])
        return cut + "..." if len(words) > max_words else cut.rstrip(".")
    pkg = _PACKAGE.search(text)
    return f"package {pkg.group(1)}" if pkg else ""
