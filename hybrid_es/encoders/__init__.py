"""The models, loaded lazily and shared by ingest and retrieval: the passage and query embedders
(MiniLM, multilingual e5), the per-index choice between them, and the cross-encoder reranker.

Entry points: ``embedder_choice.make_embedders`` and ``reranker.CrossEncoderReranker``.
May import: text and the ground modules.
"""
