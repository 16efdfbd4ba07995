"""Indices behind aliases (``cluster.generations``) and what a rebuild copies
(``ingest.rebuild.copy_record``): the pure parts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hybrid_es.cluster.generations import (
    Generation,
    adopt_actions,
    parse,
    physical,
    switch_actions,
)
from hybrid_es.ingest.chunking import Chunk
from hybrid_es.ingest.contextual import Header
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import build_chunk_records
from hybrid_es.ingest.rebuild import copy_record
from hybrid_es.tenancy import IndexLayout
from hybrid_es.text.analysis import ANALYSIS_VERSION


def test_a_generation_is_its_alias_plus_a_number_and_reads_back():
    assert physical("hybrid-es-chunks-t-acme", 2) == "hybrid-es-chunks-t-acme+g2"
    assert parse("hybrid-es-chunks-t-acme+g2") == ("hybrid-es-chunks-t-acme", 2)
    assert parse("hybrid-es-chunks-t-acme") is None
    assert parse("hybrid-es-chunks-t-acme+gx") is None
    with pytest.raises(ValueError):
        physical("x", -1)
    live = Generation("n", "n+g1", 1, True)
    assert live.next == "n+g2"
    assert Generation("n", "n", 0, False).next == "n+g1"


@pytest.mark.parametrize("tenants", [("acme", "acme-g2"), ("acme", "acme.g2"), ("a", "A")])
def test_no_tenant_index_is_another_tenants_generation(tenants):
    # '+' is in no tenant's index part, so an alias never names another tenant's generation.
    layout = IndexLayout()
    one, other = (layout.chunks_for(t) for t in tenants)
    for n in range(4):
        assert physical(one, n) != other and parse(other) is None


def test_a_switch_is_one_atomic_request_and_back_is_the_same_the_other_way():
    there = switch_actions("n", "n+g1", "n+g2")
    back = switch_actions("n", "n+g2", "n+g1")
    assert there == [
        {"remove": {"index": "n+g1", "alias": "n"}},
        {"add": {"index": "n+g2", "alias": "n"}},
    ]
    assert back[0]["remove"]["index"] == there[1]["add"]["index"]
    assert adopt_actions("n", "n+g0") == [
        {"remove_index": {"index": "n"}},
        {"add": {"index": "n+g0", "alias": "n"}},
    ]


TEXT = "Kyoto hotel \uff2b\uff39\uff2f-H12 臺灣"
"""Full-width letters and Traditional Chinese: what folding changes."""


def test_a_copied_record_keeps_everything_but_the_matching_fields_of_an_older_analysis():
    current = {"chunk_id": "d::v1::c0000", "analysis_version": ANALYSIS_VERSION, "x": 1}
    assert copy_record(current) == current and copy_record(current) is not current
    # A record of a release before folding: no folded fields at all. The rebuild makes them
    # from what is stored, exactly as an ingest of the same text would.
    old = {
        "chunk_id": "d::v1::c0000",
        "analysis_version": "client-terms-v1",
        "title": "臺灣飯店",
        "search_payload": TEXT,
        "search_terms": "stale",
        "x": 1,
    }
    new = copy_record(old)
    doc = Document(id="d", tenant="t", title="臺灣飯店", body=TEXT)
    (fresh,) = build_chunk_records(
        doc,
        now=datetime.now(UTC),
        embedding_model="m",
        chunks=[Chunk(0, doc.body, ())],
        headers=[Header("", "none")],
    )
    assert fresh["search_payload"] == old["search_payload"]
    assert new["analysis_version"] == ANALYSIS_VERSION and new["x"] == 1
    for field in ("search_folded", "title_folded", "search_terms", "code_terms"):
        assert new[field] == fresh[field], field
    assert old["search_terms"] == "stale" and "search_folded" not in old  # pure
