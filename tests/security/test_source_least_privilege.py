"""An index sync under least privilege, as real security users (issue 38): the source is read by
a user whose role holds only ``read`` and ``view_index_metadata`` on the source
(``es_templates/roles/hybrid-es-source-reader.json``; its OpenSearch twin), the chunks are
written by ``hybrid-es-ingest``; each credential goes only to its own side; the capability check
and ``verify`` say so; a record that names another tenant is refused and counted.

On Elasticsearch the users live in the file realm of ``scripts/es.sh`` (``hybrid-es-ingest``,
and ``hybrid-es-source-reader`` on ``legacy-*``); on OpenSearch this module installs the two
roles and an internal user of each, and removes them afterwards.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from benchmarks.sync import LEGACY_FIELD_MAP, delete_records, later, load_legacy
from hybrid_es.cluster.access import source_access
from hybrid_es.cluster.engine import ElasticsearchEngine, Engine, OpenSearchEngine, connect
from hybrid_es.cluster.source_connection import SourceSettings, connect_source
from hybrid_es.cluster.templates import render_deployment_role
from hybrid_es.errors import AuthenticationError, EngineError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.sync import IndexSource, SyncHow, sync_index
from hybrid_es.tenancy import IndexLayout
from hybrid_es.verify.source import check_source
from tests.conftest import HashEmbedder, owner, travel_documents

pytestmark = pytest.mark.integration

ROLES = Path(__file__).resolve().parents[2] / "es_templates"
SOURCE_ROLE = "hybrid-es-source-reader"
TENANT = "demo-A"
API = "/_plugins/_security/api"


@dataclass
class Sides:
    """Each side's settings: the target (the ingest role) and the source (the reader role)."""

    target: Any
    source: SourceSettings
    users: dict[str, str]
    """role -> the user name that holds it."""


def _source_role(flavor: str, pattern: str) -> dict[str, Any]:
    path = (
        ROLES / ("opensearch/roles" if flavor == "opensearch" else "roles") / f"{SOURCE_ROLE}.json"
    )
    role: dict[str, Any] = json.loads(
        path.read_text(encoding="utf-8").replace("{{source_index}}", pattern)
    )
    return role


@pytest.fixture(scope="module")
def sides(es, settings) -> Iterator[Sides]:  # type: ignore[no-untyped-def]
    made: list[str] = []
    if es.flavor == "opensearch":
        passwords = {}
        for role in ("hybrid-es-ingest", SOURCE_ROLE):
            body = (
                _source_role("opensearch", "legacy-*")
                if role == SOURCE_ROLE
                else render_deployment_role(role, IndexLayout(), flavor="opensearch")
            )
            es.request("PUT", f"{API}/roles/{role}", body=body, what="installing a test role")
            user = f"{role}-{uuid.uuid4().hex[:6]}"
            passwords[user] = f"Src-{secrets.token_hex(8)}-Aa1!"
            es.request(
                "PUT",
                f"{API}/internalusers/{user}",
                body={"password": passwords[user], "opendistro_security_roles": [role]},
                what="creating a test user",
            )
            made.append(user)
        ingest_user, source_user = made
        target = settings.model_copy(
            update={"username": ingest_user, "password": SecretStr(passwords[ingest_user])}
        )
        source_password = passwords[source_user]
    else:  # the file realm of scripts/es.sh: a user per role, the node's password
        ingest_user, source_user = "hybrid-es-ingest", SOURCE_ROLE
        target = settings.model_copy(update={"username": ingest_user})
        source_password = settings.password.get_secret_value() if settings.password else ""
    source = SourceSettings(
        url=settings.url,
        username=source_user,
        password=SecretStr(source_password),
        ca_certs=settings.ca_certs,
        verify_certs=settings.verify_certs,
    )
    try:
        for s, user in ((target, ingest_user), (source.connection(), source_user)):
            try:
                connect(s)
            except AuthenticationError as exc:
                pytest.fail(
                    f"the {es.flavor} node has no user {user} ({exc}); start it with "
                    "scripts/es.sh, which renders es_templates/roles into the file realm"
                )
        yield Sides(target, source, {"hybrid-es-ingest": ingest_user, SOURCE_ROLE: source_user})
    finally:
        if es.flavor == "opensearch":
            for user in made:
                es.request("DELETE", f"{API}/internalusers/{user}", what="cleanup")
            for role in ("hybrid-es-ingest", SOURCE_ROLE):
                try:
                    es.request("DELETE", f"{API}/roles/{role}", what="cleanup")
                except EngineError as exc:
                    if exc.status != 404:
                        raise


@dataclass
class World:
    source: str
    layout: IndexLayout
    docs: list[Document]


@pytest.fixture
def world(es, bootstrapped) -> Iterator[World]:  # type: ignore[no-untyped-def]
    """A legacy index (made by the superuser) of demo-A's travel records and one of another
    tenant's, and a layout under the ingest role's patterns."""
    tag = uuid.uuid4().hex[:10]
    source = f"legacy-{tag}"
    docs = travel_documents("D1-current-contract", "D2-accessibility-note", "D3-booking-itinerary")
    intruder = ("rec-x", {"ref": "x", "abstract": "Globex only.", "org": "globex",
                          "readers": "staff", "updated": later(0).isoformat()})  # fmt: skip
    load_legacy(es, source, docs, tenant=TENANT, extra=[intruder])
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-src-{tag}", corpus_state=f"hybrid-es-corpus-state-src-{tag}"
    )
    es.create_index(layout.corpus_state)
    yield World(source, layout, docs)
    es.delete_index(f"{source},{layout.chunks}*,{layout.corpus_state}")


