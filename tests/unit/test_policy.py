"""The hard policy filter (Elasticsearch clauses) and its Python re-check (``authorize``)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.policy import POLICY_VERSION, authorize, policy_filter
from tests.constants import AGENT, NOW

STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))

# Sources modelled on tests/fixtures/travel.jsonl (only the fields the rules read).
D0 = {
    "doc_id": "D0-stale-contract",
    "tenant": "demo-A",
    "version": 2,
    "valid_from": "2025-04-01",
    "valid_to": "2026-03-31",
    "superseded_by": "D1-current-contract",
    "source_type": "contract",
    "jurisdiction": "JP",
    "property_ids": ["PROP-KYO-12"],
    "acl_groups": ["travel-agents"],
}
D1 = {
    "doc_id": "D1-current-contract",
    "tenant": "demo-A",
    "version": 3,
    "valid_from": "2026-04-01",
    "valid_to": "2027-03-31",
    "source_type": "contract",
    "jurisdiction": "JP",
    "property_ids": ["PROP-KYO-12"],
    "acl_groups": ["travel-agents"],
}
D3 = {
    "doc_id": "D3-booking-itinerary",
    "tenant": "demo-A",
    "version": 1,
    "source_type": "itinerary",
    "booking_ids": ["JPN-2026-0417"],
    "property_ids": ["PROP-KYO-12"],
    "acl_groups": ["travel-agents"],
}
D5 = {
    "doc_id": "D5-other-tenant",
    "tenant": "demo-B",
    "version": 1,
    "valid_from": "2026-01-01",
    "source_type": "contract",
    "acl_groups": ["*"],
}
# D6's metadata claims another tenant and an open ACL; only the real fields may count.
D6 = {
    "doc_id": "D6-guest-review",
    "tenant": "demo-A",
    "version": 1,
    "source_type": "review",
    "acl_groups": ["finance"],
    "metadata": {"tenant": "demo-B", "acl_groups": ["*"], "acl_users": ["agent-1"]},
}


def _clauses(principal=AGENT, scope=STAY, now=NOW):
    f = policy_filter(principal, scope, now)
    assert set(f) == {"bool"} and set(f["bool"]) == {"filter", "must_not"}
    return f["bool"]["filter"], f["bool"]["must_not"]


def _failed(decision):
    return [o.rule for o in decision.outcomes if not o.passed]


# --- the Elasticsearch filter -----------------------------------------------------------------


def test_filter_contains_the_tenant_term():
    filters, _ = _clauses()
    assert {"term": {"tenant": "demo-A"}} in filters


def test_acl_clause_admits_the_user_its_groups_and_everyone():
    filters, _ = _clauses()
    assert {
        "bool": {
            "should": [
                {"terms": {"acl_users": ["agent-1"]}},
                {"terms": {"acl_groups": ["travel-agents", "*"]}},
            ],
            "minimum_should_match": 1,
        }
    } in filters


def test_always_on_exclusions_use_now():
    _, must_not = _clauses()
    now_iso = "2026-04-01T09:00:00+00:00"
    assert {"term": {"deleted": True}} in must_not
    assert {"range": {"embargo_until": {"gt": now_iso}}} in must_not
    assert {"range": {"retention_until": {"lt": now_iso}}} in must_not


def test_naive_now_is_taken_as_utc():
    assert policy_filter(AGENT, STAY, NOW.replace(tzinfo=None)) == policy_filter(AGENT, STAY, NOW)


def test_current_scope_excludes_superseded_and_applies_the_stay_window():
    filters, must_not = _clauses()
    assert {"exists": {"field": "superseded_by"}} in must_not
    # The record must start on or before the last stay day and end on or after the first.
    assert {
        "bool": {
            "should": [
                {"range": {"valid_from": {"lte": "2026-04-14T00:00:00+00:00"}}},
                {"bool": {"must_not": [{"exists": {"field": "valid_from"}}]}},
            ],
            "minimum_should_match": 1,
        }
    } in filters
    assert {
        "bool": {
            "should": [
                {"range": {"valid_to": {"gte": "2026-04-10T00:00:00+00:00"}}},
                {"bool": {"must_not": [{"exists": {"field": "valid_to"}}]}},
            ],
            "minimum_should_match": 1,
        }
    } in filters


def test_current_scope_without_dates_applies_today():
    filters, _ = _clauses(scope=RequestScope())
    assert {"range": {"valid_from": {"lte": "2026-04-01T00:00:00+00:00"}}} in _ranges(filters)
    assert {"range": {"valid_to": {"gte": "2026-04-01T00:00:00+00:00"}}} in _ranges(filters)


def _ranges(filters):
    return [c for f in filters for c in f.get("bool", {}).get("should", []) if "range" in c]


def test_historical_scope_without_dates_has_no_version_or_applicability_rule():
    filters, must_not = _clauses(scope=RequestScope(historical=True))
    assert {"exists": {"field": "superseded_by"}} not in must_not
    assert _ranges(filters) == []
    assert "valid_from" not in str(filters) and "valid_to" not in str(filters)


def test_historical_scope_with_as_of_applies_that_date_but_admits_old_versions():
    filters, must_not = _clauses(scope=RequestScope(historical=True, as_of=date(2025, 6, 1)))
    assert {"exists": {"field": "superseded_by"}} not in must_not
    assert _ranges(filters) == [
        {"range": {"valid_from": {"lte": "2025-06-01T00:00:00+00:00"}}},
        {"range": {"valid_to": {"gte": "2025-06-01T00:00:00+00:00"}}},
    ]


def test_without_a_booking_booking_scoped_records_are_excluded():
    filters, must_not = _clauses()
    assert {"exists": {"field": "booking_ids"}} in must_not
    assert "booking_ids" not in str(filters)


def test_with_a_booking_records_of_that_booking_or_none_are_admitted():
    filters, must_not = _clauses(scope=RequestScope(booking_ids=("JPN-2026-0417",)))
    assert {"exists": {"field": "booking_ids"}} not in must_not
    assert {
        "bool": {
            "should": [
                {"terms": {"booking_ids": ["JPN-2026-0417"]}},
                {"bool": {"must_not": [{"exists": {"field": "booking_ids"}}]}},
            ],
            "minimum_should_match": 1,
        }
    } in filters


def test_source_type_scope_is_a_plain_terms_filter():
    filters, _ = _clauses(scope=RequestScope(source_types=("contract", "review")))
    assert {"terms": {"source_type": ["contract", "review"]}} in filters


# --- authorize() on records -------------------------------------------------------------------


def test_current_contract_is_allowed_for_the_agent_and_stay():
    decision = authorize(AGENT, STAY, NOW, D1)
    assert decision.allowed, decision.summary()
    assert decision.policy_version == POLICY_VERSION
    assert decision.summary().startswith("allow: ")


def test_superseded_contract_is_denied_in_current_mode():
    decision = authorize(AGENT, STAY, NOW, D0)
    assert not decision.allowed
    # Both the version rule and the validity window (it ended 2026-03-31) refuse it.
    assert _failed(decision) == ["current-version", "applicability"]
    summary = decision.summary()
    assert summary.startswith("deny: ")
    assert "current-version: v2 superseded by D1-current-contract" in summary
    assert "applicability: valid 2025-04-01..2026-03-31" in summary


def test_superseded_contract_is_allowed_in_historical_mode_as_of_its_season():
    scope = RequestScope(historical=True, as_of=date(2025, 6, 1))
    decision = authorize(AGENT, scope, NOW, D0)
    assert decision.allowed, decision.summary()
    assert "current-version" not in [o.rule for o in decision.outcomes]


def test_other_tenant_is_denied():
    decision = authorize(AGENT, STAY, NOW, D5)
    assert _failed(decision) == ["tenant"]
    assert "tenant: tenant=demo-B" in decision.summary()


def test_metadata_cannot_grant_access():
    # The real tenant matches but the real ACL does not: metadata's open ACL and user are ignored.
    decision = authorize(AGENT, RequestScope(), NOW, D6)
    assert _failed(decision) == ["acl"]
    assert "acl: no ACL entry for the caller" in decision.summary()
    # And metadata claiming another tenant does not deny a record whose real tenant matches.
    opened = {**D6, "acl_groups": ["*"]}
    assert authorize(AGENT, RequestScope(), NOW, opened).allowed


def test_acl_user_entry_admits_without_a_group():
    src = {**D1, "acl_groups": [], "acl_users": ["agent-1"]}
    decision = authorize(AGENT, STAY, NOW, src)
    assert decision.allowed
    assert "acl user agent-1" in decision.summary()


def test_deleted_record_is_denied():
    decision = authorize(AGENT, STAY, NOW, {**D1, "deleted": True})
    assert _failed(decision) == ["deletion"]
    assert "deletion: deleted" in decision.summary()


def test_embargoed_record_is_denied_until_the_embargo_ends():
    src = {**D1, "embargo_until": "2026-04-02T00:00:00Z"}
    decision = authorize(AGENT, STAY, NOW, src)
    assert _failed(decision) == ["embargo"]
    assert "embargo: embargo until 2026-04-02" in decision.summary()
    # The moment the embargo ends the record is visible (the ES clause is `gt now`).
    assert authorize(AGENT, STAY, datetime(2026, 4, 2, tzinfo=UTC), src).allowed


def test_record_past_retention_is_denied():
    src = {**D1, "retention_until": "2026-03-31"}
    decision = authorize(AGENT, STAY, NOW, src)
    assert _failed(decision) == ["retention"]
    assert "retention: retention ended 2026-03-31" in decision.summary()
    assert authorize(AGENT, STAY, NOW, {**D1, "retention_until": "2026-12-31"}).allowed
    # Retained up to and including the instant it ends (the ES clause is `lt now`).
    assert authorize(AGENT, STAY, NOW, {**D1, "retention_until": "2026-04-01T09:00:00Z"}).allowed


@pytest.mark.parametrize(
    ("valid", "allowed"),
    [
        # Inclusive at both ends: a record valid from the last night or until the first night
        # still applies to the stay.
        ({"valid_from": "2026-04-14"}, True),
        ({"valid_from": "2026-04-15"}, False),
        ({"valid_to": "2026-04-10"}, True),
        ({"valid_to": "2026-04-09"}, False),
        ({"valid_from": "2026-04-11", "valid_to": "2026-04-12"}, True),
        ({}, True),
    ],
)
def test_validity_window_edges(valid, allowed):
    src = {k: v for k, v in D1.items() if k not in ("valid_from", "valid_to")} | valid
    decision = authorize(AGENT, STAY, NOW, src)
    assert decision.allowed is allowed
    assert _failed(decision) == ([] if allowed else ["applicability"])


def test_booking_record_needs_its_booking_in_scope():
    plain = RequestScope()
    assert _failed(authorize(AGENT, plain, NOW, D3)) == ["booking"]
    other = RequestScope(booking_ids=("JPN-2026-9999",))
    assert _failed(authorize(AGENT, other, NOW, D3)) == ["booking"]


def test_booking_match_is_exact():
    # Issue 36, item 7: the re-check lowercased both sides, so booking "jpn-2026-0417" reached
    # the record of booking "JPN-2026-0417". Scope ids compare exactly, as the keyword field
    # (no normalizer) does in the engine, whichever side carries the capitals.
    assert authorize(AGENT, RequestScope(booking_ids=("JPN-2026-0417",)), NOW, D3).allowed
    scope = RequestScope(booking_ids=("jpn-2026-0417",))
    assert _failed(authorize(AGENT, scope, NOW, D3)) == ["booking"]
    lower = {**D3, "booking_ids": ["jpn-2026-0417"]}
    upper = RequestScope(booking_ids=("JPN-2026-0417",))
    assert _failed(authorize(AGENT, upper, NOW, lower)) == ["booking"]


def test_records_without_booking_stay_visible_in_a_booking_question():
    scope = RequestScope(
        booking_ids=("JPN-2026-0417",), stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14)
    )
    assert authorize(AGENT, scope, NOW, D1).allowed


def test_property_and_source_type_scope():
    scope = STAY.model_copy(update={"property_ids": ("PROP-OSA-1",)})
    assert _failed(authorize(AGENT, scope, NOW, D1)) == ["property"]
    scope = STAY.model_copy(update={"property_ids": ("PROP-KYO-12",)})
    assert authorize(AGENT, scope, NOW, D1).allowed
    # Exact, as the keyword field compares it (issue 36, item 7).
    scope = STAY.model_copy(update={"property_ids": ("prop-kyo-12",)})
    assert _failed(authorize(AGENT, scope, NOW, D1)) == ["property"]
    scope = STAY.model_copy(update={"source_types": ("review",)})
    assert _failed(authorize(AGENT, scope, NOW, D1)) == ["source-type"]


# --- authorize() against an independent statement of the rules --------------------------------

TENANTS = ["demo-A", "demo-B"]
USERS = ["agent-1", "agent-2"]
GROUPS = ["travel-agents", "finance", "*"]
DAYS = [date(2025, 6, 1), date(2026, 3, 31), date(2026, 4, 1), date(2026, 4, 12), date(2027, 1, 1)]
BOOKINGS = ["JPN-2026-0417", "jpn-2026-0417", "OTHER-1"]
PROPERTIES = ["PROP-KYO-12", "prop-kyo-12", "PROP-OSA-1"]
JURISDICTIONS = ["JP", "jp", "FR"]
SOURCE_TYPES = ["contract", "review", "brochure"]
NOWS = [datetime(2026, 3, 31, 23, 0, tzinfo=UTC), NOW, datetime(2026, 4, 12, 0, 0, tzinfo=UTC)]


def _maybe(strategy):
    # Mostly absent: when every field is drawn freely a record fails some rule almost surely,
    # and the boundaries of the other rules are never reached.
    return st.integers(0, 3).flatmap(lambda i: strategy if i == 0 else st.none())


def _usually(value, strategy):
    return st.integers(0, 3).flatmap(lambda i: strategy if i == 0 else st.just(value))


def _day_text():
    return st.sampled_from(DAYS).map(date.isoformat)


principals = st.builds(
    Principal,
    tenant=st.sampled_from(TENANTS),
    user_id=st.sampled_from(USERS),
    groups=st.lists(st.sampled_from(GROUPS[:2]), unique=True).map(tuple),
)


@st.composite
def sources(draw, p: Principal):
    fields = {
        "tenant": draw(_usually(p.tenant, st.sampled_from([*TENANTS, None]))),
        "acl_users": draw(_maybe(st.lists(st.sampled_from(USERS), unique=True))),
        "acl_groups": draw(
            _usually([*p.groups, "*"], st.none() | st.lists(st.sampled_from(GROUPS), unique=True))
        ),
        "deleted": draw(_maybe(st.booleans())),
        "embargo_until": draw(_maybe(_day_text())),
        "retention_until": draw(_maybe(_day_text())),
        "superseded_by": draw(_maybe(st.just("D1-current-contract"))),
        "valid_from": draw(_maybe(_day_text())),
        "valid_to": draw(_maybe(_day_text())),
        "booking_ids": draw(_maybe(st.lists(st.sampled_from(BOOKINGS), max_size=2))),
        "property_ids": draw(_maybe(st.lists(st.sampled_from(PROPERTIES), max_size=2))),
        "jurisdiction": draw(_maybe(st.sampled_from(JURISDICTIONS))),
        "source_type": draw(_maybe(st.sampled_from(SOURCE_TYPES))),
    }
    # A missing field and a null one must be judged alike: drop some of the Nones.
    return {k: v for k, v in fields.items() if v is not None or draw(st.booleans())}


@st.composite
def scopes(draw):
    dates = draw(st.sampled_from(["none", "as_of", "stay"]))
    kwargs = {}
    if dates == "as_of":
        kwargs["as_of"] = draw(st.sampled_from(DAYS))
    elif dates == "stay":
        a, b = sorted(draw(st.lists(st.sampled_from(DAYS), min_size=2, max_size=2)))
        kwargs["stay_from"], kwargs["stay_to"] = a, b

    def scoped(pool):
        return tuple(draw(_maybe(st.lists(st.sampled_from(pool), min_size=1, max_size=2))) or ())

    return RequestScope(
        historical=draw(st.booleans()),
        # Scope values in the records' case and in others: both sides compare exactly.
        booking_ids=scoped(["jpn-2026-0417", "JPN-2026-0417", "OTHER-1"]),
        property_ids=scoped(["prop-kyo-12", "PROP-KYO-12", "PROP-OSA-1"]),
        jurisdictions=scoped(JURISDICTIONS),
        source_types=scoped(SOURCE_TYPES),
        **kwargs,
    )


@st.composite
def cases(draw):
    p = draw(principals)
    return p, draw(scopes()), draw(st.sampled_from(NOWS)), draw(sources(p))


def _day(text):
    return None if text is None else date.fromisoformat(text)


def _midnight(text):
    return None if text is None else datetime.combine(_day(text), time.min, tzinfo=UTC)


def _overlaps(mine, wanted):
    return set(mine) & set(wanted)


def reference_allows(p: Principal, scope: RequestScope, now: datetime, src: dict) -> bool:
    """The rules restated from the design, independently of policy.py."""
    today = now.date()
    if src.get("tenant") != p.tenant:
        return False
    users, groups = src.get("acl_users") or [], src.get("acl_groups") or []
    if p.user_id not in users and not (set(groups) & {*p.groups, "*"}):
        return False
    if src.get("deleted"):
        return False
    # Dates in the pool are whole days, i.e. midnight UTC.
    embargo = _midnight(src.get("embargo_until"))
    if embargo is not None and embargo > now:
        return False
    retention = _midnight(src.get("retention_until"))
    if retention is not None and retention < now:
        return False
    if not scope.historical and src.get("superseded_by"):
        return False
    dated = scope.as_of is not None or scope.stay_from is not None
    if not scope.historical or dated:
        first = scope.stay_from or scope.as_of or today
        last = scope.stay_to or scope.as_of or today
        vf, vt = _day(src.get("valid_from")), _day(src.get("valid_to"))
        if (vf is not None and vf > last) or (vt is not None and vt < first):
            return False
    bookings = src.get("booking_ids") or []
    if scope.booking_ids:
        if bookings and not _overlaps(bookings, scope.booking_ids):
            return False
    elif bookings:
        return False
    properties = src.get("property_ids") or []
    if scope.property_ids and properties and not _overlaps(properties, scope.property_ids):
        return False
    jurisdiction = src.get("jurisdiction")
    if scope.jurisdictions and jurisdiction and not _overlaps([jurisdiction], scope.jurisdictions):
        return False
    return not (scope.source_types and src.get("source_type") not in scope.source_types)


@settings(database=None, max_examples=1000)
@given(case=cases())
def test_authorize_agrees_with_the_reference_rules(case):
    p, scope, now, src = case
    decision = authorize(p, scope, now, src)
    assert decision.allowed == reference_allows(p, scope, now, src), decision.summary()
    # A denial always names at least one failed rule, an allowance none.
    assert decision.allowed == (not _failed(decision))


@pytest.mark.parametrize("scope", [STAY, RequestScope(historical=True)])
def test_authorize_evaluates_one_outcome_per_rule(scope):
    decision = authorize(AGENT, scope, NOW, D1)
    rules = [o.rule for o in decision.outcomes]
    assert len(rules) == len(set(rules))
    assert rules[:5] == ["tenant", "acl", "deletion", "embargo", "retention"]
