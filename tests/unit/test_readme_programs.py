"""The README's complete framework programs are the files CI runs (examples/*.py): each block
that opens with ``# examples/<name>.py`` holds that file exactly."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_example_is_in_the_readme_exactly_as_ci_runs_it():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"```python\n# (examples/\S+\.py)\n(.*?)```", readme, re.S))
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").glob("*.py"))
    assert sorted(blocks) == files
    for name, block in blocks.items():
        assert block == (ROOT / name).read_text(encoding="utf-8"), name
