"""The trace readers' role against the real cluster (issue 36): a user with
``hybrid-es-trace-reader`` (es_templates/roles, the Kibana login of the compose stack's trace
readers) reads the traces and their mappings, and nothing else; the node itself refuses the rest.

On the Elasticsearch node of ``scripts/es.sh`` the role lives in the file realm with a user of its
name and the node's password (the integ-test zip cannot store native roles, so ``bootstrap
--roles`` reports it skipped there); on OpenSearch this module installs the twin
(es_templates/opensearch/roles) as ``bootstrap --roles`` does, with an internal user, and removes
both afterwards. Its Kibana privileges (Discover and Dashboards, read-only, in the default space)
need a Kibana, which does not run here: tests/unit/test_trace_reader_role.py checks them as data.
The records and the trace are written by the superuser into this module's own indices, which the
role's default patterns cover (traces) or must not cover (the rest).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from pydantic import SecretStr

from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.cluster.templates import render_deployment_role
from hybrid_es.cluster.trace_storage import delete_data_stream
from hybrid_es.errors import AuthenticationError, EngineError
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout
from hybrid_es.traces.hooks import search_hook
from hybrid_es.traces.storage import TraceStorage, trace_storage
from hybrid_es.traces.writer import TraceWriter
from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents, unguarded
from tests.constants import NOW, QUERY
from tests.security.conftest import MANAGER, SCOPE

pytestmark = pytest.mark.integration

NAME = "hybrid-es-trace-reader"
OS_API = "/_plugins/_security/api"


@dataclass
class World:
    layout: IndexLayout
    storage: TraceStorage


@pytest.fixture(scope="module")
def world(es, settings, bootstrapped) -> Iterator[World]:  # type: ignore[no-untyped-def]
    """demo-A's and demo-B's records and one search's trace, in this module's own indices."""
    tag = uuid.uuid4().hex[:10]
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-tr-{tag}",
        packets=f"hybrid-es-packets-tr-{tag}",
        traces=f"hybrid-es-traces-tr-{tag}",
        corpus_state=f"hybrid-es-corpus-state-tr-{tag}",
    )
    storage = trace_storage(es, settings, base=layout.traces)
    es.create_index(layout.packets)
    state = CorpusState(es, layout.corpus_state)
    try:
        ingest_as_owners(
            Ingestor(es, HashEmbedder(), layout=layout, corpus_state=state),
            travel_documents(),
            now=NOW,
        )
        writer = TraceWriter(es, storage, flush_interval=0.05)
        hook = search_hook(writer, hash_key=b"trace-reader test")
        searcher = HybridSearcher(
            es, HashEmbedder(), layout=layout, native_rrf=False, on_response=hook
        )
        searcher.search(QUERY, MANAGER, SCOPE, now=NOW)
        assert writer.close().written == 1
        es.refresh(storage.pattern)
        yield World(layout, storage)
    finally:
        if storage.is_stream:
            delete_data_stream(es, storage.stream)
        es.delete_index(
            ",".join(
                [storage.pattern, layout.chunks_pattern(), layout.packets, layout.corpus_state]
            )
        )


@pytest.fixture(scope="module")
def reader(es, settings) -> Iterator[Engine]:  # type: ignore[no-untyped-def]
    """The trace reader's connection, unguarded: its reads of the other indices must be refused
    by the node, not by the library's chunks door."""
    as_reader = settings.model_copy(update={"username": NAME})
    if es.flavor == "opensearch":
        password = f"Tr-{secrets.token_hex(8)}-Aa1!"
        body = render_deployment_role(NAME, flavor="opensearch")
        es.request("PUT", f"{OS_API}/roles/{NAME}", body=body, what="installing the role")
        user = {"password": password, "opendistro_security_roles": [NAME]}
        es.request("PUT", f"{OS_API}/internalusers/{NAME}", body=user, what="creating a user")
        as_reader = as_reader.model_copy(update={"password": SecretStr(password)})
    try:
        try:
            engine = connect(as_reader)
            assert probe(engine).user == NAME
        except AuthenticationError as exc:
            pytest.fail(
                f"the node has no user {NAME} ({exc}); start it with scripts/es.sh, which "
                "renders es_templates/roles into the file realm"
            )
        yield unguarded(engine)
    finally:
        if es.flavor == "opensearch":
            for what in ("internalusers", "roles"):
                try:
                    es.request("DELETE", f"{OS_API}/{what}/{NAME}", what="cleanup")
                except EngineError as exc:
                    if exc.status != 404:
                        raise


def _search(engine: Engine, index: str) -> dict:  # type: ignore[type-arg]
    return engine.request(  # type: ignore[no-any-return]
        "POST", f"/{index}/_search", body={"query": {"match_all": {}}}, what="a test search"
    )


def test_the_trace_reader_reads_the_traces_and_their_mappings(world: World, reader: Engine):
    hits = _search(reader, world.storage.pattern)["hits"]["hits"]
    assert [h["_source"]["organization"]["id"] for h in hits] == ["demo-A"]
    mappings = reader.request("GET", f"/{world.storage.pattern}/_mapping", what="mappings")
    assert mappings  # view_index_metadata: what Discover's field list needs


@pytest.mark.parametrize("which", ["chunks", "packets", "corpus_state"])
def test_the_trace_reader_may_not_read_anything_else(world: World, reader: Engine, which: str):
    index = world.layout.chunks_for("demo-A") if which == "chunks" else getattr(world.layout, which)
    with pytest.raises(AuthenticationError) as refused:
        _search(reader, index)
    assert refused.value.status == 403
    with pytest.raises(AuthenticationError) as refused:
        reader.request("GET", f"/{index}/_mapping", what="mappings")
    assert refused.value.status == 403


def test_a_wildcard_reaches_only_the_traces(es, world: World, reader: Engine):
    # A pattern over every hybrid-es name: Elasticsearch expands it to what the role may read,
    # silently, so only trace documents come back, never a chunk; OpenSearch's security plugin
    # refuses the whole request instead (its do_not_fail_on_forbidden is off by default).
    tag = world.layout.chunks.rsplit("-", 1)[1]
    try:
        hits = _search(reader, f"hybrid-es-*-tr-{tag}*")["hits"]["hits"]
    except AuthenticationError as exc:
        assert es.flavor == "opensearch" and exc.status == 403, exc
        return
    assert hits and all("hybrid-es-traces-tr-" in h["_index"] for h in hits), hits


def test_the_trace_reader_may_not_write_a_trace(world: World, reader: Engine):
    doc = {"@timestamp": "2026-04-01T00:00:00Z"}
    target = world.storage.target(doc, today=NOW.date())
    with pytest.raises(AuthenticationError) as refused:
        reader.request("POST", f"/{target}/_doc", params={"op_type": "create"}, body=doc)
    assert refused.value.status == 403
