"""The benchmarks' library code, outside the installed package (the wheel ships ``hybrid_es``
only; ``scripts/check_wheel.sh`` checks that none of this is in it). The ``scripts/bench_*.py``
entry points put the repository root on ``sys.path`` and import from here: ``bench`` (what every
benchmark shares), ``scale_*`` (``scripts/bench_scale.py``), ``search_*`` (``bench_search.py``),
``contextual_*`` (``bench_contextual.py``), ``peer_*`` over ``interleave*`` (``bench_haystack.py``).

Entry points: ``scale_run.run``, ``search_run.run``, ``contextual_run.run`` and ``peer_run.run``.
May import: ``hybrid_es`` (any layer); nothing in ``hybrid_es`` imports this package.
"""
