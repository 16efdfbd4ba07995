"""``hybrid-es verify``'s pure parts (issue 25, item 6): the native/client fusion comparison, the
scratch corpus, the analysis profile of an index, the kinds of body the searcher sends, the
report, the DLS and version verdicts. No cluster (``tests/integration/test_verify.py`` runs the
whole command on each engine)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from hybrid_es.cluster.access import COMMANDS, CommandAccess, licence_matrix
from hybrid_es.cluster.capabilities import Capabilities
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.dialects import dialect_for
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import RetrievalParams, records_body
from hybrid_es.verify.analysis import EXPECTED, profile_of
from hybrid_es.verify.compare import TOLERANCE, compare_fusion
from hybrid_es.verify.corpus import PHRASE, RESTRICTED, SUPERSEDED, VISIBLE, scratch_corpus
from hybrid_es.verify.dls import why_not
from hybrid_es.verify.legs import kind_of
from hybrid_es.verify.report import NEEDS_WRITE, VerifyReport, failed, passed, skipped, unavailable
from hybrid_es.verify.versions import check_versions

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
R = tuple[str, float, int | None, int | None]


# -- the comparison ------------------------------------------------------------------------------


def _hits(*scores: float) -> list[R]:
    return [(f"d{i}", s, i + 1, None) for i, s in enumerate(scores)]


def test_equal_answers_compare_equal():
    a = _hits(0.9, 0.5, 0.1)
    result = compare_fusion(a, list(a))
    assert result.equal and result.ties == 0 and result.largest == 0.0


def test_a_score_past_the_tolerance_is_a_difference_and_within_it_is_not():
    client = _hits(0.9, 0.5, 0.1)
    near = [(d, s + TOLERANCE / 2, a, b) for d, s, a, b in client]
    assert compare_fusion(near, client).equal
    far = [*client[:1], ("d1", 0.5 + 10 * TOLERANCE, 2, None), *client[2:]]
    result = compare_fusion(far, client)
    assert not result.equal and "rank 2: d1 scored" in result.problems[0]
    assert result.largest == pytest.approx(10 * TOLERANCE)


def test_a_tie_group_is_compared_as_a_set_in_any_order():
    client: list[R] = [("a", 0.9, 1, 1), ("b", 0.5, 2, None), ("c", 0.5, None, 2), ("d", 0.1, 3, 3)]
    native = [client[0], client[2], client[1], client[3]]
    result = compare_fusion(native, client)
    assert result.equal and result.ties == 1


def test_other_members_of_a_whole_tie_group_differ_and_the_cut_last_group_does_not():
    client: list[R] = [("a", 0.9, 1, 1), ("b", 0.5, 2, None), ("c", 0.5, None, 2), ("d", 0.1, 3, 3)]
    native: list[R] = [client[0], ("b", 0.5, 2, None), ("x", 0.5, None, 2), client[3]]
    result = compare_fusion(native, client)
    assert (
        not result.equal and "native ['x'] where the client fusion has ['c']" in result.problems[0]
    )
    # The last group may be cut by the window's end: only its scores are compared.
    cut = [*client[:3], ("e", 0.1, 4, 4)]
    assert compare_fusion(cut, client).equal


def test_per_leg_ranks_must_match():
    client = _hits(0.9, 0.5, 0.1)
    native = [client[0], ("d1", 0.5, 7, None), client[2]]
    result = compare_fusion(native, client)
    assert result.problems == ("d1: per-leg ranks (7, None) natively, (2, None) from the legs",)


def test_a_different_length_is_a_difference_and_problems_are_capped():
    client = _hits(*(1.0 - i / 10 for i in range(9)))
    assert "2 native hits, 9 client hits" in compare_fusion(client[:2], client).problems[0]
    off = [(d, s + 1.0, a, b) for d, s, a, b in client]
    problems = compare_fusion(off, client).problems
    assert len(problems) == 6 and problems[-1] == "and 4 more"


# -- the scratch corpus --------------------------------------------------------------------------


def test_the_scratch_corpus_is_fixed_by_its_seed_and_tag():
    one, two = scratch_corpus("abc123", NOW), scratch_corpus("abc123", NOW)
    assert one == two
    assert one.tenants == ("verify-abc123-a", "verify-abc123-b")
    other = scratch_corpus("def456", NOW)
    assert [d.body for d in other.documents] == [d.body for d in one.documents]
    assert one.queries[0] == PHRASE and len(set(one.queries)) == len(one.queries)


def test_the_phrase_is_only_in_the_visible_and_the_restricted_records():
    corpus = scratch_corpus("abc123", NOW)
    a, b = corpus.tenants
    with_phrase = {(d.tenant, d.id, d.version) for d in corpus.documents if PHRASE in d.body}
    assert with_phrase == {
        (a, VISIBLE, 1),
        (b, "verify-other-tenant", 1),
        *((a, doc_id, 1) for doc_id in RESTRICTED if doc_id != "verify-other-tenant"),
    }
    assert any(d.id == SUPERSEDED and d.version == 2 for d in corpus.documents)
    caller = corpus.callers[0]
    assert caller.tenant == a and corpus.callers[1].tenant == b
    assert {d.tenant for d in corpus.documents} == {a, b}


# -- analysis ------------------------------------------------------------------------------------


def test_the_profile_of_an_index_is_read_from_its_analyzers():
    full = {
        "filter": {"hes_english_stemmer": {"type": "stemmer", "language": "english"}},
        "analyzer": {
            "hes_text": {"type": "custom", "filter": ["lowercase", "hes_english_stemmer"]},
        },
    }
    assert profile_of(full) == "full"
    assert profile_of({"analyzer": {"hes_text": {"type": "standard"}}}) == "standard"
    assert (
        profile_of({"analyzer": {"hes_text": {"type": "custom", "filter": ["lowercase"]}}}) is None
    )
    assert profile_of({}) is None
    assert EXPECTED["full"]["hes_cjk"] == ["東京", "京都", "都庁"]


# -- the bodies the searcher sends ---------------------------------------------------------------


@pytest.mark.parametrize("flavor", ["elasticsearch", "opensearch"])
def test_each_body_the_searcher_sends_is_told_apart(flavor):
    corpus = scratch_corpus("abc123", NOW)
    policy = policy_filter(corpus.callers[0], RequestScope(), NOW)
    d, params = dialect_for(flavor), RetrievalParams()
    vector = [0.1] * 8
    assert kind_of(d.sparse_body("harbour", policy, params)) == "sparse"
    assert kind_of(d.dense_body(vector, policy, params)) == "dense"
    assert kind_of(d.native("harbour", vector, policy, params, "rrf", 0.4)) == "native"
    assert kind_of(records_body(["k1", "k2"], policy)) == "records"


# -- the report ----------------------------------------------------------------------------------


def _report(*checks):  # type: ignore[no-untyped-def]
    return VerifyReport(
        url="http://x",
        flavor="elasticsearch",
        server_version="9.5.4",
        client_library="elasticsearch-py 9.5.1",
        user="u",
        write=False,
        checks=checks,
        tolerance=TOLERANCE,
    )


def test_unavailable_is_not_a_failure_and_skipped_items_say_what_they_need():
    report = _report(
        passed(7, "same major"),
        unavailable(1, "no rank-rrf"),
        skipped(3, "scratch records"),
    )
    assert report.ok and not report.failed
    assert [c.item for c in report.skipped] == [3]
    assert report.check(3).reason == f"{NEEDS_WRITE}scratch records"
    assert report.check(3).name == "policy in both legs"
    out = report.as_dict()
    assert out["ok"] is True and out["skipped"] == [3] and out["failed"] == []
    bad = _report(failed(5, "hes_text gave the wrong tokens"), unavailable(4, "no role store"))
    assert not bad.ok and bad.as_dict()["failed"] == [5]


# -- document-level security and versions --------------------------------------------------------


def _caps(flavor="elasticsearch", *, store=True, security=True, may_roles=True, notes=()):  # type: ignore[no-untyped-def]
    grants = dict.fromkeys(COMMANDS, True) | {"bootstrap --tenant": may_roles}
    return Capabilities(
        flavor=flavor,
        server_version="9.5.4",
        license_type="trial" if flavor == "elasticsearch" else None,
        security_enabled=security,
        native_rrf=False,
        linear_retriever=False,
        knn=None,
        index_options=None,
        analyzers=("standard",),
        native_security_store=store,
        user="someone",
        licence=licence_matrix(flavor, "trial" if flavor == "elasticsearch" else None),
        privileges=tuple(
            CommandAccess(command=c, allowed=v, missing=() if v else ("manage_security",))
            for c, v in grants.items()
        ),
        notes=notes,
    )


def test_why_there_is_no_scratch_role():
    assert why_not(_caps()) == ""
    assert why_not(_caps("opensearch")) == ""
    integ = _caps(
        store=False,
        notes=(
            "native users/roles/API keys unavailable: the security index needs the "
            "analysis-common module, which this node lacks (from node info); --probe-writes "
            "stores and deletes a probe role to be sure",
        ),
    )
    assert why_not(integ).startswith("no native role store (native users/roles/API keys")
    assert "--probe-writes" not in why_not(integ)
    assert "security is off" in why_not(_caps(security=False))
    assert why_not(_caps(may_roles=False)) == (
        "someone may not create a scratch role: lacks manage_security"
    )
    assert "may not create a scratch role" in why_not(_caps("opensearch", may_roles=False))


def _engine(flavor: str, version: str) -> SimpleNamespace:
    name = "OpenSearch" if flavor == "opensearch" else "Elasticsearch"
    return SimpleNamespace(flavor=flavor, version=version, name=name, client_library="")


@pytest.mark.parametrize(
    ("flavor", "server", "client", "status", "words"),
    [
        ("elasticsearch", "9.5.4", "elasticsearch-py 9.5.1", "pass", "the same major"),
        ("elasticsearch", "8.19.21", "elasticsearch-py 8.19.2", "pass", "the same major"),
        ("elasticsearch", "9.5.4", "elasticsearch-py 8.19.2", "fail", ".[es9]"),
        ("elasticsearch", "8.17.0", "elasticsearch-py 8.17.1", "fail", "older than 8.19"),
        ("elasticsearch", "unknown", "elasticsearch-py 9.5.1", "unavailable", "monitor"),
        ("opensearch", "2.19.1", "opensearch-py 3.2.0", "pass", "major is its own"),
        ("opensearch", "3.6.0", "opensearch-py 3.2.0", "pass", "major is its own"),
    ],
)
def test_client_and_server_versions(flavor, server, client, status, words):
    check = check_versions(_engine(flavor, server), client)  # type: ignore[arg-type]
    assert check.status == status and words in check.reason, check


def test_an_old_opensearch_passes_and_says_it_fuses_client_side():
    check = check_versions(_engine("opensearch", "2.17.1"), "opensearch-py 3.2.0")  # type: ignore[arg-type]
    assert check.status == "pass" and "fused client-side" in check.details[0]


def test_the_command_is_registered_and_says_it_is_read_only_unless_write():
    out = subprocess.run(
        [sys.executable, "-m", "hybrid_es.cli", "verify", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert "--write" in out.stdout and "--json" in out.stdout
    assert "Without it nothing is written" in " ".join(out.stdout.split())
