"""The hard policy filter, built once per request and placed inside every retriever leaf.

Each rule yields both an Elasticsearch clause (so restricted records are never scored) and a
Python check over a returned ``_source`` (so every hit carries a readable authorization decision,
and a hit that somehow fails a rule is caught). Both come from the same rule, so they cannot
drift apart. Pure: ``now`` is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from hybrid_es.models import EVERYONE, AuthorizationDecision, Principal, RequestScope, RuleOutcome

POLICY_VERSION = "policy-v1"
"""Bump when a rule changes meaning: packets record it and are refreshed when it moves."""

Source = dict[str, Any]


@dataclass(frozen=True)
class Rule:
    name: str
    filter: list[dict[str, Any]]
    must_not: list[dict[str, Any]]
    check: Callable[[Source], RuleOutcome]


def _as_datetime(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime.combine(value, time.min)
    else:
        text = str(value).replace("Z", "+00:00")
        dt = datetime.fromisoformat(text)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _iso(d: date | datetime) -> str:
    return _as_datetime(d).isoformat()  # type: ignore[union-attr]


def _lower_set(values: Iterable[Any]) -> set[str]:
    return {str(v).lower() for v in values}


def _listify(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _missing(field: str) -> dict[str, Any]:
    return {"bool": {"must_not": [{"exists": {"field": field}}]}}


def _scoped(field: str, allowed: tuple[str, ...], label: str) -> Rule:
    """Records scoped by ``field`` must match ``allowed``; unscoped records are general."""

    def check(src: Source) -> RuleOutcome:
        have = _lower_set(_listify(src.get(field)))
        if not have:
            return RuleOutcome(rule=label, passed=True, detail=f"{label}: not {label}-specific")
        ok = bool(have & _lower_set(allowed))
        return RuleOutcome(rule=label, passed=ok, detail=f"{label} {sorted(have)}")

    clause = {
        "bool": {
            "should": [{"terms": {field: list(allowed)}}, _missing(field)],
            "minimum_should_match": 1,
        }
    }
    return Rule(label, [clause], [], check)


def rules(principal: Principal, scope: RequestScope, now: datetime) -> list[Rule]:
    """The rules in force for this principal, scope and moment."""
    now = _as_datetime(now)  # type: ignore[assignment]
    now_iso = now.isoformat()
    out: list[Rule] = []

    out.append(
        Rule(
            "tenant",
            [{"term": {"tenant": principal.tenant}}],
            [],
            lambda s: RuleOutcome(
                rule="tenant",
                passed=s.get("tenant") == principal.tenant,
                detail=f"tenant={s.get('tenant')}",
            ),
        )
    )

    groups = [*principal.groups, EVERYONE]

    def acl_check(s: Source) -> RuleOutcome:
        users = set(_listify(s.get("acl_users")))
        grp = set(_listify(s.get("acl_groups")))
        if principal.user_id in users:
            return RuleOutcome(rule="acl", passed=True, detail=f"acl user {principal.user_id}")
        shared = sorted(grp & set(groups))
        if shared:
            return RuleOutcome(rule="acl", passed=True, detail=f"acl group {shared[0]}")
        return RuleOutcome(rule="acl", passed=False, detail="no ACL entry for the caller")

    out.append(
        Rule(
            "acl",
            [
                {
                    "bool": {
                        "should": [
                            {"terms": {"acl_users": [principal.user_id]}},
                            {"terms": {"acl_groups": groups}},
                        ],
                        "minimum_should_match": 1,
                    }
                }
            ],
            [],
            acl_check,
        )
    )

    out.append(
        Rule(
            "deletion",
            [],
            [{"term": {"deleted": True}}],
            lambda s: RuleOutcome(
                rule="deletion",
                passed=not s.get("deleted", False),
                detail="deleted" if s.get("deleted") else "not deleted",
            ),
        )
    )

    def embargo_check(s: Source) -> RuleOutcome:
        until = _as_datetime(s.get("embargo_until"))
        ok = until is None or until <= now
        return RuleOutcome(
            rule="embargo",
            passed=ok,
            detail="no embargo" if until is None else f"embargo until {until.date()}",
        )

    out.append(Rule("embargo", [], [{"range": {"embargo_until": {"gt": now_iso}}}], embargo_check))

    def retention_check(s: Source) -> RuleOutcome:
        until = _as_datetime(s.get("retention_until"))
        ok = until is None or until >= now
        return RuleOutcome(
            rule="retention",
            passed=ok,
            detail="retained" if until is None or ok else f"retention ended {until.date()}",
        )

    out.append(
        Rule("retention", [], [{"range": {"retention_until": {"lt": now_iso}}}], retention_check)
    )

    if not scope.historical:
        out.append(
            Rule(
                "current-version",
                [],
                [{"exists": {"field": "superseded_by"}}],
                lambda s: RuleOutcome(
                    rule="current-version",
                    passed=s.get("superseded_by") is None,
                    detail=f"v{s.get('version')} current"
                    if not s.get("superseded_by")
                    else f"v{s.get('version')} superseded by {s.get('superseded_by')}",
                ),
            )
        )

    has_dates = scope.as_of is not None or scope.stay_from is not None
    if not scope.historical or has_dates:
        lo, hi = scope.window(now)
        lo_iso, hi_iso = _iso(lo), _iso(hi)

        def window_check(s: Source) -> RuleOutcome:
            vf, vt = _as_datetime(s.get("valid_from")), _as_datetime(s.get("valid_to"))
            ok = (vf is None or vf <= _as_datetime(hi)) and (vt is None or vt >= _as_datetime(lo))  # type: ignore[operator]
            span = f"{vf.date() if vf else '-'}..{vt.date() if vt else '-'}"
            return RuleOutcome(
                rule="applicability", passed=ok, detail=f"valid {span} for {lo}..{hi}"
            )

        out.append(
            Rule(
                "applicability",
                [
                    {
                        "bool": {
                            "should": [
                                {"range": {"valid_from": {"lte": hi_iso}}},
                                _missing("valid_from"),
                            ],
                            "minimum_should_match": 1,
                        }
                    },
                    {
                        "bool": {
                            "should": [
                                {"range": {"valid_to": {"gte": lo_iso}}},
                                _missing("valid_to"),
                            ],
                            "minimum_should_match": 1,
                        }
                    },
                ],
                [],
                window_check,
            )
        )

    if scope.booking_ids:
        out.append(_scoped("booking_ids", scope.booking_ids, "booking"))
    else:
        out.append(
            Rule(
                "booking",
                [],
                [{"exists": {"field": "booking_ids"}}],
                lambda s: RuleOutcome(
                    rule="booking",
                    passed=not _listify(s.get("booking_ids")),
                    detail="not booking-specific"
                    if not s.get("booking_ids")
                    else "booking-specific record outside a booking question",
                ),
            )
        )
    if scope.property_ids:
        out.append(_scoped("property_ids", scope.property_ids, "property"))
    if scope.jurisdictions:
        out.append(_scoped("jurisdiction", scope.jurisdictions, "jurisdiction"))
    if scope.source_types:
        allowed = scope.source_types
        out.append(
            Rule(
                "source-type",
                [{"terms": {"source_type": list(allowed)}}],
                [],
                lambda s: RuleOutcome(
                    rule="source-type",
                    passed=s.get("source_type") in allowed,
                    detail=f"source {s.get('source_type')}",
                ),
            )
        )
    return out


def policy_filter(principal: Principal, scope: RequestScope, now: datetime) -> dict[str, Any]:
    """The single filter clause that every retriever leaf must carry."""
    filters: list[dict[str, Any]] = []
    must_not: list[dict[str, Any]] = []
    for r in rules(principal, scope, now):
        filters.extend(r.filter)
        must_not.extend(r.must_not)
    return {"bool": {"filter": filters, "must_not": must_not}}


def authorize(
    principal: Principal, scope: RequestScope, now: datetime, source: Source
) -> AuthorizationDecision:
    """Evaluate every rule against a record's ``_source``: the hit's authorization decision."""
    outcomes = tuple(r.check(source) for r in rules(principal, scope, now))
    return AuthorizationDecision(
        allowed=all(o.passed for o in outcomes), outcomes=outcomes, policy_version=POLICY_VERSION
    )
