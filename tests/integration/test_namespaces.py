"""Two deployments on one node (issue 37): each in its own namespace (``HYBRID_ES_NAMESPACE``),
with other filterable fields, another tenancy and another embedder, bootstraps without
``--force``, ingests, searches (traced) and prunes its traces, and every object of the other
namespace (templates, pipelines, roles, data streams, each index's mappings, settings and
documents) is byte for byte what it was before (``tests.namespaces.snapshot``). Before the
namespace, the second bootstrap was refused (its chunks template differed), and with
``--force`` it rewrote the first deployment's template. Names that no template of the
deployment shapes are refused before anything is written (item 2). Runs on both engines."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from hybrid_es import Document, HybridEs, Principal, Settings
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.errors import ConfigurationError
from hybrid_es.models import OPERATOR_ROLE
from hybrid_es.traces.retention import prune_traces
from hybrid_es.traces.storage import trace_storage
from tests import namespaces
from tests.conftest import HashEmbedder, owner

pytestmark = pytest.mark.integration

OPS = Principal(tenant="ops", user_id="o", roles=(OPERATOR_ROLE,))


class SaltedHashEmbedder(HashEmbedder):
    """Another model-free embedder: its own model id and vectors (the chunks template's 384
    dimensions)."""

    model_id = "test/hashed-trigrams-salted"

    def _one(self, text: str) -> list[float]:
        return super()._one(f"salt {text}")


def _settings(namespace: str, **kw: object) -> Settings:
    return Settings(namespace=namespace, traces=True, **kw)  # type: ignore[arg-type]


@pytest.fixture
def two(es: Engine) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:8]
    pair = (f"t{tag}_a", f"t{tag}_b")
    try:
        yield pair
    finally:
        for ns in pair:
            namespaces.drop(es, ns)
    for ns in pair:  # nothing of either is left behind
        assert namespaces.snapshot(es, ns) == namespaces.snapshot(es, f"t{tag}_none")


def _deployment(namespace: str, settings: Settings, embedder: HashEmbedder) -> HybridEs:
    # An engine of its own per deployment: each searcher and ingestor guards its own names.
    return HybridEs(settings, client=connect(settings), embedder=embedder, reranker=None)


def _cycle(hes: HybridEs, tenant: str, metadata: dict[str, object], filters: dict[str, object]):  # type: ignore[no-untyped-def]
    """What one deployment does: bootstrap (never forced; its roles too, and a tenant reader
    role where the layout allows one), ingest, search with a filter on its own declared field
    (traced), close (flushing the traces), prune its traces."""
    readers = () if hes.settings.tenancy == "shared" else (tenant,)
    report = hes.bootstrap(roles=True, tenants=readers)
    assert report.applied and not report.conflicts
    roles = {a.name for a in report.actions if a.kind == "role"}
    assert roles and all(r.startswith(f"hybrid-es.{hes.settings.namespace}-") for r in roles)
    doc = Document(
        id=f"doc-{uuid.uuid4().hex[:6]}",
        tenant=tenant,
        body="The Kyoto hotel April room rate is JPY 31,500 a night.",
        acl_groups=("staff",),
        metadata=metadata,
    )
    hes.ingest([doc], owner(tenant))
    reader = Principal(tenant=tenant, user_id="ana", groups=("staff",))
    answer = hes.search("Kyoto April rate", reader, filters=filters)
    assert doc.id in {h.doc_id for h in answer.hits}
    stats = hes.close()
    assert stats["traces"].written >= 1, stats
    storage = trace_storage(hes.engine, hes.settings)
    later = datetime.now(UTC) + timedelta(days=3)
    pruned = prune_traces(hes.engine, storage, OPS, older_than=timedelta(days=1), now=later)
    if storage.kind != "data-stream-lifecycle":  # there the cluster prunes by itself
        assert pruned.deleted, pruned
    assert all(name.find(hes.settings.traces_index) >= 0 for name in pruned.deleted)


def test_two_namespaces_share_a_node_without_touching_each_other(es, two):
    a, b = two
    sa = _settings(a, filterable_fields="team:keyword", tenancy="shared")
    sb = _settings(b, filterable_fields="year:number,draft:boolean", tenancy="index-per-tenant")
    assert sa.chunks_index == f"hybrid-es.{a}-chunks" and sb.traces_index == f"hybrid-es.{b}-traces"

    # A is set up and used.
    _cycle(_deployment(a, sa, HashEmbedder()), "acme", {"team": "ops"}, {"team": "ops"})
    before_a = namespaces.snapshot(es, a)
    assert f"hybrid-es.{a}-chunks".encode() in before_a

    # B, with other fields, tenancy and embedder: bootstraps without --force, and A is untouched.
    hb = _deployment(b, sb, SaltedHashEmbedder())
    _cycle(hb, "globex", {"year": 2026, "draft": False}, {"year": 2026})
    assert namespaces.snapshot(es, a) == before_a
    # The first ingest made the tenant's index: generation 1 behind the alias of its name.
    assert hb.engine.indices(f"hybrid-es.{b}-chunks-t-*") == [f"hybrid-es.{b}-chunks-t-globex+g1"]

    # A again (its bootstrap unchanged, more writes, searches, a prune): B is untouched.
    before_b = namespaces.snapshot(es, b)
    _cycle(_deployment(a, sa, HashEmbedder()), "acme", {"team": "ops"}, {"team": "ops"})
    assert namespaces.snapshot(es, b) == before_b

    # `bootstrap --force` with another declaration rewrites A's own templates, and B's not.
    before_a = namespaces.snapshot(es, a)
    forced = _deployment(a, _settings(a, filterable_fields="team:keyword,region:keyword",
                                      tenancy="shared"), HashEmbedder())  # fmt: skip
    report = forced.bootstrap(force=True)
    updated = {x.name for x in report.actions if x.status == "update"}
    assert f"hybrid-es.{a}-chunks" in updated and all(f".{a}-" in n for n in updated), updated
    assert namespaces.snapshot(es, a) != before_a
    assert namespaces.snapshot(es, b) == before_b


def test_names_no_template_of_the_namespace_shapes_are_refused_before_a_write(es, two):
    a, _ = two
    mine = _settings(a, packets_index="hybrid-es-packets", corpus_state_index="my-state")
    hes = _deployment(a, mine, HashEmbedder())
    with pytest.raises(ConfigurationError) as boot:
        hes.bootstrap()
    assert "HYBRID_ES_PACKETS_INDEX=hybrid-es-packets" in boot.value.message
    assert "HYBRID_ES_CORPUS_STATE_INDEX=my-state" in boot.value.message
    assert "nothing was written" in boot.value.message
    doc = Document(id="d", tenant="acme", body="text", acl_groups=("staff",))
    with pytest.raises(ConfigurationError) as ingest:
        hes.ingest([doc], owner("acme"))
    assert "HYBRID_ES_CORPUS_STATE_INDEX" in (ingest.value.hint or "")
    hes.close()
    assert namespaces.snapshot(es, a) == namespaces.snapshot(es, f"{a}_none")
    assert not es.index_exists("my-state")
