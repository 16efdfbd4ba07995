"""The documentation cannot drift from the code: every code block in ``docs/`` runs in CI or says
it is an excerpt, the generated settings table is current, links resolve, and the lists that
mirror the code (layers, record fields, ``HYBRID_ES_*`` names) equal it.

The code-block convention (docs/development.md, "Documentation"): a fenced ``python``, ``bash``,
``sh`` or ``console`` block is

- marked ``<!-- excerpt -->`` on the last non-blank line before its fence (shown, not run);
- marked ``<!-- run -->`` before a ``python`` block: :func:`test_runnable_blocks_run` runs it;
- or a block whose first line is ``# examples/<name>.py``, equal to that file (CI runs the files).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from hybrid_es import Document
from hybrid_es.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
README = ROOT / "README.md"
README_REWRITTEN = True
"""The README is held to the code-block rule once it is rewritten as the front page (issue 39);
until then it is skipped by name. Its example programs are checked by test_readme_programs.py."""

CHECKED = {"python", "bash", "sh", "console"}
EXCERPT = "<!-- excerpt -->"
RUN = "<!-- run -->"
EXAMPLE = re.compile(r"# (examples/[\w-]+\.py)\n")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<lang>[^`\s]*)\s*$")

PENDING_PAGES: set[str] = set()
"""Pages that another change adds: a link to one is checked once the page exists."""
NOT_SETTINGS = {"HYBRID_ES_INDEX_PREFIX"}
"""Names the code quotes that are not variables (a test names a setting that never existed)."""
ENV_NAME = re.compile(r"\bHYBRID_(?:ES|OS)_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_{])")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    """The fence's line, 1-based."""
    lang: str
    body: str
    marker: str
    """The last non-blank line before the fence, stripped."""

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page.name
        return f"{page}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced code block of a Markdown page (indented ones in lists included)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m["indent"]), m["fence"]
        end = i + 1
        while end < len(lines) and not (
            lines[end].strip().startswith(fence[0] * len(fence))
            and not lines[end].strip().strip(fence[0])
        ):
            end += 1
        before = [ln.strip() for ln in lines[:i] if ln.strip()]
        body = "\n".join(ln[indent:] for ln in lines[i + 1 : end])
        out.append(Block(page, i + 1, m["lang"].lower(), body + "\n", before[-1] if before else ""))
        i = end + 1
    return out


DOC_BLOCKS = [b for page in PAGES for b in blocks(page)]
RUNNABLE = [b for b in DOC_BLOCKS if b.marker == RUN]


def _unmarked(page_blocks: list[Block]) -> list[str]:
    bad = []
    for b in page_blocks:
        if b.lang not in CHECKED:
            continue
        if b.marker == EXCERPT or (b.marker == RUN and b.lang == "python"):
            continue
        if b.lang == "python" and EXAMPLE.match(b.body):
            continue
        bad.append(b.where)
    return bad


@pytest.mark.parametrize("page", [*PAGES, README], ids=lambda p: p.name)
def test_every_code_block_runs_or_is_an_excerpt(page):
    if page == README and not README_REWRITTEN:
        pytest.skip("README.md: checked once it is rewritten as the front page (issue 39)")
    bad = _unmarked(blocks(page))
    assert not bad, (
        "code blocks that neither run in CI nor say they are excerpts (put <!-- excerpt --> or, "
        "for python a test runs, <!-- run --> on the line before the fence; docs/development.md, "
        '"Documentation"):\n' + "\n".join(bad)
    )


def test_the_block_rule_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```bash\nls\n```\n\n<!-- excerpt -->\n```sh\nls\n```\n\n<!-- run -->\n"
        "```bash\nls\n```\n\n```\nplain output\n```\n\n- item\n\n  ```console\n  $ ls\n  ```\n",
        encoding="utf-8",
    )
    found = blocks(page)
    assert [(b.line, b.lang) for b in found] == [
        (3, "bash"), (8, "sh"), (13, "bash"), (17, ""), (23, "console"),
    ]  # fmt: skip
    assert [w.rsplit(":", 1)[1] for w in _unmarked(found)] == ["3", "13", "23"]


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_runnable_blocks_run(block):
    assert block.lang == "python", f"{block.where}: only python blocks run"
    code = compile(block.body, block.where, "exec")
    exec(code, {"__name__": "__docs__"})


def test_some_block_runs():
    assert RUNNABLE, "no <!-- run --> block found: the runner would pass on nothing"


def test_example_blocks_equal_their_files():
    seen = 0
    for b in DOC_BLOCKS:
        m = EXAMPLE.match(b.body) if b.lang == "python" else None
        if m:
            seen += 1
            path = ROOT / m[1]
            assert path.is_file(), f"{b.where}: {m[1]} does not exist"
            assert b.body[m.end() :] == path.read_text(encoding="utf-8"), (
                f"{b.where} differs from {m[1]}: copy the file into the block"
            )
    assert seen, "no example program in docs/"


# -- the generated settings table ----------------------------------------------------------------


