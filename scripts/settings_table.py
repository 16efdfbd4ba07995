"""The ``HYBRID_ES_*`` settings as a Markdown table, generated from ``hybrid_es.settings.Settings``.

Each field of ``Settings`` reads the variable ``HYBRID_ES_<FIELD>``. The table gives its type and
default (from ``Settings.model_fields``, pydantic v2) and what it does: the first sentence of the
field's docstring, the string literal under the field in ``hybrid_es/settings.py`` (read with
``ast``, so the settings module needs no ``use_attribute_docstrings``). Below the table, every
field whose docstring says more than that sentence is given in full.

    python scripts/settings_table.py           print the generated block
    python scripts/settings_table.py --write   rewrite it in docs/configuration.md
    python scripts/settings_table.py --check   exit 1 when docs/configuration.md differs

``tests/unit/test_docs.py`` regenerates the block and fails when the page differs.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from hybrid_es.client_options import ALLOWED_CLIENT_OPTIONS
from hybrid_es.cluster.source_connection import ENV_PREFIX as SOURCE_PREFIX
from hybrid_es.cluster.source_connection import SourceSettings
from hybrid_es.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_SOURCE = ROOT / "hybrid_es" / "settings.py"
SOURCE_SETTINGS = ROOT / "hybrid_es" / "cluster" / "source_connection.py"
PAGE = ROOT / "docs" / "configuration.md"
START = "<!-- settings-table:start (generated: scripts/settings_table.py --write) -->"
END = "<!-- settings-table:end -->"
PREFIX = "HYBRID_ES_"

UNDOCUMENTED = {
    "username": "A user name, for basic authentication with ``password``.",
    "password": "The password of ``username``.",
    "client_key": "The private key (PEM) of ``client_cert``, when it is not in the same file.",
    "request_timeout": "Seconds one request to the cluster may take.",
    "max_retries": "Connection-level retries of one request (on the next node, where ``url`` "
    "names several).",
    "chunks_index": "Name of the chunks index, and the prefix of each tenant's own chunks index "
    "(``<name>-t-<tenant>``) in the ``index-per-tenant`` layout.",
    "packets_index": "Name of the evidence packets index.",
    "traces_index": "Prefix of the traces: the data stream ``<name>-stream`` or the daily "
    "indices ``<name>-YYYY.MM.DD``; read through ``<name>-*``.",
    "corpus_state_index": "Name of the index that holds each tenant's corpus watermark.",
    "templates_dir": "A folder of templates that bootstrap installs instead of the packaged "
    "``es_templates/``.",
    "reranker_model": "The cross-encoder: a local model folder (one written by ``hybrid-es "
    "reranker train`` brings its own defaults) or a sentence-transformers name where a hub is "
    "reachable; unset, nothing is reranked.",
    "rerank_depth": "Fused candidates the command line's ``search`` gives the cross-encoder "
    "(at most the retrieval window); a program passes ``rerank_depth`` to ``search`` "
    "(``hybrid_es.models.SearchRequest``, also 50).",
    "fusion": "Where the legs are fused: ``auto`` (natively in the cluster where it can, else "
    "client-side), ``native`` (fail where the cluster cannot) or ``client``.",
    "packet_ttl_minutes": "Minutes an evidence packet stays valid after it is assembled.",
}
"""What the table says for a field that has no docstring in settings.py yet. Each entry belongs
in settings.py, as the field's docstring; a test fails when an entry here names a field that
has one (or none), so this list can only shrink."""


def field_docstrings(source: Path = SETTINGS_SOURCE, name: str = "Settings") -> dict[str, str]:
    """Each field's docstring of the class ``name`` in ``source``: the string literal right
    under its annotation."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    cls = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name)
    out: dict[str, str] = {}
    for node, after in zip(cls.body, [*cls.body[1:], None], strict=True):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            out[node.target.id] = after.value.value
    return out


def _markdown(text: str) -> str:
    """reST-flavoured docstring text as one line of Markdown."""
    text = " ".join(text.split())
    text = re.sub(r":(?:func|meth|class|data|mod|attr|exc|obj):`~?([^`]+)`", r"``\1``", text)
    return re.sub(r"``(.+?)``", r"`\1`", text)


def first_sentence(text: str) -> str:
    """Up to the first full stop that ends a sentence: outside brackets and code, followed by
    the end or by a capital letter or a digit."""
    depth, code = 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            code = not code
        elif code:
            continue
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == "." and depth == 0:
            rest = text[i + 1 :]
            if not rest.strip() or re.match(r"\s+[A-Z0-9`]", rest):
                return text[: i + 1]
    return text


