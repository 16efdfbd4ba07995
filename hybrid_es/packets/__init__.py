"""Evidence packets: a bounded, versioned working set for one case, reused only while provably
current. ``manifest`` (the model), ``verdict`` (pure revalidation), ``render`` (pure prompt
assembly), ``store`` (the packets index), ``observe`` (dependency lookups), ``service`` (the flow).

Entry point: ``service.PacketService``.
May import: ingest (token estimates), retrieval, cluster and the ground modules.
"""
