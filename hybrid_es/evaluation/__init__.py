"""Evaluation: IR metrics through ranx, pipelines run over a BEIR collection (or the cookbook's
layout), training the embedder and the cross-encoder, and fusion chosen leave-one-collection-out.

Entry points: ``run.evaluate_dataset`` (what ``hybrid-es eval`` runs) and ``runner.run_pipeline``.
May import: packets, traces, ingest, retrieval, cluster and the ground modules.
"""
