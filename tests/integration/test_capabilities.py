"""The capability probe writes nothing, on both engines, and says what the credentials may do.

Two independent checks of "writes nothing": every request the probe sends, recorded at the
transport, is a read; and the cluster's metadata (indices, templates, data streams, the graveyard
of deleted indices, roles) is the same after the probe as before. The graveyard is what the old
probe gave away: an index created and deleted again leaves a tombstone there.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import pytest

from hybrid_es.cluster.capabilities import probe
from tests.conftest import cluster_metadata

pytestmark = pytest.mark.integration

READ_POSTS = (
    "/_search",  # a pattern that matches no index, with allow_no_indices
    "/_analyze",
    "/_security/user/_has_privileges",
    "/_index_template/_simulate",  # validates a template, stores nothing
)
PROBE_NAMES = ("capability-probe", "hybrid-es-probe-")


def is_read(method: str, target: str) -> bool:
    """Whether a request only reads: GET and HEAD, and the POSTs of read APIs."""
    path = target.split("?")[0]
    return method in ("GET", "HEAD") or (method == "POST" and path.endswith(READ_POSTS))


def test_every_request_of_the_probe_is_a_read(wire):
    engine, log = wire
    caps = probe(engine)
    assert not caps.writes_probed
    writes = [(method, target) for method, target, _ in log if not is_read(method, target)]
    assert log and not writes, writes


def test_the_probe_leaves_the_cluster_metadata_as_it_was(es):
    before = cluster_metadata(es)
    probe(es)
    assert cluster_metadata(es) == before


def _probe_objects(es) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    """The probe's own objects in the metadata (by their names), tombstones included."""
    m = cluster_metadata(es)
    parts = ("indices", "roles", "index_templates", "component_templates", "graveyard")
    return {part: [n for n in m[part] if any(p in str(n) for p in PROBE_NAMES)] for part in parts}


def test_probe_writes_removes_what_it_made(es):
    before = _probe_objects(es)
    caps = probe(es, writes=True)
    assert caps.writes_probed
    after = _probe_objects(es)
    old_tombstones = before.pop("graveyard")
    new = [n for n in after.pop("graveyard") if n not in old_tombstones]
    assert new, "the write probe made no index"  # it did write: its tombstones are there
    assert after == before  # and removed every index, role and template it made


def test_the_report_has_the_licence_matrix_and_the_privileges(es, caps):
    features = {r.feature: r for r in caps.licence}
    assert set(features) == {"document-level security", "native rrf / linear retrievers"}
    if es.flavor == "opensearch":
        assert all(r.allowed and r.needs == "n/a (open source)" for r in caps.licence)
    else:  # the scripts/es.sh node runs a trial licence
        assert caps.license_type == "trial"
        assert features["document-level security"].needs == "platinum, enterprise or trial"
        assert features["native rrf / linear retrievers"].needs == "enterprise or trial"
        assert all(r.allowed for r in caps.licence)
    commands = {a.command: a for a in caps.privileges}
    assert set(commands) >= {"bootstrap", "ingest", "search", "packets", "traces"}
    assert all(a.allowed for a in commands.values()), commands  # the tests' superuser
    rows = dict(caps.rows())
    assert rows["probe"] == "read-only"
    # client and server versions side by side (issue 17)
    dist = "elasticsearch" if caps.flavor == "elasticsearch" else "opensearch-py"
    assert rows["client"].endswith(f"-py {importlib.metadata.version(dist)}"), rows["client"]
    assert rows["server"] == f"{caps.flavor} {caps.server_version}"
    assert "document-level security" in rows["licence matrix"]
    assert "bootstrap: yes" in rows[f"privileges of {caps.user}"]


def test_cli_capabilities_json_carries_the_same():
    r = subprocess.run(
        [sys.executable, "-m", "hybrid_es.cli", "capabilities", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["writes_probed"] is False
    assert {row["feature"] for row in report["licence"]} == {
        "document-level security",
        "native rrf / linear retrievers",
    }
    assert {a["command"] for a in report["privileges"]} >= {"bootstrap", "search"}


@pytest.mark.parametrize("alpha", ["spread", 0.4])
@pytest.mark.parametrize("method", ["linear", "rrf"])
@pytest.mark.parametrize("fusion", ["auto", "client"])
def test_the_report_states_the_path_searches_take(es, fresh_indices, method, fusion, alpha):
    """Issue 25: the report said ``client-rrf`` while every search ran ``client-linear`` (the
    default fusion). It now states the path of the configured fusion, and it is the path a
    search with that configuration takes on this engine."""
    from datetime import UTC, date, datetime

    from hybrid_es.cluster.corpus_state import CorpusState
    from hybrid_es.ingest.indexer import Ingestor
    from hybrid_es.models import Principal, RequestScope
    from hybrid_es.retrieval.searcher import HybridSearcher
    from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents

    embedder = HashEmbedder()

    now = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
    state = CorpusState(es, fresh_indices["corpus_state"])
    ingest_as_owners(
        Ingestor(es, embedder, index=fresh_indices["chunks"], corpus_state=state),
        travel_documents(),
        now=now,
    )
    caps = probe(es, fusion=fusion, fusion_method=method, fusion_alpha=alpha)
    searcher = HybridSearcher(
        es,
        embedder,
        index=fresh_indices["chunks"],
        corpus_state_index=fresh_indices["corpus_state"],
        fusion=fusion,
        fusion_method=method,
        alpha=alpha,
    )
    agent = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
    stay = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
    taken = searcher.search("KYO-H12 April roll-in shower rate", agent, stay, now=now)
    assert caps.fusion_path.split(" ")[0] == taken.fusion_path
    assert dict(caps.rows())["fusion path"].startswith(taken.fusion_path)