JSON_TYPES = {
    int: "integer",
    float: "number",
    bool: "boolean",
    str: "string",
    list: "array",
    dict: "object",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code(value: Any) -> str:
    return f"`{value}`"


def _choices(pattern: str) -> list[str] | None:
    m = re.fullmatch(r"\^\(([\w|-]+)\)\$", pattern)
    return m.group(1).split("|") if m else None


def type_text(annotation: Any, metadata: list[Any]) -> str:
    """A field's type as a reader of environment variables sees it."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        parts = [type_text(a, metadata) for a in args if a is not type(None)]
        return " or ".join(parts)
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(_code(a) for a in args)
    bounds = []
    for m in metadata:
        for name, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if getattr(m, name, None) is not None:
                bounds.append(f"{sign} {getattr(m, name)}")
        pattern = getattr(m, "pattern", None)
        if pattern and (choices := _choices(pattern)):
            return " \\| ".join(_code(c) for c in choices)
    base = {
        bool: "`true` \\| `false`",
        int: "integer",
        float: "number",
        str: "text",
        Path: "path",
        SecretStr: "secret text",
    }.get(annotation)
    if base is None:
        origin = typing.get_origin(annotation)
        base = {dict: "JSON object", tuple: "comma-separated list"}.get(origin, str(annotation))
    return base + (f" ({', '.join(bounds)})" if bounds else "")


def default_text(name: str, model: Any = Settings) -> str:
    field = model.model_fields[name]
    factory = field.default_factory
    value = factory() if factory is not None else field.default  # type: ignore[call-arg]
    if value is None or value in ((), {}, ""):
        return "unset"
    if isinstance(value, bool):
        return _code(str(value).lower())
    return _code(value)


def descriptions() -> dict[str, str]:
    """Each field's full description (its docstring, or its entry in UNDOCUMENTED), as one line
    of Markdown."""
    docs = field_docstrings()
    return {
        name: _markdown(docs.get(name) or UNDOCUMENTED.get(name, ""))
        for name in Settings.model_fields
    }


def generate() -> str:
    """The block between the page's markers (markers excluded)."""
    described = descriptions()
    rows = ["| variable | type | default | what it does |", "|---|---|---|---|"]
    details = []
    for name, field in Settings.model_fields.items():
        var = PREFIX + name.upper()
        text = described[name]
        summary = first_sentence(text)
        rows.append(
            f"| `{var}` | {type_text(field.annotation, field.metadata)} | "
            f"{_cell(default_text(name))} | {_cell(summary)} |"
        )
        if text.strip() != summary.strip():
            details.append(f"- **`{var}`**: {text}")
    options = ["| option | JSON type | what it does |", "|---|---|---|"]
    for option, (kind, what) in ALLOWED_CLIENT_OPTIONS.items():
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds:  # an integer is a JSON number too
            kinds = tuple(k for k in kinds if k is not int)
        names = " or ".join(JSON_TYPES.get(k, k.__name__) for k in kinds)
        options.append(f"| `{option}` | {names} | {_cell(what)} |")
    return "\n".join(
        [
            *rows,
            "",
            "In full, where a field's docstring says more than its first sentence:",
            "",
            *details,
            "",
            f"What `{PREFIX}CLIENT_OPTIONS` may hold"
            " (`hybrid_es.client_options.ALLOWED_CLIENT_OPTIONS`; anything else is refused when"
            " the settings are read, naming the setting to use):",
            "",
            *options,
            "",
            *source_table(),
        ]
    )


def source_table() -> list[str]:
    """The ``HYBRID_ES_SOURCE_*`` settings of an index sync's source
    (``hybrid_es.cluster.source_connection.SourceSettings``), as a table of their own."""
    docs = field_docstrings(SOURCE_SETTINGS, "SourceSettings")
    rows = [
        f"The source of an index sync (`hybrid-es ingest --from-index`, [sync.md](sync.md)),"
        f" `{SOURCE_PREFIX}*`: read only for the source, never for the deployment (nor the"
        " deployment's for the source):",
        "",
        "| variable | type | default | what it does |",
        "|---|---|---|---|",
    ]
    for name, field in SourceSettings.model_fields.items():
        text = _markdown(docs.get(name, ""))
        rows.append(
            f"| `{SOURCE_PREFIX}{name.upper()}` | {type_text(field.annotation, field.metadata)} | "
            f"{_cell(default_text(name, SourceSettings))} | {_cell(text)} |"
        )
    return rows


def rewrite(page: str, block: str) -> str:
    """``page`` with the text between its markers replaced by ``block``."""
    start, end = page.index(START) + len(START), page.index(END)
    return page[:start] + "\n" + block + "\n" + page[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"rewrite the block in {PAGE.name}")
    group.add_argument("--check", action="store_true", help=f"exit 1 when {PAGE.name} differs")
    args = parser.parse_args(argv)
    block = generate()
    if not (args.write or args.check):
        print(block)
        return 0
    page = PAGE.read_text(encoding="utf-8")
    wanted = rewrite(page, block)
    if args.check:
        if wanted != page:
            print(f"{PAGE} is out of date: run python scripts/settings_table.py --write")
            return 1
        return 0
    PAGE.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
