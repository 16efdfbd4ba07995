"""The measure that tests/integration/test_trips.py holds the code to (``tests/trips.py``) counts
what it claims: a call down is no climb, a callback into a higher module is one, and a runner of
effects is passed over."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from hybrid_es.models import Principal
from hybrid_es.retrieval import effects, observers
from hybrid_es.retrieval.door import tenant_body
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.conftest import HashEmbedder
from tests.trips import Trip, floors

WHO = Principal(tenant="t", user_id="u")


def _searcher() -> HybridSearcher:
    # No request reaches a cluster: only the calls between the package's modules are followed.
    return HybridSearcher(Elasticsearch("http://127.0.0.1:1"), HashEmbedder(), index="chunks")


def test_a_call_down_is_no_climb():
    trip = Trip()
    with trip.following():
        tenant_body("t", {"match_all": {}})
    assert trip.climbs == {}


def test_a_callback_into_a_higher_module_is_a_climb():
    searcher = _searcher()
    low, high = "hybrid_es.retrieval.observers", "hybrid_es.retrieval.searcher"
    assert floors()[low] < floors()[high]
    trip = Trip()
    with trip.following():
        observers.notify(searcher.index_for, WHO)
    assert trip.climbs == {(low, high): "HybridSearcher.index_for"}


def test_a_runner_of_effects_acts_for_its_caller():
    # effects.run calling back the function it was handed counts as its caller's call: here this
    # test's (no package module), so nothing is counted; the generator it drives is resumed,
    # not called.
    searcher = _searcher()

    def steps():  # type: ignore[no-untyped-def]
        yield effects.Compute(lambda: searcher.index_for(WHO))
        return "done"

    trip = Trip()
    with trip.following():
        assert effects.run(steps(), lambda effect: None) == "done"
    assert trip.climbs == {}
