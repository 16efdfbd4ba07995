"""Request-scope ids (booking, property, source type, jurisdiction) compare exactly, and the
engine's policy clause and the Python re-check agree on every record (issue 36, item 7).

Before the fix the scope fields were keywords with a lowercasing normalizer and the re-check
lowercased both sides, so booking ``jpn-2026-0417`` reached the itinerary of booking
``JPN-2026-0417``. Here the policy filter alone is sent to the real engine over the travel
fixture, and the records it returns are exactly those ``authorize`` admits.
"""

from __future__ import annotations

from datetime import date

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.policy import authorize, policy_filter
from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents, unguarded
from tests.constants import AGENT, NOW

pytestmark = pytest.mark.integration

STAY = {"stay_from": date(2026, 4, 10), "stay_to": date(2026, 4, 14)}


@pytest.mark.parametrize(
    ("scope", "itinerary"),
    [
        (RequestScope(booking_ids=("JPN-2026-0417",), **STAY), True),
        (RequestScope(booking_ids=("jpn-2026-0417",), **STAY), False),
        (RequestScope(booking_ids=("JPN-2026-0417",), property_ids=("PROP-KYO-12",), **STAY), True),
        (
            RequestScope(booking_ids=("JPN-2026-0417",), property_ids=("prop-kyo-12",), **STAY),
            False,
        ),
        (RequestScope(jurisdictions=("JP",), **STAY), False),
        (RequestScope(jurisdictions=("jp",), **STAY), False),
    ],
    ids=["booking", "booking-lower", "property", "property-lower", "jurisdiction", "jp-lower"],
)
def test_the_engine_and_the_recheck_admit_the_same_records(es, fresh_indices, scope, itinerary):
    ing = Ingestor(
        es,
        HashEmbedder(),
        index=fresh_indices["chunks"],
        corpus_state=CorpusState(es, fresh_indices["corpus_state"]),
    )
    ingest_as_owners(ing, travel_documents(), now=NOW)
    raw = unguarded(es)
    index = fresh_indices["chunks"]
    stored = {h["_id"]: h["_source"] for h in raw.scan(index, {"query": {"match_all": {}}})}
    body = {"query": policy_filter(AGENT, scope, NOW), "size": 1000, "_source": False}
    engine = {h["_id"] for h in raw.search(index, body)["hits"]["hits"]}
    recheck = {k for k, src in stored.items() if authorize(AGENT, scope, NOW, src).allowed}
    assert engine == recheck
    docs = {stored[k]["doc_id"] for k in engine}
    assert ("D3-booking-itinerary" in docs) is itinerary
    # A record of another jurisdiction (in any case) is never in scope.
    if scope.jurisdictions:
        assert {stored[k].get("jurisdiction") for k in engine} <= {None, *scope.jurisdictions}
        assert ("D1-current-contract" in docs) is (scope.jurisdictions == ("JP",))
