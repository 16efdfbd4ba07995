"""Least privilege against the real cluster: each shipped role is enough for its commands, and the
cluster itself refuses what the role leaves out.

The roles are ``es_templates/roles`` (Elasticsearch) and ``es_templates/opensearch/roles``. On the
Elasticsearch node of ``scripts/es.sh`` they live in the file realm (the integ-test zip cannot
store native roles), with a user of each role's name and the node's password; on OpenSearch this
module installs them through the security plugin's REST API, with internal users, and removes
them afterwards. Tenants' records are ingested by the superuser; everything after that runs as
``hybrid-es-app`` (the demo's search, packet and trace steps), ``hybrid-es-ingest`` or
``hybrid-es-admin``, and every refusal is the node's own 403, translated to the package's
permission error (``AuthenticationError``, exit status 77 on the command line).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import Capabilities, probe
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.cluster.security import install_deployment_roles
from hybrid_es.cluster.templates import DEPLOYMENT_ROLES
from hybrid_es.errors import AuthenticationError, EngineError
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.models import Principal, RequestScope
from hybrid_es.packets.service import PacketService
from hybrid_es.packets.store import PacketStore
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout
from hybrid_es.traces.hooks import search_hook
from hybrid_es.traces.reader import TraceReader
from hybrid_es.traces.storage import TraceStorage, trace_storage
from hybrid_es.traces.writer import TraceWriter
from tests.conftest import HashEmbedder, ingest_as_owners, owner, travel_documents, unguarded
from tests.constants import AGENT, NOW, QUERY

pytestmark = pytest.mark.integration

ROLES = ("hybrid-es-admin", "hybrid-es-ingest", "hybrid-es-app")
OPENSEARCH_ROLES = Path(__file__).resolve().parents[2] / "es_templates" / "opensearch" / "roles"
CASE = "JPN-2026-0417"
SCOPE = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14), booking_ids=(CASE,))


@dataclass
class Users:
    """An engine per shipped role, connected as that role's user."""

    admin: Engine
    ingest: Engine
    app: Engine
    settings: dict[str, Settings]


def _opensearch_users(es: Engine, settings: Settings) -> dict[str, Settings]:
    """The shipped OpenSearch roles, installed as they are, and an internal user for each."""
    api = "/_plugins/_security/api"
    out = {}
    # What `hybrid-es bootstrap --roles` installs (the default index names' patterns cover
    # this module's own indices): these three and hybrid-es-trace-reader.
    assert install_deployment_roles(es, IndexLayout()) == [("role", r) for r in DEPLOYMENT_ROLES]
    for role in ROLES:
        password = f"Lp-{secrets.token_hex(8)}-Aa1!"
        es.request(
            "PUT",
            f"{api}/internalusers/{role}",
            body={"password": password, "opendistro_security_roles": [role]},
            what="creating a test user",
        )
        out[role] = settings.model_copy(update={"username": role, "password": SecretStr(password)})
    return out


@pytest.fixture(scope="module")
def users(es, settings) -> Iterator[Users]:  # type: ignore[no-untyped-def]
    try:
        if es.flavor == "opensearch":
            by_role = _opensearch_users(es, settings)
        else:  # the file realm of scripts/es.sh: one user per role, the node's password
            by_role = {r: settings.model_copy(update={"username": r}) for r in ROLES}
        try:
            engines = {r: connect(s) for r, s in by_role.items()}
            for role, engine in engines.items():
                assert probe(engine).user == role
        except AuthenticationError as exc:
            pytest.fail(
                f"the {es.flavor} node has no user for each shipped role ({exc}); start it with "
                "scripts/es.sh, which renders es_templates/roles into the file realm"
            )
        yield Users(
            engines["hybrid-es-admin"],
            engines["hybrid-es-ingest"],
            engines["hybrid-es-app"],
            by_role,
        )
    finally:
        if es.flavor == "opensearch":
            api = "/_plugins/_security/api"
            for role in DEPLOYMENT_ROLES:
                for what in ("internalusers", "roles"):
                    try:
                        es.request("DELETE", f"{api}/{what}/{role}", what="cleanup")
                    except EngineError as exc:
                        if exc.status != 404:
                            raise


