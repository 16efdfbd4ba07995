"""Evaluation and benchmarks: IR metrics through ranx, pipelines run over a BEIR collection (or
the cookbook's layout), training the cross-encoder, and what the benchmark scripts share.

Entry points: ``run.evaluate_dataset`` (what ``hybrid-es eval`` runs) and ``runner.run_pipeline``.
May import: packets, traces, ingest, retrieval, cluster and the ground modules.
"""
