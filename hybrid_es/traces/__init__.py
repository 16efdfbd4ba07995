"""Traces for Kibana: pure trace documents, the background writer, the searcher's and packet
service's hooks, and reading traces back, scoped to the caller.

Entry points: ``storage.trace_storage`` (where traces go on this cluster), ``hooks.search_hook``
(writing), ``reader.TraceReader`` (reading, each body through ``door.TracesDoor``) and
``retention.prune_traces`` (deleting old ones).
May import: retrieval (query cleaning), cluster and the ground modules.
"""
