"""Every chunks index is checked before it is served or written (issue 36, item 4): one that maps
the policy fields otherwise than the chunks template is refused at ingest, search, listing and
bootstrap, and a chunks index name that no installed template matches is refused before
anything is written. Found: ``HYBRID_ES_CHUNKS_INDEX=my-chunks`` ingested into dynamic
mappings (``tenant`` and ``acl_groups`` as text), and a search as group ``managers`` had the
engine score a record of ``finance-managers``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.policy_fields import (
    CHUNKS_SETTING,
    POLICY_FIELDS,
    check_mapped,
    field_types_by_index,
    field_types_from_caps,
)
from hybrid_es.errors import ConfigurationError
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout
from tests.conftest import HashEmbedder, owner, travel_documents, unguarded
from tests.constants import NOW

pytestmark = pytest.mark.integration

MANAGER = Principal(tenant="demo-A", user_id="m-1", groups=("managers",))
TEXT_MAPPED = {
    "mappings": {"properties": {"tenant": {"type": "text"}, "acl_groups": {"type": "text"}}}
}
"""What a hand-made (or dynamically mapped) chunks index gives the two fields."""


@pytest.fixture
def tag() -> str:
    return uuid.uuid4().hex[:10]


@pytest.fixture
def hand_made(es, bootstrapped, tag) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A chunks index created by hand, under a name no template matches, with text-mapped
    ``tenant`` and ``acl_groups`` and one record of group ``finance-managers``. (Not under a
    name the chunks template matches: while it existed, every bootstrap on the cluster, other
    test runs' included, would rightly refuse it; the bootstrap test below holds one for a
    moment only.)"""
    index = f"hes-hand-chunks-{tag}"
    es.create_index(index, TEXT_MAPPED)
    try:
        record = {"tenant": "demo-A", "acl_groups": ["finance-managers"], "search_payload": "rate"}
        unguarded(es).index(index, record, id="planted", refresh="true")
        yield index
    finally:
        es.delete_index(index)


def _assert_names_the_fields(err: ConfigurationError, index: str) -> None:
    assert f"chunks index {index} " in err.message, err.message
    assert "acl_groups is text (needs keyword)" in err.message
    assert "tenant is text (needs keyword)" in err.message
    assert "hybrid-es bootstrap" in (err.hint or "") and "reindex" in (err.hint or "")


def test_a_hand_made_chunks_index_is_refused_at_ingest_before_a_write(es, fresh_indices, hand_made):
    state = CorpusState(es, fresh_indices["corpus_state"])
    ingestor = Ingestor(es, HashEmbedder(), index=hand_made, corpus_state=state)
    with pytest.raises(ConfigurationError) as err:
        ingestor.ingest(travel_documents("D1-current-contract"), owner("demo-A"), now=NOW)
    _assert_names_the_fields(err.value, hand_made)
    assert "nothing was written" in err.value.message
    assert unguarded(es).count(hand_made) == 1  # the planted record alone


def test_a_hand_made_chunks_index_is_refused_at_search_and_listing(es, fresh_indices, hand_made):
    CorpusState(es, fresh_indices["corpus_state"]).bump("demo-A", "planted by hand")
    searcher = HybridSearcher(
        es, HashEmbedder(), index=hand_made, corpus_state_index=fresh_indices["corpus_state"]
    )
    with pytest.raises(ConfigurationError) as err:
        searcher.search("rate", MANAGER, now=NOW)
    _assert_names_the_fields(err.value, hand_made)
    with pytest.raises(ConfigurationError) as listed:
        HybridSearcher(
            es, HashEmbedder(), index=hand_made, corpus_state_index=fresh_indices["corpus_state"]
        ).records(MANAGER, now=NOW)
    _assert_names_the_fields(listed.value, hand_made)


def test_a_reader_who_may_not_read_the_mapping_is_checked_on_the_field_caps(es, hand_made):
    # What IndexChecks reads for a caller without view_index_metadata (a document-level
    # security reader): the same types as the mapping, fields it lacks as unmapped.
    types = field_types_from_caps(es.field_caps(hand_made, POLICY_FIELDS))
    assert types == field_types_by_index(es.get_mapping(hand_made))
    assert (types[hand_made]["tenant"], types[hand_made]["acl_groups"]) == ("text", "text")
    assert types[hand_made]["deleted"] is None
    with pytest.raises(ConfigurationError) as err:
        check_mapped(hand_made, types)
    _assert_names_the_fields(err.value, hand_made)


