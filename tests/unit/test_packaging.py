"""What the distribution promises: the library installs without the command line's typer and
rich, without the adapters' frameworks, and ships its type information (issue 14, item 7).
The wheel itself is built and inspected in scripts/check_wheel.sh."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hybrid_es

OPTIONAL = ("typer", "rich", "click", "langchain_core", "haystack", "llama_index")
"""The cli extra (typer, rich; typer's click), and the adapters extra's frameworks."""

IMPORT_THE_LIBRARY = f"""
import importlib, pkgutil, sys
for name in {OPTIONAL!r}:
    sys.modules[name] = None  # as if not installed: importing it raises ImportError
import hybrid_es
needs_an_extra = ("hybrid_es.cli", "hybrid_es.adapters.langchain", "hybrid_es.adapters.haystack",
                  "hybrid_es.adapters.llamaindex")
names = [m.name for m in pkgutil.walk_packages(hybrid_es.__path__, "hybrid_es.")
         if not m.name.startswith(needs_an_extra)]
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def test_the_library_imports_without_the_cli_and_adapter_extras():
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_THE_LIBRARY], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout) > 50  # every library module was imported


def test_importing_the_adapters_package_imports_no_framework():
    code = (
        "import sys, hybrid_es, hybrid_es.adapters, hybrid_es.adapters.provenance; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'langchain_core', 'haystack', 'llama_index'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"


def test_the_package_is_marked_typed():
    assert (Path(hybrid_es.__file__).parent / "py.typed").is_file()


ROOT = Path(__file__).resolve().parents[2]
INSTALL_PAGE = ROOT / "docs" / "deploying.md"
"""Where the install lines live (the README links there since issue 39 made it a front page)."""


def install_lines() -> list[str]:
    """The ``pip install`` lines of the Install section of docs/deploying.md, as written."""
    text = INSTALL_PAGE.read_text(encoding="utf-8")
    section = text.split("## Install\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_install_lines_install_from_the_checkout_and_each_resolves_as_written():
    """Each line builds the checkout's metadata and would install it (``--dry-run``; its
    dependencies are the venv's, so no index is asked), and names only extras that exist: pip
    itself only warns about an unknown extra, and only when it resolves dependencies."""
    import re
    import shlex
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(pyproject["project"]["optional-dependencies"])
    lines = install_lines()
    assert len(lines) >= 6 and all(line.startswith("pip install ") for line in lines)
    for line in lines:
        args = shlex.split(line)[2:]
        assert all(a == "." or a.startswith(".[") for a in args), line  # never an index name
        named = {e for a in args for e in re.findall(r"[\w-]+", a.partition("[")[2])}
        assert named <= extras, (line, named - extras)
        out = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", *args],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )
        assert out.returncode == 0, (line, out.stderr[-2000:])
        assert "Would install hybrid-es" in out.stdout, (line, out.stdout[-1000:])
