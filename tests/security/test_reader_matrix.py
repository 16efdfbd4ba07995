"""The tenant reader credential against another tenant's index: every read API, every way of
naming the index. Real security users on both engines.

Tenant A's reader (``bootstrap --tenant``'s role: on Elasticsearch from the file realm that
``scripts/es.sh`` renders from ``es_templates/roles``, on OpenSearch installed here through the
security plugin by ``install_tenant_reader`` and mapped by backend role to an internal user)
attacks tenant B's chunks index by exact name, by wildcard, by comma list and by alias, with
``_search`` (suggest, aggs, dfs_query_then_fetch + explain, profile), ``_msearch``, ``_count``,
``_mget``/GET, ``_termvectors``, ``_field_caps``, ``_mapping``, ``_settings``, ``_resolve/index``,
``_cat/indices``, scroll and point in time. Each is refused, or answers nothing of B: none of
B's markers (its tenant id, its index name, its document ids, the words that occur only in its
deleted and managers-only records) may appear in an answer unless the attacker wrote it in the
request itself, and a request that names A's own index beside B's must score exactly as one over
A's index alone (BM25 statistics are the side channel one index per tenant closes).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import SecretStr

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.cluster.generations import current
from hybrid_es.cluster.security import install_tenant_reader
from hybrid_es.cluster.templates import backend_role, render_role, role_name
from hybrid_es.errors import ConfigurationError, EngineError, HybridEsError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.tenancy import IndexLayout
from tests.conftest import HashEmbedder, ingest_as_owners, owner, travel_documents, unguarded
from tests.security.conftest import AGENT_A, NOW, QUERY, SCOPE

pytestmark = pytest.mark.integration

A, B = "demo-A", "demo-B"
LAYOUT = IndexLayout(
    chunks="hybrid-es-chunks-rx",
    packets="hybrid-es-packets-rx",
    traces="hybrid-es-traces-rx",
    corpus_state="hybrid-es-corpus-state-rx",
)
"""The layout whose indices the file-realm ``rx-reader-<tenant>`` roles of ``scripts/es.sh`` name
(and nothing of the default layout, which other tests fill: a ``*`` from this reader must reach only
this module's records)."""
ALIAS_B = "hybrid-es-rx-alias-b"
ALIAS_BOTH = "hybrid-es-rx-alias-both"
SECRET_DELETED = "quixoticzebra"
"""A word that occurs only in demo-B's deleted record."""
SECRET_MANAGERS = "marzipanvault"
"""A word that occurs only in demo-B's managers-only record."""
B_DOCS = ("D5-other-tenant", "B-deleted-note", "B-managers-memo")


def b_documents() -> list[Document]:
    hidden = [
        Document(
            id="B-deleted-note",
            tenant=B,
            body=f"Partner B withdrew the {SECRET_DELETED} surcharge for KYO-H12 rooms.",
            deleted=True,
            acl_groups=("*",),
        ),
        Document(
            id="B-managers-memo",
            tenant=B,
            body=f"Managers only: the {SECRET_MANAGERS} margin on KYO-H12 April rates.",
            acl_groups=("managers",),
        ),
    ]
    return [d for d in travel_documents() if d.tenant == B] + hidden


@dataclass
class Readers:
    a: Engine
    """Tenant A's reader: the attacker."""
    b_index: str
    a_index: str
    b_chunk_ids: tuple[str, ...]


def _opensearch_reader(es: Engine, settings: Any, tenant: str) -> Any:
    install_tenant_reader(es, tenant, LAYOUT)
    password = f"Rx-{secrets.token_hex(8)}-Aa1!"
    user = f"rx-reader-{tenant}"
    es.request(
        "PUT",
        f"/_plugins/_security/api/internalusers/{user}",
        body={"password": password, "backend_roles": [backend_role(tenant)]},
        what="creating a test user",
    )
    return settings.model_copy(update={"username": user, "password": SecretStr(password)})


def _cleanup_opensearch(es: Engine) -> None:
    api = "/_plugins/_security/api"
    for tenant in (A, B):
        for path in (f"internalusers/rx-reader-{tenant}", f"roles/{role_name(tenant)}"):
            try:
                es.request("DELETE", f"{api}/{path}", what="cleanup")
            except EngineError as exc:
                if exc.status != 404:
                    raise
        try:
            es.request("DELETE", f"{api}/rolesmapping/{role_name(tenant)}", what="cleanup")
        except EngineError as exc:
            if exc.status != 404:
                raise


def _physical(es: Engine, name: str) -> str:
    live = current(es, name)
    assert live is not None, name
    return live.index


@pytest.fixture(scope="module")
def readers(es, settings, bootstrapped) -> Iterator[Readers]:  # type: ignore[no-untyped-def]
    state = CorpusState(es, LAYOUT.corpus_state)
    ingestor = Ingestor(es, HashEmbedder(), layout=LAYOUT, corpus_state=state)
    all_indices = ",".join([LAYOUT.chunks_pattern(), LAYOUT.corpus_state])
    es.delete_index(all_indices)  # a run killed before its cleanup
    try:
        # (D6-guest-review's metadata names demo-B: an injection test's record, not B's data)
        own = [d for d in travel_documents() if d.tenant == A and d.id != "D6-guest-review"]
        ingest_as_owners(ingestor, own, now=NOW)
        ingestor.ingest(b_documents(), owner(B), now=NOW)
        a_index, b_index = LAYOUT.chunks_for(A), LAYOUT.chunks_for(B)
        # Each name is an alias over its generation (cluster.generations): an alias is added to
        # the physical index behind it.
        a_behind, b_behind = (_physical(es, n) for n in (a_index, b_index))
        es.request(
            "POST",
            "/_aliases",
            body={
                "actions": [
                    {"add": {"index": b_behind, "alias": ALIAS_B}},
                    {"add": {"indices": [a_behind, b_behind], "alias": ALIAS_BOTH}},
                ]
            },
            what="adding test aliases",
        )
        es.request("POST", f"/{b_index}/_refresh", what="refresh")
        ids = unguarded(es).search(
            b_index, {"query": {"match_all": {}}, "_source": False, "size": 100}
        )
        b_chunk_ids = tuple(h["_id"] for h in ids["hits"]["hits"])
        assert len(b_chunk_ids) >= 3
        if es.flavor == "opensearch":
            reader_settings = _opensearch_reader(es, settings, A)
        else:  # scripts/es.sh's file realm: rx-reader-<tenant> (this layout), the node's password
            reader_settings = settings.model_copy(update={"username": f"rx-reader-{A}"})
        try:
            reader = connect(reader_settings)
        except HybridEsError as exc:
            pytest.fail(f"tenant A's reader cannot connect ({exc}); start the node with scripts")
        yield Readers(reader, b_index, a_index, b_chunk_ids)
    finally:
        if es.flavor == "opensearch":
            _cleanup_opensearch(es)
        es.delete_index(all_indices)


def markers(r: Readers) -> tuple[str, ...]:
    """What of tenant B no answer to tenant A's reader may hold."""
    return (B, r.b_index.split("-t-")[-1], *B_DOCS, *r.b_chunk_ids, SECRET_DELETED, SECRET_MANAGERS)


def leaked(r: Readers, request: str, answer: Any) -> list[str]:
    """B's markers in ``answer`` that the request itself did not name."""
    text = json.dumps(answer, ensure_ascii=False).lower()
    return [m for m in markers(r) if m.lower() in text and m.lower() not in request.lower()]


def attempt(r: Readers, method: str, path: str, **kw: Any) -> Any:
    """The reader's request: its answer, or None when the engine refused it (4xx)."""
    try:
        # The attack goes around the library (and its policy door): the roles alone must hold.
        return unguarded(r.a).request(method, path, what="an attack", **kw)
    except EngineError as exc:
        # OpenSearch answers a profile under document-level security with a 500
        # security_exception: a refusal all the same.
        refused = exc.status in (400, 401, 403, 404) or "security_exception" in str(exc)
        assert refused, f"{method} {path}: {exc}"
        return None


def targets(r: Readers) -> dict[str, str]:
    """Ways of naming tenant B's index (some include A's own index beside it)."""
    base = LAYOUT.chunks
    return {
        "exact": r.b_index,
        "wildcard-b": f"{base}-t-demo-_b*",
        "wildcard-all": f"{base}*",
        "star": "*",
        "all": "_all",
        "comma": f"{r.a_index},{r.b_index}",
        "comma-ignore": f"{r.a_index},{r.b_index}",
        "alias-b": ALIAS_B,
        "alias-both": ALIAS_BOTH,
    }


SEARCHES: dict[str, Callable[[], dict[str, Any]]] = {
    "suggest": lambda: {
        "size": 0,
        "suggest": {
            "t": {
                "text": f"{SECRET_DELETED[:-1]}x {SECRET_MANAGERS[:-1]}x partnr",
                "term": {"field": "search_payload", "suggest_mode": "always", "min_word_length": 3},
            },
        },
    },
    "aggs": lambda: {
        "size": 0,
        "aggs": {"t": {"terms": {"field": "tenant"}}, "d": {"terms": {"field": "doc_id"}}},
    },
    "explain": lambda: {
        "query": {"match": {"search_payload": "KYO-H12 April rate"}},
        "explain": True,
        "size": 20,
    },
    "profile": lambda: {"query": {"match": {"search_payload": "partner"}}, "profile": True},
    "match_all": lambda: {"query": {"match_all": {}}, "size": 100},
}


@pytest.mark.parametrize("kind", sorted(SEARCHES))
def test_search_apis_answer_nothing_of_another_tenant(readers: Readers, kind: str):
    for name, target in targets(readers).items():
        params = {"ignore_unavailable": "true"} if name == "comma-ignore" else {}
        for dfs in (False, True):
            if dfs:
                params = {**params, "search_type": "dfs_query_then_fetch"}
            path = f"/{target}/_search"
            body = SEARCHES[kind]()
            answer = attempt(readers, "POST", path, body=body, params=params)
            request = path + json.dumps(body)
            assert not leaked(readers, request, answer), (kind, name, dfs, answer)


def _scores(answer: dict[str, Any]) -> list[tuple[str, float, Any]]:
    return [(h["_id"], h["_score"], h.get("_explanation")) for h in answer["hits"]["hits"]]


def test_statistics_over_own_and_other_index_equal_the_own_index_alone(readers: Readers):
    """dfs_query_then_fetch + explain over A's index beside B's: the scores and their
    explanation (document counts, term frequencies) are those of A's index alone, or the whole
    request is refused. Before the fix the role named every tenant's index, and B's counts,
    deleted and managers-only records included, showed in A's explanations."""
    body = {"query": {"match": {"search_payload": "KYO-H12 partner rate"}}, "explain": True}
    params = {"search_type": "dfs_query_then_fetch"}
    own = attempt(readers, "POST", f"/{readers.a_index}/_search", body=body, params=params)
    assert own is not None and own["hits"]["hits"], "the reader must search its own index"
    for name, target in targets(readers).items():
        extra = {"ignore_unavailable": "true"} if name == "comma-ignore" else {}
        mixed = attempt(
            readers, "POST", f"/{target}/_search", body=body, params={**params, **extra}
        )
        if mixed is not None and mixed["hits"]["hits"]:
            assert _scores(mixed) == _scores(own), name


def test_msearch_count_and_scroll_answer_nothing_of_another_tenant(readers: Readers):
    for name, target in targets(readers).items():
        ndjson = "".join(
            json.dumps(line) + "\n"
            for line in ({"index": target}, {"query": {"match_all": {}}, "size": 50})
        )
        answer = attempt(readers, "POST", "/_msearch", body=ndjson)
        assert not leaked(readers, ndjson, answer), (name, answer)
        count = attempt(
            readers, "POST", f"/{target}/_count", body={"query": {"term": {"tenant": B}}}
        )
        if count is not None:
            assert count["count"] == 0, name
        first = attempt(
            readers,
            "POST",
            f"/{target}/_search",
            params={"scroll": "1m"},
            body={"query": {"match_all": {}}, "size": 1},
        )
        if first is not None and first.get("_scroll_id"):
            page = attempt(
                readers,
                "POST",
                "/_search/scroll",
                body={"scroll": "1m", "scroll_id": first["_scroll_id"]},
            )
            assert not leaked(readers, target, [first, page]), name


def test_point_in_time_answers_nothing_of_another_tenant(readers: Readers):
    opened = "_search/point_in_time" if readers.a.flavor == "opensearch" else "_pit"
    for name, target in targets(readers).items():
        pit = attempt(readers, "POST", f"/{target}/{opened}", params={"keep_alive": "1m"})
        if pit is None:
            continue
        pit_id = pit.get("id") or pit.get("pit_id")
        answer = attempt(
            readers,
            "POST",
            "/_search",
            body={
                "query": {"match_all": {}},
                "size": 100,
                "pit": {"id": pit_id, "keep_alive": "1m"},
            },
        )
        assert not leaked(readers, target, [pit, answer]), (name, answer)


def test_document_apis_answer_nothing_of_another_tenant(readers: Readers):
    for chunk_id in readers.b_chunk_ids:
        for target in (readers.b_index, ALIAS_B, ALIAS_BOTH):
            got = attempt(readers, "GET", f"/{target}/_doc/{chunk_id}")
            assert got is None or not got.get("found"), (target, got)
            assert not leaked(readers, f"{target}/{chunk_id}", got)
            tv = attempt(
                readers,
                "GET",
                f"/{target}/_termvectors/{chunk_id}",
                params={"fields": "search_payload"},
            )
            assert not leaked(readers, f"{target}/{chunk_id}", tv), (target, tv)
        body = {"docs": [{"_index": readers.b_index, "_id": chunk_id}]}
        mget = attempt(readers, "POST", "/_mget", body=body)
        if mget is not None:
            assert not any(d.get("found") for d in mget["docs"]), mget
        assert not leaked(readers, json.dumps(body), mget)


def test_metadata_apis_answer_nothing_of_another_tenant(readers: Readers):
    for name, target in {**targets(readers), "none": ""}.items():
        for path, params in (
            (f"/{target}/_field_caps", {"fields": "*"}),
            (f"/{target}/_mapping", {}),
            (f"/{target}/_settings", {}),
            (f"/_resolve/index/{target or '*'}", {}),
            (f"/_cat/indices/{target}", {"format": "json"}),
            (f"/_cat/aliases/{target}", {"format": "json"}),
        ):
            path = path.replace("//", "/")
            answer = attempt(readers, "GET", path, params=params)
            assert not leaked(readers, path, answer), (name, path, answer)


def test_the_reader_still_searches_its_own_tenant(readers: Readers):
    """The role is not so narrow that the reader's own searches fail: the library's hybrid
    search as tenant A, through A's reader credential, finds A's contract."""
    searcher = HybridSearcher(readers.a, HashEmbedder(), layout=LAYOUT, native_rrf=False)
    hits = searcher.search(QUERY, AGENT_A, SCOPE, now=NOW).hits
    assert hits and all(h.source["tenant"] == A for h in hits)
    assert "D1-current-contract" in {h.source["doc_id"] for h in hits}


def test_no_reader_role_is_made_where_it_cannot_be_confined(es):
    """The shared layout puts every tenant in one index: a reader role there would rest on
    document-level security alone, which OpenSearch's suggesters ignore and BM25 statistics
    cross on both engines. bootstrap refuses to make one (nothing written), naming the layout."""
    shared = IndexLayout(chunks="hybrid-es-chunks-rx-shared", mode="shared")
    with pytest.raises(ConfigurationError) as refused:
        install_tenant_reader(es, A, shared)
    assert "shared" in refused.value.message and "index-per-tenant" in (refused.value.hint or "")
    with pytest.raises(ConfigurationError):
        render_role(A, shared, flavor=es.flavor)
