"""The benchmark scripts' library code: ``scripts/bench_scale.py`` (``scale_*``),
``scripts/bench_search.py`` (``search_*``), ``scripts/bench_contextual.py`` (``contextual_*``) and
``scripts/bench_haystack.py`` (``peer_*``, over ``interleave*``).

Entry points: ``scale_run.run``, ``search_run.run``, ``contextual_run.run`` and ``peer_run.run``.
May import: the rest of evaluation, and what evaluation may import.
"""
