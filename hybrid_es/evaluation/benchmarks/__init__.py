"""The benchmark scripts' library code: ``scripts/bench_scale.py`` (``scale_*``),
``scripts/bench_search.py`` (``search_*``) and ``scripts/bench_contextual.py`` (``contextual_*``).

Entry points: ``scale_run.run``, ``search_run.run`` and ``contextual_run.run``.
May import: the rest of evaluation, and what evaluation may import.
"""
