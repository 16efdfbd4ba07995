"""The package layout tells the architecture, and this test keeps it true: imports only go down.

The layers, top to bottom (each may import its own layer and any layer below it)::

    api         hybrid_es/__init__.py: the public names, re-exported
    cli         the command line
    adapters    LangChain, Haystack and LlamaIndex retrievers over the searcher (each module
                imports its own framework only; nothing below imports an adapter)
    verify      ``hybrid-es verify``: conformance checks on a live cluster, over the ingestor,
                the searcher and evaluation's model-free embedder
    deployment  the front door: ``HybridEs``, every part of a deployment built from its settings
    evaluation  metrics, pipeline runs, training
    packets     evidence packets
    traces      trace documents, writer, hooks, reader
    ingest      documents, loaders, chunking, context headers, the indexer
    retrieval   policy, queries, fusion, the searcher pipeline, the chunks door
    encoders    the embedders, the per-index embedder choice, the cross-encoder (shared by ingest
                and retrieval)
    text        script folding, text analysis, identifier extraction (shared the same way)
    cluster     client, templates, bootstrap, capabilities, Kibana, corpus state
    ground      models, errors, settings, connection_strings, identity, hashing, tenancy,
                namespace, textsafe, client_options, telemetry (OpenTelemetry spans and metrics;
                a no-op without it)

Every ``import`` counts, at module level or inside a function (a lazy import is still a
dependency), and the module graph must have no cycle. Nothing in the package imports the
repository's folders beside it that the wheel leaves out (``benchmarks/``, ``tests/``): an
installed ``hybrid_es`` would fail on that import.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hybrid_es"
NOT_INSTALLED = ("benchmarks", "tests")
"""Packages beside ``hybrid_es`` in the repository that the wheel does not ship."""
LAYERS = [
    "api",
    "cli",
    "adapters",
    "verify",
    "deployment",
    "evaluation",
    "packets",
    "traces",
    "ingest",
    "retrieval",
    "encoders",
    "text",
    "cluster",
    "ground",
]
GROUND = {
    "models",
    "errors",
    "settings",
    "connection_strings",
    "identity",
    "hashing",
    "tenancy",
    "namespace",
    "textsafe",
    "client_options",
    "metadata_fields",
    "telemetry",
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def layer(module: str) -> str:
    parts = module.split(".")
    if module == "hybrid_es":
        return "api"
    if parts[1] in GROUND and len(parts) == 2:
        return "ground"
    if parts[1] in LAYERS:
        return parts[1]
    raise AssertionError(
        f"{module} belongs to no layer: add it to one in tests/unit/test_layers.py"
    )


def imports(module: str) -> set[str]:
    """The hybrid_es modules that ``module`` imports, anywhere in its body."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("hybrid_es")}
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hybrid_es")
        ):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in MODULES else node.module)
    return {m for m in found if m in MODULES and m != module}


def outside_imports(source: str) -> set[str]:
    """The modules of :data:`NOT_INSTALLED` that ``source`` imports, anywhere in its body."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return {m for m in found if m.split(".")[0] in NOT_INSTALLED}


def test_every_module_belongs_to_a_layer():
    for module in MODULES:
        assert layer(module) in LAYERS


def test_imports_only_go_down():
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = [
        f"{m} ({layer(m)}) imports {dep} ({layer(dep)})"
        for m in MODULES
        for dep in sorted(imports(m))
        if rank[layer(dep)] < rank[layer(m)]
    ]
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_the_package_imports_nothing_the_wheel_leaves_out():
    found = [
        f"{m} imports {dep}"
        for m, path in MODULES.items()
        for dep in sorted(outside_imports(path.read_text(encoding="utf-8")))
    ]
    assert not found, "imports of code outside the package:\n" + "\n".join(found)


def test_the_module_graph_has_no_cycle():
    graph = {m: imports(m) for m in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for dep in sorted(graph[m]):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            raise AssertionError("import cycle: " + " -> ".join(cycle))


def test_the_checks_catch_what_they_claim():
    # The checks are only worth something if they can fail: a made-up upward edge and a made-up
    # cycle are caught by the same rules.
    rank = {name: i for i, name in enumerate(LAYERS)}
    assert rank[layer("hybrid_es.cli.main")] < rank[layer("hybrid_es.retrieval.searcher")]
    assert rank[layer("hybrid_es.cluster.client")] > rank[layer("hybrid_es.ingest.indexer")]
    assert "hybrid_es.retrieval.policy" in imports("hybrid_es.retrieval.prepare")
    assert "hybrid_es.ingest.plan" in imports("hybrid_es.ingest.indexer")
    lazy = "def f():\n    from benchmarks.bench import percentile\n    import tests.conftest\n"
    assert outside_imports(lazy) == {"benchmarks.bench", "tests.conftest"}
    assert not outside_imports("from hybrid_es.evaluation import metrics\nimport benchmarking\n")


def test_each_subpackage_says_what_it_is_and_what_it_may_import():
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        lines = [ln for ln in doc.splitlines() if ln.strip()]
        assert 3 <= len(lines) <= 6, f"{init}: a docstring of three to six lines"
        assert "Entry point" in doc and "May import" in doc, init