@dataclass
class World:
    layout: IndexLayout
    storage: TraceStorage


@pytest.fixture(scope="module")
def world(es, settings, bootstrapped) -> Iterator[World]:  # type: ignore[no-untyped-def]
    """Both tenants' travel records, ingested by the superuser into this module's own indices
    (names the roles' patterns cover), and an own trace storage."""
    tag = uuid.uuid4().hex[:10]
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-lp-{tag}",
        packets=f"hybrid-es-packets-lp-{tag}",
        traces=f"hybrid-es-traces-lp-{tag}",
        corpus_state=f"hybrid-es-corpus-state-lp-{tag}",
    )
    storage = trace_storage(es, settings, base=layout.traces)
    for index in (layout.packets, layout.corpus_state):
        es.create_index(index)  # what bootstrap creates
    ingestor = Ingestor(
        es, HashEmbedder(), layout=layout, corpus_state=CorpusState(es, layout.corpus_state)
    )
    ingest_as_owners(ingestor, travel_documents(), now=NOW)
    yield World(layout, storage)
    if storage.is_stream:
        es.request("DELETE", f"/_data_stream/{storage.stream}", what="cleanup")
    es.delete_index(
        ",".join([f"{layout.chunks}*", layout.packets, layout.corpus_state, storage.pattern])
    )


def _searcher(engine: Engine, world: World, writer: TraceWriter) -> HybridSearcher:
    hook = search_hook(writer)
    return HybridSearcher(
        engine, HashEmbedder(), layout=world.layout, on_response=hook, on_error=hook.on_error
    )


def test_the_app_runs_the_demo_search_packet_and_traces_flow(users, world, es):
    writer = TraceWriter(users.app, world.storage, flush_interval=0.05)
    searcher = _searcher(users.app, world, writer)
    # Demo step 3: search as demo-A's travel agent.
    found = searcher.search(QUERY, AGENT, SCOPE, now=NOW)
    assert "D1-current-contract" in {h.doc_id for h in found.hits}
    # Steps 7-8: build the packet, revalidate it for a follow-up, render it as model context.
    service = PacketService(
        searcher,
        PacketStore(users.app, world.layout.packets),
        ttl=timedelta(minutes=10),
        on_event=search_hook(writer).packet_event,
    )
    stored = service.build(CASE, "KYO-H12", QUERY, AGENT, SCOPE, now=NOW)
    pid = stored.manifest.packet_id
    later = NOW + timedelta(minutes=1)
    assert service.validate(pid, AGENT, scope=SCOPE, now=later).kind == "reuse"
    verdict, rendered = service.render(pid, AGENT, scope=SCOPE, now=later)
    assert verdict.kind == "reuse" and rendered is not None
    # Every trace reached the cluster, written by the app's own credentials.
    stats = writer.close()
    assert (stats.dropped, stats.errors) == (0, 0), stats
    assert stats.written >= 3
    es.refresh(world.storage.pattern)
    traces = TraceReader(users.app, world.storage).tail(AGENT, n=20)
    assert {"search", "packet_build", "packet_validate"} <= {t["event"]["action"] for t in traces}


def test_the_app_may_not_write_chunks(users, world, es):
    index = world.layout.chunks_for("demo-A")
    before = unguarded(es).count(index)
    with pytest.raises(AuthenticationError) as direct:
        users.app.index(index, {"tenant": "demo-A", "search_payload": "planted"}, id="planted")
    assert direct.value.status == 403
    ingestor = Ingestor(
        users.app,
        HashEmbedder(),
        layout=world.layout,
        corpus_state=CorpusState(users.app, world.layout.corpus_state),
    )
    with pytest.raises(AuthenticationError) as via_ingest:
        ingestor.ingest(travel_documents("D1-current-contract"), owner("demo-A"), now=NOW)
    assert via_ingest.value.status == 403
    assert "lack" in via_ingest.value.message  # the product's message, not the client's
    es.refresh(index)
    assert unguarded(es).count(index) == before


