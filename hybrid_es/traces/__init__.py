"""Traces for Kibana: pure trace documents, the background writer, the searcher's and packet
service's hooks, and reading traces back, scoped to the caller.

Entry points: ``hooks.search_hook`` (writing) and ``reader.TraceReader`` (reading).
May import: retrieval (query cleaning), cluster and the ground modules.
"""
