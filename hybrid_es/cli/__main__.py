"""``python -m hybrid_es.cli``: the same as the ``hybrid-es`` console script."""

from hybrid_es.cli import main

main()
