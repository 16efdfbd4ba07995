"""Cluster I/O: the client, the templates installed as data, bootstrap, the capability probe, the
Kibana saved objects, and the per-tenant corpus state that search, ingest and packets all read.

Entry points: ``bootstrap.bootstrap`` (install) and ``capabilities.probe`` (what it can do).
May import: the ground modules only (models, errors, settings, identity, hashing, tenancy).
"""