def test_ingest_may_not_read_packets(users, world, es):
    packet = PacketService(
        HybridSearcher(es, HashEmbedder(), layout=world.layout),
        PacketStore(es, world.layout.packets),
    ).build(CASE, "KYO-H12", QUERY, AGENT, SCOPE, now=NOW)
    with pytest.raises(AuthenticationError) as refused:
        PacketStore(users.ingest, world.layout.packets).find(AGENT, packet.manifest.packet_id)
    assert refused.value.status == 403
    assert "lack" in refused.value.message


def test_ingest_creates_a_tenants_index_and_writes_its_chunks(users, world, es):
    # A layout of its own: the first ingest of a tenant creates its chunks index.
    tag = uuid.uuid4().hex[:10]
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-lpi-{tag}",
        packets=world.layout.packets,
        traces=world.layout.traces,
        corpus_state=f"hybrid-es-corpus-state-lpi-{tag}",
    )
    es.create_index(layout.corpus_state)  # bootstrap's, not ingest's
    try:
        ingestor = Ingestor(
            users.ingest,
            HashEmbedder(),
            layout=layout,
            corpus_state=CorpusState(users.ingest, layout.corpus_state),
        )
        report = ingestor.ingest(travel_documents("D1-current-contract"), owner("demo-A"), now=NOW)
        assert report.chunks >= 1 and not report.failed
        assert es.index_exists(layout.chunks_for("demo-A"))
    finally:
        es.delete_index(f"{layout.chunks}*,{layout.corpus_state}")


def _allowed(caps: Capabilities) -> dict[str, bool | None]:
    return {a.command: a.allowed for a in caps.privileges}


def test_each_users_report_says_what_it_may_do(users, es):
    # Elasticsearch answers for the credentials (_has_privileges); OpenSearch by role name, and
    # "unknown" for anything else.
    refused = False if es.flavor == "elasticsearch" else None
    app = _allowed(probe(users.app))
    assert {c: app[c] for c in ("search", "packets", "traces")} == dict.fromkeys(
        ("search", "packets", "traces"), True
    )
    assert app["ingest"] is refused and app["bootstrap"] is refused
    ingest = _allowed(probe(users.ingest))
    assert ingest["ingest"] is True
    assert ingest["packets"] is refused and ingest["bootstrap"] is refused
    admin = _allowed(probe(users.admin))
    assert admin["bootstrap"] is True and admin["traces prune"] is True
    assert admin["search"] is refused and admin["ingest"] is refused


def test_the_admin_bootstraps_and_the_app_may_not(users, settings, es):
    report = bootstrap(users.admin, probe(users.admin, layout=settings.layout()), settings)
    assert report.applied and not report.conflicts
    with pytest.raises(AuthenticationError) as refused:
        bootstrap(users.app, probe(users.app, layout=settings.layout()), settings)
    assert refused.value.status == 403
    if es.flavor == "elasticsearch":  # the preflight's refusal, before anything is sent
        assert "may not bootstrap" in refused.value.message
        assert "nothing was written" in refused.value.message


def test_installing_tenant_roles_needs_more_than_the_admin_role(users, settings, es):
    caps = probe(users.admin, layout=settings.layout())
    if es.flavor == "elasticsearch" and not caps.native_security_store:
        # The integ-test zip stores no roles: they are skipped with the reason, the rest installed.
        report = bootstrap(users.admin, caps, settings, tenants=("demo-A",))
        (role,) = [a for a in report.actions if a.kind == "role"]
        assert role.status == "skipped" and "cannot store roles" in role.diff
        return
    with pytest.raises(AuthenticationError) as refused:
        bootstrap(users.admin, caps, settings, tenants=("demo-A",))
    assert "may not install the tenant reader roles" in refused.value.message
    assert "nothing was written" in refused.value.message


def test_prune_fails_when_its_credential_cannot_list_the_trace_indices(users, world, es):
    """Issue 23: under a credential that cannot see the trace indices, Elasticsearch resolves
    the pattern to nothing, and prune said "deleted 0, kept 0" and exited 0 while today's index
    existed. It now says it could not list them (before reading or deleting anything); the
    admin role lists and prunes."""
    from hybrid_es.traces.retention import prune_traces

    operator = Principal(tenant="ops", user_id="ops", roles=("hybrid-es-operator",))
    if not world.storage.is_stream:
        es.create_index(world.storage.layout.traces_on(NOW.date()))
    for who in (users.ingest, users.app):
        for dry_run in (True, False):
            with pytest.raises(AuthenticationError) as refused:
                prune_traces(
                    who,
                    world.storage,
                    operator,
                    older_than=timedelta(days=1),
                    now=NOW,
                    dry_run=dry_run,
                )
            assert refused.value.status == 403
    if es.flavor == "opensearch" and world.storage.is_stream:
        return  # there the admin also needs `read` on the stream to prune it (README)
    report = prune_traces(
        users.admin, world.storage, operator, older_than=timedelta(days=30), now=NOW, dry_run=True
    )
    assert report.kept or report.notes  # today's index (or the stream) is seen, and kept


