"""An index source's records as documents (``ingest.source_mapping``), without a cluster: every
shape an ACL takes in real indices, joined text, constants, the tenant rule, and refusals."""

from __future__ import annotations

import pytest

from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.loaders import read_field_map
from hybrid_es.ingest.source_mapping import (
    EXTRA_TARGETS,
    SOURCE_KEY,
    Refusal,
    SourceMapping,
    acl_object,
    as_list,
    unmapped,
)

TENANT = "acme"


def _map(*pairs: str, **kw: bool) -> SourceMapping:
    return SourceMapping.of("legacy-docs", TENANT, read_field_map(pairs, extra=EXTRA_TARGETS), **kw)


def _hit(source: dict[str, object], _id: str = "r1") -> dict[str, object]:
    return {"_id": _id, "_source": source}


def test_a_legacy_record_with_its_own_field_names_becomes_a_document():
    m = _map(
        "doc_id=id",
        "headline=title",
        "summary=body",
        "details=body",
        "groups_csv=acl_groups",
        "rev=version",
        "updated_at=modified",
        "meta.team=metadata.team",
    )
    doc = m.record(
        _hit(
            {
                "doc_id": 42,
                "headline": "Rates 2026",
                "summary": "Spring rates.",
                "details": "Twin room 31,500.",
                "groups_csv": "sales, legal,,",
                "rev": "3",
                "updated_at": "2026-04-01T10:00:00Z",
                "meta": {"team": "travel"},
                "ignored": "not read",
            }
        )
    )
    assert isinstance(doc, Document)
    assert (doc.id, doc.tenant, doc.title, doc.version) == ("42", TENANT, "Rates 2026", 3)
    assert doc.body == "Spring rates.\n\nTwin room 31,500."
    assert doc.acl_groups == ("sales", "legal") and doc.acl_users == ()
    assert doc.metadata == {"team": "travel", SOURCE_KEY: "legacy-docs"}
    assert m.modified_field == "updated_at"
    # The read asks for what the map names (and the document fields' own names), no more.
    assert {"doc_id", "headline", "summary", "details", "updated_at"} <= set(m.source_fields())
    assert "ignored" not in m.source_fields() and "id" not in m.source_fields()


@pytest.mark.parametrize(
    ("value", "groups"),
    [
        (["sales", "legal"], ("sales", "legal")),
        ("sales,legal", ("sales", "legal")),
        (" sales , legal ", ("sales", "legal")),
        ("sales", ("sales",)),
        ([["sales"], "legal,ops"], ("sales", "legal", "ops")),
        ("", None),
    ],
)
def test_a_group_list_or_a_comma_separated_string(value, groups):
    doc = _map("text=body", "acl=acl_groups").record(_hit({"text": "x", "acl": value}))
    assert isinstance(doc, Document)
    assert doc.acl_groups == groups


def test_a_nested_object_of_users_and_groups():
    m = _map("text=body", "permissions=acl")
    doc = m.record(_hit({"text": "x", "permissions": {"users": "ana,bo", "groups": ["sales"]}}))
    assert isinstance(doc, Document)
    assert (doc.acl_users, doc.acl_groups) == (("ana", "bo"), ("sales",))
    # A nested field holds a list of such objects: merged.
    doc = m.record(
        _hit({"text": "x", "permissions": [{"user": "ana"}, {"groups": "ops", "users": []}]})
    )
    assert isinstance(doc, Document)
    assert (doc.acl_users, doc.acl_groups) == (("ana",), ("ops",))
    assert acl_object({"groups": "a"}) == (None, ["a"])


def test_a_constant_acl_for_the_whole_source():
    doc = _map("text=body", "const:support,legal=acl_groups").record(_hit({"text": "x"}))
    assert isinstance(doc, Document)
    assert doc.acl_groups == ("support", "legal")


def test_a_record_that_states_no_acl_keeps_none_for_the_default():
    doc = _map("text=body").record(_hit({"text": "x"}))
    assert isinstance(doc, Document)
    assert doc.acl_unset


def test_the_id_defaults_to_an_id_field_then_the_records_own():
    assert _map("text=body").record(_hit({"text": "x"}, _id="k9")).id == "k9"  # type: ignore[union-attr]
    assert _map("text=body").record(_hit({"text": "x", "id": "own"})).id == "own"  # type: ignore[union-attr]
    assert _map("_id=id", "text=body").record(_hit({"text": "x", "id": "own"}, "k9")).id == "k9"  # type: ignore[union-attr]


def test_another_tenants_record_is_refused_and_the_callers_is_written():
    m = _map("org=tenant", "text=body")
    refused = m.record(_hit({"org": "globex", "text": "secret"}))
    assert isinstance(refused, Refusal) and refused.reason == "other-tenant"
    assert "globex" in refused.message and "nothing of it is written" in refused.message
    assert isinstance(m.record(_hit({"org": TENANT, "text": "x"})), Document)
    assert isinstance(m.record(_hit({"text": "x"})), Document)  # names none: the caller's
    assert m.identity(_hit({"org": "globex"}, "r7")) == ("r7", "globex")
    assert m.identity(_hit({}, "r8")) == ("r8", TENANT)
    assert m.identity_fields() == ["id", "org"]


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ({"text": "  "}, "body"),
        ({"text": "x", "rev": "v2"}, "label"),
        ({"text": "x", "rev": True}, "boolean"),
        ({"text": "x", "acl": "bad\nentry"}, "ACL entry"),
    ],
)
def test_an_invalid_record_is_refused_with_its_reason(source, why):
    out = _map("text=body", "rev=version", "acl=acl_groups").record(_hit(source))
    assert isinstance(out, Refusal) and out.reason == "invalid" and out.doc_id == "r1"
    assert why in out.message


def test_the_map_is_checked():
    with pytest.raises(ValueError, match=r"metadata\.source_index"):
        _map("x=metadata.source_index")
    with pytest.raises(ValueError, match="constant"):
        _map("const:1=id")
    with pytest.raises(ValueError, match="not several"):
        _map("a=modified", "b=modified")
    with pytest.raises(ValueError, match="unknown target"):
        read_field_map(["a=nothing"], extra=EXTRA_TARGETS)
    with pytest.raises(ValueError, match="unknown target"):
        read_field_map(["a=acl"])  # files have no acl target


def test_version_from_label_as_files_do():
    doc = _map("text=body", "label=version_label", version_from_label=True).record(
        _hit({"text": "x", "label": "contract-v4"})
    )
    assert isinstance(doc, Document) and doc.version == 4


def test_lists_and_the_unmapped_fields():
    assert as_list(None) is None and as_list(7) == ["7"]
    m = _map("headline=title", "text=body", "const:x=source_type")
    assert unmapped(m, {"text": "text"}) == ["headline"]
