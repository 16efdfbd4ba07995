"""Hybrid retrieval: the policy filter, the request builders, fusion, the searcher pipeline
(prepare -> retrieve -> authorize -> rerank -> assemble), and the models it runs (the embedder and
the cross-encoder), with the text analysis and identifier extraction that ingest shares.

Entry point: ``searcher.HybridSearcher``.
May import: cluster and the ground modules.
"""
