"""Property-based tenant isolation against the real cluster (hypothesis).

Random tenants, ACLs, versions, validity windows, deletions, embargoes and queries: for every
principal and every fusion path the cluster runs, no hit, leg result, reranker input, trace
entry or packet member falls outside that principal's scope. The scope oracle below restates the
rules independently of ``hybrid_es.retrieval.policy``.

CI runs 12 examples; ``HYPOTHESIS_PROFILE=long`` runs 10,000 (``scripts/long_properties.sh``).
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_es.cluster.capabilities import native_fusion_works
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.encoders.reranker import CrossEncoderReranker
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout
from hybrid_es.traces.documents import search_trace
from tests.conftest import HashEmbedder, examples, ingest_as_owners

pytestmark = pytest.mark.integration

NOW = datetime(2026, 4, 10, 12, tzinfo=UTC)
AS_OF = date(2026, 4, 10)
WORDS = ["contract", "rate", "April", "shower", "room", "KYO-H12", "tariff", "accessible"]
DATES = [
    None,
    date(2025, 1, 1),
    date(2026, 4, 9),
    date(2026, 4, 10),
    date(2026, 4, 11),
    date(2027, 1, 1),
]

docs_st = st.lists(
    st.fixed_dictionaries(
        {
            "tenant": st.sampled_from(["A", "B"]),
            "acl_users": st.lists(st.sampled_from(["u1", "u2"]), max_size=2, unique=True),
            "acl_groups": st.lists(st.sampled_from(["g1", "g2", "*"]), max_size=2, unique=True),
            "valid_from": st.sampled_from(DATES),
            "valid_to": st.sampled_from(DATES),
            "superseded": st.booleans(),
            "deleted": st.booleans(),
            "embargo_days": st.sampled_from([None, -1, 1]),
            "retention_days": st.sampled_from([None, -1, 1]),
            "booking": st.booleans(),
            "words": st.lists(st.sampled_from(WORDS), min_size=2, max_size=6),
        }
    ),
    min_size=4,
    max_size=10,
)
principal_st = st.builds(
    lambda t, u, g: Principal(tenant=t, user_id=u, groups=tuple(g)),
    st.sampled_from(["A", "B"]),
    st.sampled_from(["u1", "u2", "u3"]),
    st.lists(st.sampled_from(["g1", "g2"]), max_size=2, unique=True),
)


def in_scope(d: dict, p: Principal) -> bool:  # type: ignore[type-arg]
    """The rules, restated: who may see what on AS_OF for a current-version question."""
    if d["tenant"] != p.tenant or d["deleted"] or d["superseded"] or d["booking"]:
        return False
    if not (p.user_id in d["acl_users"] or set(d["acl_groups"]) & {*p.groups, "*"}):
        return False
    if d["embargo_days"] == 1 or d["retention_days"] == -1:
        return False
    vf, vt = d["valid_from"], d["valid_to"]
    return (vf is None or vf <= AS_OF) and (vt is None or vt >= AS_OF)


def _terms(text: str) -> set[str]:
    import re

    return {t for t in re.split(r"[^0-9a-z]+", text.lower()) if t}


def _document(i: int, d: dict) -> Document:  # type: ignore[type-arg]
    def days(n: int | None) -> datetime | None:
        return None if n is None else NOW + timedelta(days=n)

    return Document(
        id=f"doc-{i}",
        tenant=d["tenant"],
        body=" ".join(d["words"]),
        title="record",
        acl_users=tuple(d["acl_users"]),
        acl_groups=tuple(d["acl_groups"]),
        valid_from=d["valid_from"],
        valid_to=d["valid_to"],
        superseded_by="doc-newer" if d["superseded"] else None,
        deleted=d["deleted"],
        embargo_until=days(d["embargo_days"]),
        retention_until=days(d["retention_days"]),
        booking_ids=("JPN-1",) if d["booking"] else (),
    )


CLIENT_PATHS = {
    "client-rrf": {"fusion": "client", "fusion_method": "rrf"},
    "client-linear": {"fusion": "client", "fusion_method": "linear"},
}
"""The client-side fusion paths: every engine runs them."""
NATIVE_PATHS = {
    "native-rrf": {"fusion": "native", "fusion_method": "rrf"},
    # Native linear fusion takes a fixed weight (the spread default fuses client-side).
    "native-linear": {"fusion": "native", "fusion_method": "linear", "alpha": 0.4},
}
"""The native fusion paths: they join where the engine runs them (OpenSearch's ``hybrid`` query:
both; an Elasticsearch node with the ``rrf`` retriever: native-rrf); an engine that cannot is
reported so by ``native_fusion_works`` (the Elasticsearch CI node, Basic licence)."""


def fusion_paths(es) -> dict[str, dict[str, str]]:  # type: ignore[no-untyped-def]
    """Every fusion path this engine runs: the client ones, and the native ones it has."""
    native = {
        name: kw
        for name, kw in NATIVE_PATHS.items()
        if native_fusion_works(es, kw["fusion_method"])[0]
    }
    return {**CLIENT_PATHS, **native}


def test_the_property_covers_every_fusion_path_the_engine_runs(es, caps):
    paths = fusion_paths(es)
    assert set(CLIENT_PATHS) <= set(paths)
    assert ("native-rrf" in paths) == caps.native_rrf
    if es.flavor == "opensearch":  # the hybrid query runs both methods: both are covered
        assert {"native-rrf", "native-linear"} <= set(paths), native_fusion_works(es, "linear")


@pytest.fixture(scope="module")
def iso_world(es, bootstrapped, tiny_cross_encoder):  # type: ignore[no-untyped-def]
    """One shared-tenancy index set for the whole property (the hardest case for isolation:
    every tenant's records side by side); each example brings tenants of its own, so the records
    of earlier examples are there too, as yet more records outside the caller's scope."""
    tag = uuid.uuid4().hex[:8]
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-iso-{tag}",
        packets=f"hybrid-es-packets-iso-{tag}",
        corpus_state=f"hybrid-es-corpus-state-iso-{tag}",
        mode="shared",
    )
    emb = HashEmbedder()
    state = CorpusState(es, layout.corpus_state)
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    searchers = {
        name: (
            HybridSearcher(es, emb, layout=layout, reranker=reranker, native_rrf=False, **kw)
            if name in CLIENT_PATHS
            else HybridSearcher(es, emb, layout=layout, reranker=reranker, **kw)
        )
        for name, kw in fusion_paths(es).items()
    }
    world = {
        "ingestor": Ingestor(es, emb, layout=layout, corpus_state=state),
        "searchers": searchers,
        "service": PacketService(searchers["client-rrf"], PacketStore(es, layout.packets)),
        "examples": 0,
    }
    yield world
    es.delete_index(f"{layout.chunks},{layout.packets},{layout.corpus_state}")


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    docs=docs_st,
    principals=st.lists(principal_st, min_size=1, max_size=3),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
)
def test_nothing_outside_scope_reaches_any_stage(iso_world, docs, principals, query):
    tag = uuid.uuid4().hex[:10]
    tenant_of = {"A": f"A{tag}", "B": f"B{tag}"}  # this example's own tenants
    iso_world["examples"] += 1
    records = [
        _document(i, d).model_copy(
            update={"id": f"doc-{tag}-{i}", "tenant": tenant_of[d["tenant"]]}
        )
        for i, d in enumerate(docs)
    ]
    ingest_as_owners(iso_world["ingestor"], records, now=NOW)
    for t in tenant_of.values():
        iso_world["ingestor"].corpus_state.bump(t, "test")
    callers = [p.model_copy(update={"tenant": tenant_of[p.tenant]}) for p in principals]
    allowed_by = {
        c: {f"doc-{tag}-{i}" for i, d in enumerate(docs) if in_scope(d, p)}
        for c, p in zip(callers, principals, strict=True)
    }
    for p in callers:
        for path, searcher in iso_world["searchers"].items():
            resp = searcher.search(query, p, RequestScope(as_of=AS_OF), now=NOW, top_k=10)
            assert resp.fusion_path == path
            seen = [
                *resp.legs["sparse"],
                *resp.legs["dense"],
                *resp.reranker_inputs,
                *(h.chunk_id for h in resp.hits),
            ]
            trace = search_trace(p, resp, now=NOW, query_text=query)
            seen += [c["chunk_id"] for c in trace["hybrid_es"].get("candidates", [])]
            leaked = {c.split("::")[0] for c in seen} - allowed_by[p]
            assert not leaked, f"{path}: {p} saw {leaked}"
            assert all(h.source["tenant"] == p.tenant for h in resp.hits)
            # And nothing in scope is over-filtered: every in-scope record sharing a query term
            # is found by the BM25 leg.
            expected = {
                f"doc-{tag}-{i}"
                for i, d in enumerate(docs)
                if f"doc-{tag}-{i}" in allowed_by[p]
                and _terms(" ".join(d["words"])) & _terms(query)
            }
            assert expected <= {c.split("::")[0] for c in resp.legs["sparse"]}
        stored = iso_world["service"].build(
            f"CASE-{tag}", "iso", query, p, RequestScope(as_of=AS_OF), now=NOW
        )
        members = {m.source_id for m in stored.manifest.members}
        assert members <= allowed_by[p]
