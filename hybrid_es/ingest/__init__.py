"""Ingestion: typed documents and their loaders, chunking, context headers and their guardrail,
the pure skip/write plan, and the indexer that writes a caller's documents.

Entry points: ``run.ingest_path`` (a file or folder, as the CLI does), ``sync.sync_index`` (an
existing index, kept in sync) and ``indexer.Ingestor``.
May import: retrieval (the chunks door), encoders, text, cluster and the ground modules.
"""