def test_bootstrap_roles_installs_the_deployment_roles_or_says_why_not(es, settings):
    """`hybrid-es bootstrap --roles`: on OpenSearch the deployment roles (the three above and
    hybrid-es-trace-reader) land through the security plugin (and the users above work with
    them); on the Elasticsearch integ-test node, which stores no native roles, each is reported
    skipped with the reason (the file realm holds them there: scripts/es.sh)."""
    caps = probe(es, layout=settings.layout())
    report = bootstrap(es, caps, settings, roles=True)
    roles = {a.name: a for a in report.actions if a.kind == "role"}
    assert set(roles) == set(DEPLOYMENT_ROLES) == {*ROLES, "hybrid-es-trace-reader"}
    if es.flavor == "opensearch":
        assert {a.status for a in roles.values()} == {"update"}
        for role in DEPLOYMENT_ROLES:
            got = es.request("GET", f"/_plugins/_security/api/roles/{role}", what="reading")
            assert role in got
    elif not caps.native_security_store:
        assert {a.status for a in roles.values()} == {"skipped"}
        assert all("cannot store roles" in a.diff for a in roles.values())


def _store_writes(users: Users, world: World, es: Engine) -> dict[str, Any]:
    """One write through each framework store, built on the app's credential (no write
    privilege on chunks): the write each store's framework would send."""
    from haystack import Document as HaystackDocument
    from langchain_core.documents import Document as LcDocument
    from llama_index.core.schema import TextNode

    from hybrid_es.adapters.haystack_store import HybridEsDocumentStore
    from hybrid_es.adapters.langchain_store import HybridEsVectorStore as LangChainStore
    from hybrid_es.adapters.llamaindex_store import HybridEsVectorStore as LlamaIndexStore
    from tests.integration.test_filters import map_filter_fields

    index = world.layout.chunks_for("demo-A")
    map_filter_fields(es, index, parse_filterable_fields("ref_doc_id:keyword"))
    searcher = HybridSearcher(
        users.app, HashEmbedder(), layout=world.layout, filterable_fields="ref_doc_id:keyword"
    )
    ingestor = Ingestor(
        users.app,
        HashEmbedder(),
        layout=world.layout,
        corpus_state=CorpusState(users.app, world.layout.corpus_state),
    )
    writer = owner("demo-A")
    text = "Planted: the KYO-H12 April rate is JPY 1."
    return {
        "langchain": lambda: LangChainStore(searcher, ingestor, writer).add_documents(
            [LcDocument(text, metadata={"path": "planted.md"})], ids=["planted-lc"]
        ),
        "haystack": lambda: HybridEsDocumentStore(
            writer, searcher=searcher, ingestor=ingestor
        ).write_documents([HaystackDocument(id="planted-hs", content=text)]),
        "llamaindex": lambda: LlamaIndexStore(searcher, ingestor, writer).add(
            [TextNode(id_="planted-li", text=text)]
        ),
    }


def test_no_framework_store_writes_with_a_credential_that_may_not(users, world, es):
    """Each store writes through the Ingestor, so the cluster refuses a credential without write
    rights exactly as `hybrid-es ingest` is refused: the node's 403, as AuthenticationError,
    and nothing written."""
    index = world.layout.chunks_for("demo-A")
    before = unguarded(es).count(index)
    for name, write in _store_writes(users, world, es).items():
        with pytest.raises(AuthenticationError) as refused:
            write()
        assert refused.value.status == 403, name
        assert "lack" in refused.value.message, name
    es.refresh(index)
    assert unguarded(es).count(index) == before
