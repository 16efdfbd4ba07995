"""Conformance on the user's own cluster (``hybrid-es verify``): native fusion against client
fusion, the policy filter in both legs, document-level security, the analysis profile, trace
storage and versions, each reported pass, fail or unavailable with its reason.

Entry point: ``run.verify`` (read-only unless ``write``; scratch objects are always removed).
May import: evaluation, packets, traces, ingest, retrieval, cluster and the ground modules.
"""
