"""The client settings of the local 3-node cluster suites (the smoke test and the node-loss run),
built in one place so both log in the same way: the cluster's own credentials
(``HYBRID_ES_CLUSTER_USERNAME`` / ``_PASSWORD``, not the suite's ``HYBRID_ES_*``), shared tenancy
and one replica, so a node's loss promotes copies instead of losing data."""

from __future__ import annotations

import os

from pydantic import SecretStr

from hybrid_es.settings import Settings


def cluster_settings(url: str, tag: str, *, suite: str, shards: int) -> Settings:
    """Settings for ``url`` (one node's URL, or several comma-separated) whose indices are named
    ``hybrid-es-*-{suite}-{tag}``, so each suite's runs never share an index; ``shards`` is the
    chunks index's primaries (spread over the nodes, so the node killed holds some)."""
    return Settings(
        url=url,
        username=os.environ.get("HYBRID_ES_CLUSTER_USERNAME", "elastic"),
        password=SecretStr(os.environ.get("HYBRID_ES_CLUSTER_PASSWORD", "hybrid-es-dev")),
        ca_certs=None,
        tenancy="shared",
        chunks_index=f"hybrid-es-chunks-{suite}-{tag}",
        packets_index=f"hybrid-es-packets-{suite}-{tag}",
        corpus_state_index=f"hybrid-es-corpus-state-{suite}-{tag}",
        replicas="1",
        chunks_shards=shards,
        request_timeout=30,
    )
