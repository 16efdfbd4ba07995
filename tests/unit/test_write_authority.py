"""The write authority's rule, case by case (``hybrid_es.ingest.authority``), and the audit copy
that replaced text is kept as (``ingest.plan.audit_copy``). Pure: no cluster."""

from __future__ import annotations

from typing import Any

import pytest

from hybrid_es.identity import audit_chunk_id
from hybrid_es.ingest.authority import (
    delete_verdict,
    refusal_message,
    widens,
    writable_clauses,
    write_verdict,
)
from hybrid_es.ingest.chunking import Chunk
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import audit_copy, plan_document
from hybrid_es.models import WRITER_ROLE, Principal

WRITER = Principal(tenant="t", user_id="bot", roles=(WRITER_ROLE,))
MIA = Principal(tenant="t", user_id="mia", groups=("managers",))
NOBODY = Principal(tenant="t", user_id="nobody")


def stored(
    version: int = 1, groups: tuple[str, ...] = ("managers",), **more: Any
) -> dict[str, Any]:
    return {"version": version, "acl_users": [], "acl_groups": list(groups), **more}


def doc(version: int = 1, groups: tuple[str, ...] = ("managers",), users: tuple[str, ...] = ()):
    return Document(
        id="d", tenant="t", body="text", version=version, acl_groups=groups, acl_users=users
    )


@pytest.mark.parametrize(
    ("who", "write", "have", "expected"),
    [
        (NOBODY, doc(), [], (True, "new")),
        (WRITER, doc(groups=("*",)), [stored()], (True, "writer")),
        (MIA, doc(), [stored()], (True, "reader")),
        (NOBODY, doc(), [stored()], (False, "hidden")),
        (MIA, doc(groups=("*",)), [stored()], (False, "widens-acl")),
        (MIA, doc(groups=("managers", "finance")), [stored()], (False, "widens-acl")),
        (MIA, doc(users=("mia",), groups=()), [stored()], (True, "reader")),  # narrows, adds self
        (MIA, doc(users=("sam",)), [stored()], (False, "widens-acl")),
        (NOBODY, doc(groups=("x",)), [stored(groups=("*",))], (True, "reader")),  # everyone's
        # the latest version decides what the document is; an older one it would supersede too
        (MIA, doc(version=3), [stored(2), stored(1, groups=("board",))], (False, "hidden")),
        (
            MIA,
            doc(version=3),
            [stored(2), stored(1, ("board",), superseded_by="x")],
            (True, "reader"),
        ),
        (MIA, doc(version=1), [stored(2, groups=("board",))], (False, "hidden")),
        # a deleted document its member could read may be written again
        (MIA, doc(), [stored(deleted=True)], (True, "reader")),
    ],
)
def test_write_verdicts(who, write, have, expected):
    v = write_verdict(who, write, have)
    assert (v.allowed, v.reason) == expected


def test_delete_verdicts():
    assert delete_verdict(NOBODY, []).reason == "missing" and not delete_verdict(NOBODY, []).allowed
    assert delete_verdict(WRITER, [stored()]).allowed
    assert delete_verdict(MIA, [stored(2), stored(1)]).allowed
    assert delete_verdict(NOBODY, [stored()]).reason == "hidden"
    # every version it would mark deleted must be readable
    assert not delete_verdict(MIA, [stored(2), stored(1, groups=("board",))]).allowed


def test_widening_is_about_who_could_read():
    old = [stored(groups=("a", "b"))]
    assert not widens(MIA, (), ("a",), old)
    assert widens(MIA, (), ("a", "c"), old)
    assert not widens(MIA, ("mia",), (), old)
    assert widens(MIA, ("sam",), (), old)
    assert not widens(MIA, ("sam",), ("zz",), [stored(groups=("*",))])


def test_one_wording_for_every_refusal_names_nothing_stored():
    text = refusal_message(NOBODY, "payroll")
    assert "'nobody'" in text and "'payroll'" in text and WRITER_ROLE in text


def test_the_writers_view_is_the_tenants_live_documents_and_a_members_its_acl():
    assert len(writable_clauses(WRITER)) == 1
    member = writable_clauses(MIA)
    assert len(member) == 2 and "acl_groups" in str(member[1])


def test_an_audit_copy_keeps_the_text_under_an_id_no_live_record_has():
    src = {
        "chunk_id": "d::v1::c0000",
        "doc_id": "d",
        "doc_hash": "ab" * 32,
        "raw_chunk_text": "old",
        "embedding": [0.1],
        "deleted": False,
    }
    copy = audit_copy(src, "d::v1::c0000")
    assert copy["chunk_id"] == audit_chunk_id("d::v1::c0000", "ab" * 32)
    assert copy["doc_id"] == "d::r" + "ab" * 8
    assert copy["deleted"] is True and copy["superseded_by"] == "d::v1::c0000"
    assert "embedding" not in copy and copy["raw_chunk_text"] == "old"
    assert src["deleted"] is False  # pure


def test_a_correction_names_what_it_replaces_and_an_unchanged_rewrite_nothing():
    d = Document(id="d", tenant="t", body="new text")
    chunks = [Chunk(number=0, text="new text", heading_path=())]
    old = {
        "chunk_id": "d::v1::c0000",
        "version": 1,
        "tenant": "t",
        "doc_hash": "other",
        "chunk_hash": "x",
    }
    gone = {**old, "chunk_id": "d::v1::c0001"}
    plan = plan_document(d, chunks, [old, gone], prompt_version="p", embedding_model="m")
    assert plan.replaced == ("d::v1::c0000", "d::v1::c0001")
    same = {**old, "doc_hash": d.content_hash()}
    plan = plan_document(d, chunks, [same], prompt_version="p", embedding_model="m")
    assert plan.replaced == ()  # the text and policy fields are the same: nothing replaced
