"""Text as both sides of the index read it: script folding (Traditional and Simplified Chinese,
width, case), the analysis the client applies before the engine's own (code terms, client-side
terms for CJK), and identifier extraction. Shared by ingest and retrieval, below both.

Entry points: ``folding.fold_for_matching``, ``analysis.client_terms``,
``identifiers.extract_identifiers``.
May import: the ground modules.
"""
