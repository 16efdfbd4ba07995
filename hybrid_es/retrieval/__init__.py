"""Hybrid retrieval: the policy filter, the request builders, fusion, the chunks door and the
searcher pipeline (prepare -> retrieve -> authorize -> rerank -> assemble). The models it runs live
in ``encoders`` and the text analysis in ``text``, below it, because ingest shares them.

Entry point: ``searcher.HybridSearcher``.
May import: encoders, text, cluster and the ground modules.
"""