def test_a_search_checks_an_index_once_and_then_reads_no_mapping(es, wire, embedder, fresh_indices):
    state = CorpusState(es, fresh_indices["corpus_state"])
    Ingestor(es, embedder, index=fresh_indices["chunks"], corpus_state=state).ingest(
        travel_documents("D1-current-contract"), owner("demo-A"), now=NOW
    )
    engine, log = wire
    searcher = HybridSearcher(
        engine, embedder, index=fresh_indices["chunks"], corpus_state_index=state.index
    )
    searcher.search("rate", MANAGER, now=NOW)
    assert fresh_indices["chunks"] in searcher.checks.policy_checked
    assert any("/_mapping" in path for _, path, _ in log)
    log.clear()
    searcher.search("rate", MANAGER, now=NOW)
    searcher.records(MANAGER, now=NOW)
    assert [p for _, p, _ in log if "/_mapping" in p or "/_field_caps" in p] == []


@pytest.mark.parametrize("mode", ["index-per-tenant", "shared"])
def test_an_unmatched_chunks_name_is_refused_at_ingest_and_nothing_is_created(
    es, bootstrapped, settings, tag, mode
):
    layout = IndexLayout(
        chunks=f"my-chunks-{tag}",
        packets=f"{settings.packets_index}-test-{tag}",
        corpus_state=f"{settings.corpus_state_index}-test-{tag}",
        mode=mode,  # type: ignore[arg-type]
    )
    index = layout.chunks_for("demo-A")
    assert index == (f"my-chunks-{tag}" if mode == "shared" else f"my-chunks-{tag}-t-demo-_a")
    ingestor = Ingestor(
        es, HashEmbedder(), layout=layout, corpus_state=CorpusState(es, layout.corpus_state)
    )
    try:
        with pytest.raises(ConfigurationError) as err:
            ingestor.ingest(travel_documents("D1-current-contract"), owner("demo-A"), now=NOW)
        assert f"chunks index {index} was not created" in err.value.message
        assert "no installed index template matches" in err.value.message
        assert "nothing was written" in err.value.message
        assert CHUNKS_SETTING in (err.value.hint or "")
        assert not es.index_exists(index)
        assert not es.index_exists(layout.corpus_state)
    finally:
        es.delete_index(f"{layout.chunks_pattern()},{layout.corpus_state}")


def test_a_name_whose_template_maps_the_policy_fields_as_text_is_refused_at_ingest(
    es, fresh_indices, tag
):
    # Some template matches the name, but not one that maps the policy fields as the chunks
    # template does: what the engine's simulation of the new index shows is what is checked.
    template, index = f"hes-test-{tag}", f"hes-other-{tag}"
    es.put_index_template(template, {"index_patterns": [f"{index}*"], "template": TEXT_MAPPED})
    state = CorpusState(es, fresh_indices["corpus_state"])
    try:
        with pytest.raises(ConfigurationError) as err:
            Ingestor(es, HashEmbedder(), index=index, corpus_state=state).ingest(
                travel_documents("D1-current-contract"), owner("demo-A"), now=NOW
            )
        assert f"chunks index {index} was not created" in err.value.message
        assert "acl_groups is text (needs keyword)" in err.value.message
        assert "deleted is not mapped (needs boolean)" in err.value.message
        assert not es.index_exists(index)
    finally:
        es.request("DELETE", f"/_index_template/{template}", what="cleanup")
        es.delete_index(index)


def test_bootstrap_refuses_an_existing_chunks_index_with_text_policy_fields(
    es, caps, settings, bootstrapped, tag
):
    index = f"{settings.chunks_index}-hand-{tag}"
    es.create_index(index, TEXT_MAPPED)
    try:
        before = es.get_mapping(index)
        with pytest.raises(ConfigurationError) as err:
            bootstrap(es, caps, settings)
        _assert_names_the_fields(err.value, index)
        assert "nothing was written" in err.value.message
        assert es.get_mapping(index) == before
    finally:
        es.delete_index(index)


def test_bootstrap_refuses_a_chunks_setting_the_template_does_not_match(
    es, caps, settings, bootstrapped, tag
):
    mine = settings.model_copy(update={"chunks_index": f"my-chunks-{tag}", "tenancy": "shared"})
    try:
        with pytest.raises(ConfigurationError) as err:
            bootstrap(es, caps, mine)
        assert f"{CHUNKS_SETTING}=my-chunks-{tag}" in err.value.message
        assert CHUNKS_SETTING in (err.value.hint or "")
        assert not es.index_exists(f"my-chunks-{tag}")
    finally:
        es.delete_index(f"my-chunks-{tag}")
