"""A newcomer follows one search, one ingest and one packet validation through the code, as they
run against the real engine, through the front door: none of them goes back up the layers more
than twice (issue 39; how a climb is counted: ``tests/trips.py``).

A climb is a function of a lower module calling one of a higher module (a callback, a hook, an
object handed down that calls back into its maker): following the code, the reader then climbs
back to a file already left. The search counts with traces on, as the command line runs it: the
trace hook is one climb by design (a hook is how the traces, above retrieval, see a search).
Each operation is followed as a long-lived process runs it, its models loaded (a model's first
load is a one-time detour through ``encoders.base``'s lazy loader).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from hybrid_es.deployment import HybridEs
from hybrid_es.ingest.documents import Document
from hybrid_es.models import WRITER_ROLE, Principal, RequestScope, SearchRequest
from tests.trips import Trip, follow

pytestmark = pytest.mark.integration

MOST_CLIMBS = 2
WRITER = Principal(tenant="trips", user_id="loader", roles=(WRITER_ROLE,))
READER = Principal(tenant="trips", user_id="ana", groups=("staff",))
DOCS = [
    Document(
        id=f"rate-{i}",
        tenant="trips",
        title=f"Kyoto rate sheet {i}",
        body=f"The Kyoto hotel room rate for season {i} is JPY {31_000 + i * 500} a night.",
        acl_groups=("staff",),
    )
    for i in range(6)
]


@pytest.fixture
def hes(es, bootstrapped, settings, embedder) -> Iterator[HybridEs]:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    names = {
        "chunks_index": f"{settings.chunks_index}-test-trips-{tag}",
        "corpus_state_index": f"{settings.corpus_state_index}-test-trips-{tag}",
        "packets_index": f"{settings.packets_index}-test-trips-{tag}",
        "traces_index": f"{settings.traces_index}-test-trips-{tag}",
    }
    deployment = settings.model_copy(update={**names, "traces": True, "tenancy": "shared"})
    for name in list(names.values())[:3]:
        es.create_index(name)
    with HybridEs(deployment, client=es, embedder=embedder) as front:
        yield front
    es.delete_index(",".join(f"{n}*" for n in names.values()))


def _checked(what: str, trip: Trip) -> None:
    assert len(trip.climbs) <= MOST_CLIMBS, f"{what} climbs back up:\n{trip.describe()}"


def test_one_ingest_one_search_and_one_validation_climb_at_most_twice(hes):
    hes.warm_up()
    hes.ingest(DOCS[:1], WRITER)  # the passage model loads: the first ingest of a process
    _checked("an ingest", follow(lambda: hes.ingest(DOCS[1:], WRITER)))
    ask = SearchRequest("Kyoto hotel room rate", READER, rerank=False)
    hes.search(ask)  # the first search of a tenant checks its index once
    search = follow(lambda: hes.search(ask))
    _checked("a search", search)
    stored = hes.packets.build("CASE-1", "Kyoto", "Kyoto hotel room rate", READER, RequestScope())
    pid = stored.manifest.packet_id
    _checked(
        "a packet validation",
        follow(lambda: hes.packets.validate(pid, READER, scope=RequestScope())),
    )