def _settings_table() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "settings_table", ROOT / "scripts/settings_table.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_settings_table_is_current():
    table = _settings_table()
    page = table.PAGE.read_text(encoding="utf-8")
    assert table.rewrite(page, table.generate()) == page, (
        "docs/configuration.md's settings table differs from hybrid_es/settings.py: run "
        "python scripts/settings_table.py --write"
    )


def test_every_setting_has_a_row():
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    for name in Settings.model_fields:
        assert f"| `HYBRID_ES_{name.upper()}` |" in page, name


def test_descriptions_written_outside_settings_py_are_only_for_fields_without_a_docstring():
    table = _settings_table()
    undocumented = set(Settings.model_fields) - set(table.field_docstrings())
    assert set(table.UNDOCUMENTED) == undocumented, (
        "scripts/settings_table.py's UNDOCUMENTED must name exactly the Settings fields without "
        "a docstring: remove an entry once settings.py documents its field, add one for a new "
        "undocumented field (better: give it a docstring)"
    )


def test_first_sentence():
    table = _settings_table()
    assert table.first_sentence("A (b. C) d. E f.") == "A (b. C) d."
    assert table.first_sentence("`x.y` is it. Then") == "`x.y` is it."
    assert table.first_sentence("one, e.g. two") == "one, e.g. two"


def test_every_env_name_in_use_is_documented():
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    documented = set(ENV_NAME.findall(page))
    families = tuple(m[:-1] for m in re.findall(r"HYBRID_(?:ES|OS)_[A-Z0-9_]*_\*", page))
    sources = [
        *ROOT.glob("hybrid_es/**/*.py"),
        *ROOT.glob("benchmarks/**/*.py"),
        *ROOT.glob("tests/**/*.py"),
        *(p for p in ROOT.glob("scripts/*") if p.is_file()),
        ROOT / ".ci" / "run",
        ROOT / "docker-compose.yml",
    ]
    missing: dict[str, str] = {}
    for path in sources:
        if not path.is_file():
            continue
        for name in ENV_NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
            if name in documented or name in NOT_SETTINGS or name.startswith(families):
                continue
            missing.setdefault(name, str(path.relative_to(ROOT)))
    assert not missing, (
        "variables in use but not in docs/configuration.md (a Settings field: rerun "
        "scripts/settings_table.py --write; anything else: add it to a table there):\n"
        + "\n".join(f"{n} ({p})" for n, p in sorted(missing.items()))
    )


# -- lists that mirror the code ------------------------------------------------------------------


def _assigned(path: Path, name: str) -> object:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path}: no {name}")


def _section(page: str, heading: str) -> str:
    start = page.index(f"\n## {heading}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end > 0 else None]


def test_architecture_lists_the_layers_of_the_layer_test():
    layer_test = ROOT / "tests" / "unit" / "test_layers.py"
    section = _section((DOCS / "architecture.md").read_text(encoding="utf-8"), "The layers")
    listed = re.findall(r"^\d+\. `(\w+)`", section, re.M)
    assert listed == _assigned(layer_test, "LAYERS"), (
        "docs/architecture.md's numbered list of layers must equal LAYERS in "
        "tests/unit/test_layers.py, in order"
    )
    ground = re.findall(r"^- `(\w+)`:", section, re.M)
    assert sorted(ground) == sorted(_assigned(layer_test, "GROUND")), (
        "docs/architecture.md's list of ground modules must equal GROUND in test_layers.py"
    )


def test_ingestion_lists_every_field_of_a_record():
    section = _section((DOCS / "ingestion.md").read_text(encoding="utf-8"), "The record")
    listed = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert listed == list(Document.model_fields), (
        "docs/ingestion.md's record table must list Document's fields, in their order "
        "(hybrid_es/ingest/documents.py)"
    )


# -- links ----------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    text = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    out: set[str] = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_code = not in_code
        if in_code or not (m := re.match(r"^#{1,6} (.+)$", line)):
            continue
        base = slug(m[1])
        name, n = base, 0
        while name in out:
            n += 1
            name = f"{base}-{n}"
        out.add(name)
    return out


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def test_slug_follows_github():
    assert slug("Every collection x pipeline, before and after, in one run") == (
        "every-collection-x-pipeline-before-and-after-in-one-run"
    )
    assert (
        slug("The local Elasticsearch (`scripts/es.sh`)") == "the-local-elasticsearch-scriptsessh"
    )
    assert slug("The trained cross-encoder (`hybrid-es reranker train`)") == (
        "the-trained-cross-encoder-hybrid-es-reranker-train"
    )


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file or heading does not exist."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            if dest.parent == DOCS and dest.name in PENDING_PAGES:
                continue
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no such heading in {dest.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    broken = broken_links(page)
    assert not broken, f"{page.name}:\n" + "\n".join(broken)


def test_the_link_check_can_fail(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading (2)\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-code-heading-2) [ok](#title) [web](https://example.org/x#y)\n"
        "[gone](missing.md) [bad](other.md#nope) [self](#nope)\n\n# Title\n"
        "```\n[in code](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#nope: no such heading in other.md",
        "#nope: no such heading in page.md",
    ]
