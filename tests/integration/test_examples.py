"""The README's programs (examples/*.py) all run one after another on one node, without
``--force`` (issue 37): each bootstraps its own namespace (``Settings(namespace=...)``), with
the filterable fields it declares, so none refuses another's templates or rewrites them. Before
namespaces, the LlamaIndex program after the LangChain one failed with exit 73 (its template
differed), and each forced bootstrap rewrote the one before."""

from __future__ import annotations

import pytest

from tests import namespaces

pytestmark = pytest.mark.integration

PROGRAMS = ("quickstart.py", "langchain_app.py", "haystack_app.py", "llamaindex_app.py")


def test_the_readme_programs_run_one_after_another_without_force(es):
    assert sorted(PROGRAMS) == sorted(p.name for p in namespaces.EXAMPLES.glob("*.py"))
    spaces = [namespaces.example_namespace(p) for p in PROGRAMS]
    assert len(set(spaces)) == len(spaces)  # one namespace each
    for ns in spaces:
        namespaces.drop(es, ns)
    try:
        done = []
        for program, ns in zip(PROGRAMS, spaces, strict=True):
            before = [namespaces.snapshot(es, other) for other in spaces if other != ns]
            run = namespaces.run_example(program)
            assert run.returncode == 0, f"{program} (after {done}): {run.stderr[-3000:]}"
            assert run.stdout.strip(), program
            # Its bootstrap and writes touched no other program's objects.
            assert [namespaces.snapshot(es, o) for o in spaces if o != ns] == before, program
            done.append(program)
    finally:
        for ns in spaces:
            namespaces.drop(es, ns)
