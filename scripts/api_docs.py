"""Build the API reference of the public names (``hybrid_es.__all__``) from their docstrings.

    python scripts/api_docs.py                 HTML into build/api/ (git ignores build/)
    python scripts/api_docs.py --out DIR       elsewhere

pdoc (a ``dev`` dependency) renders the ``hybrid_es`` module as its ``__all__`` defines it: each
public name is documented where it is re-exported, whichever module defines it. Docstrings are
read as Google style (``Args:``, ``Returns:``, ``Raises:``), and pdoc also turns reST roles
(``:func:`x```) into code. The build fails, exit 1, on any warning pdoc raises (a docstring it
cannot convert, an annotation it cannot resolve, a module it cannot import) and when a public
name is missing from the output. ``tests/unit/test_api_docs.py`` runs it.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "build" / "api"
DOCFORMAT = "google"


def build(out: Path) -> list[str]:
    """Render the reference into ``out``; return the problems found (empty: a clean build)."""
    import pdoc
    import pdoc.render

    import hybrid_es

    problems: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.render.configure(docformat=DOCFORMAT, show_source=False, search=True)
        pdoc.pdoc("hybrid_es", output_directory=out)
    problems += [f"{w.category.__name__}: {w.message}" for w in caught]
    page = out / "hybrid_es.html"
    if not page.is_file():
        return [*problems, f"pdoc wrote no {page.name}"]
    anchors = set(re.findall(r'id="([A-Za-z_][A-Za-z0-9_.]*)"', page.read_text(encoding="utf-8")))
    problems += [
        f"{name}: in hybrid_es.__all__ but not in the reference"
        for name in hybrid_es.__all__
        if name not in anchors
    ]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args(argv)
    problems = build(args.out)
    for problem in problems:
        print(f"api_docs: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(args.out / "index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