def _sync(target: Engine, reader: Engine, world: World, how: SyncHow | None = None) -> Any:
    return sync_index(
        reader,
        target,
        HashEmbedder(),
        IndexSource(world.source, field_map=LEGACY_FIELD_MAP),
        owner(TENANT),
        layout=world.layout,
        how=how or SyncHow(),
    )


def test_the_sync_reads_with_only_read_and_view_index_metadata_on_the_source(sides, world, es):
    target = connect(sides.target)
    reader = connect_source(sides.source, target, world.layout, world.source)
    first = _sync(target, reader, world)
    assert first.counts["written"] == len(world.docs)
    assert first.counts["refused"] == {"other-tenant": 1}  # refused and counted
    assert first.examples[0]["doc_id"] == "x" and first.finished
    delete_records(es, world.source, [world.docs[0].id])
    full = _sync(target, reader, world, SyncHow(full=True))
    assert full.deleted == 1 and full.counts["written"] == 0


def test_the_source_credential_may_do_nothing_else(sides, world):
    target = connect(sides.target)
    raw = connect(sides.source.connection())  # unguarded: the cluster must refuse on its own
    with pytest.raises(AuthenticationError) as write:
        raw.index(world.source, {"ref": "planted"}, id="planted")
    assert write.value.status == 403
    _sync(target, connect_source(sides.source, target, world.layout, world.source), world)
    for index in (world.layout.chunks_for(TENANT), world.layout.corpus_state):
        with pytest.raises(AuthenticationError) as read:
            raw.search(index, {"query": {"match_all": {}}})
        assert read.value.status == 403, index


def test_the_capability_check_and_verify_see_the_source_read(sides, world, monkeypatch, settings):
    target = connect(sides.target)
    reader = connect_source(sides.source, target, world.layout, world.source)
    access = source_access(reader, world.source)
    assert access.allowed and not access.degraded and not access.missing, access
    for name, value in {
        "INDEX": world.source,
        "URL": settings.url,
        "USERNAME": sides.source.username,
        "PASSWORD": sides.source.password.get_secret_value() if sides.source.password else "",
    }.items():
        monkeypatch.setenv(f"HYBRID_ES_SOURCE_{name}", str(value))
    if settings.ca_certs:
        monkeypatch.setenv("HYBRID_ES_SOURCE_CA_CERTS", str(settings.ca_certs))
    passed = check_source(target, settings)
    assert passed.status == "pass", passed
    # The deployment's own ingest user may not read the source: verify says what it lacks.
    monkeypatch.setenv("HYBRID_ES_SOURCE_USERNAME", sides.users["hybrid-es-ingest"])
    monkeypatch.setenv(
        "HYBRID_ES_SOURCE_PASSWORD",
        sides.target.password.get_secret_value() if sides.target.password else "",
    )
    refused = check_source(target, settings)
    assert refused.status == "fail" and any("lacks" in d for d in refused.details), refused


def _recording(settings: Any, flavor: str, log: list[str | None]) -> Engine:
    """An engine that records the Authorization header of every request it sends, at the
    transport."""
    if flavor == "opensearch":
        from opensearchpy import Urllib3HttpConnection

        from hybrid_es.cluster.engine import _opensearch_client

        class Rec(Urllib3HttpConnection):  # type: ignore[misc]
            def perform_request(self, *a, **kw):  # type: ignore[no-untyped-def]
                given = kw.get("headers") or {}
                log.append(given.get("authorization") or self.headers.get("authorization"))
                return super().perform_request(*a, **kw)

        return OpenSearchEngine(_opensearch_client(settings, connection_class=Rec))
    from elastic_transport import Urllib3HttpNode

    from hybrid_es.cluster.client import make_client

    class Node(Urllib3HttpNode):
        def perform_request(self, method, target, body=None, headers=None, **kw):  # type: ignore[no-untyped-def]
            log.append((headers or {}).get("authorization"))
            return super().perform_request(method, target, body=body, headers=headers, **kw)

    return ElasticsearchEngine(make_client(settings, node_class=Node))


def _basic(user: str, password: str) -> str:
    import base64

    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_a_source_credential_never_reaches_the_target_nor_the_reverse(sides, world, es):
    target_log: list[str | None] = []
    source_log: list[str | None] = []
    target = _recording(sides.target, es.flavor, target_log)
    reader = _recording(sides.source.connection(), es.flavor, source_log)
    reader.guard(world.layout.chunks)
    run = _sync(target, reader, world)
    assert run.counts["written"] == len(world.docs)
    pw = sides.target.password.get_secret_value() if sides.target.password else ""
    target_auth = _basic(sides.users["hybrid-es-ingest"], pw)
    spw = sides.source.password.get_secret_value() if sides.source.password else ""
    source_auth = _basic(sides.users[SOURCE_ROLE], spw)
    assert target_log and set(target_log) == {target_auth}
    assert source_log and set(source_log) == {source_auth}
