"""Item 7: the client library and the server, as the connect check sees them.

Elasticsearch: elasticsearch-py's major must equal the server's (a newer client is refused on
connect, ``engine.client_mismatch``; an older one talks through the server's REST compatibility,
which the suite never runs), and the server 8.19 or newer. OpenSearch: opensearch-py's versions
do not follow the server's; the server is 2.19 or newer for native fusion (an older one is served
by client fusion, named in the reason).
"""

from __future__ import annotations

from hybrid_es.cluster.capabilities import OPENSEARCH_MINIMUM, version_tuple
from hybrid_es.cluster.engine import Engine
from hybrid_es.verify.report import Check, failed, passed, unavailable

ITEM = 7
ELASTICSEARCH_MINIMUM = (8, 19)


def check_versions(engine: Engine, client_library: str | None = None) -> Check:
    """Item 7 (``client_library``: the client and its version, default the installed one)."""
    client = client_library or engine.client_library
    server = engine.version
    lines: list[str] = []
    if server in ("", "unknown"):
        return unavailable(
            ITEM,
            f"these credentials may not read the {engine.name} server's version (GET / and node "
            "info need the cluster privilege monitor)",
            [f"client {client}"],
        )
    return (
        _opensearch(server, client, lines)
        if engine.flavor == "opensearch"
        else _elasticsearch(server, client, lines)
    )


def _elasticsearch(server: str, client: str, lines: list[str]) -> Check:
    server_major, client_major = version_tuple(server)[0], version_tuple(client.split()[-1])[0]
    minimum = ".".join(map(str, ELASTICSEARCH_MINIMUM))
    if version_tuple(server)[:2] < ELASTICSEARCH_MINIMUM:
        return failed(ITEM, f"Elasticsearch {server} is older than {minimum}, the minimum", lines)
    if client_major != server_major:
        return failed(
            ITEM,
            f"the client's major ({client_major}) is not the server's ({server_major}): "
            f"pip install '.[es{server_major}]'",
            lines,
        )
    return passed(ITEM, f"{client} with Elasticsearch {server}: the same major", lines)


def _opensearch(server: str, client: str, lines: list[str]) -> Check:
    minimum = ".".join(map(str, OPENSEARCH_MINIMUM))
    if version_tuple(server)[:2] < OPENSEARCH_MINIMUM:
        lines.append(
            f"older than {minimum}: no native fusion (score-ranker-processor); fused client-side"
        )
    return passed(
        ITEM, f"{client} with OpenSearch {server} (opensearch-py's major is its own)", lines
    )
