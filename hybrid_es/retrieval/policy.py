"""The hard policy filter, built once per request and placed inside every retriever leaf.

Each rule yields both an Elasticsearch clause (so restricted records are never scored) and a
Python check over a returned ``_source`` (so every hit carries a readable authorization decision,
and a hit that somehow fails a rule is caught). Both come from the same rule, so they cannot
drift apart. Pure: ``now`` is passed in.

The clauses are plain dicts, not ``elasticsearch.dsl`` queries: each reads as the JSON it sends,
beside its check, and the DSL's ``Bool`` would write ``minimum_should_match`` before ``should``,
so the filter in every request (and the golden bodies that pin it) would change order.
"""

from __future__ import annotations

from collections.abc import Callable
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


def _listify(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _missing(field: str) -> dict[str, Any]:
    return {"bool": {"must_not": [{"exists": {"field": field}}]}}


def _scoped(field: str, allowed: tuple[str, ...], label: str) -> Rule:
    """Records scoped by ``field`` must match ``allowed``; unscoped records are general.

    Values compare exactly, in the clause and in the check alike: ``field`` is a keyword without
    a normalizer (``es_templates/index/hybrid-es-chunks.json``), so ``terms`` matches the stored
    code points, as ``set`` intersection does here. A case-folding side on either one would let
    the two disagree about which records a caller may read."""

    def check(src: Source) -> RuleOutcome:
        have = {str(v) for v in _listify(src.get(field))}
        if not have:
            return RuleOutcome(rule=label, passed=True, detail=f"{label}: not {label}-specific")
        ok = bool(have & set(allowed))
        return RuleOutcome(rule=label, passed=ok, detail=f"{label} {sorted(have)}")

    clause = {
        "bool": {
            "should": [{"terms": {field: list(allowed)}}, _missing(field)],
            "minimum_should_match": 1,
        }
    }
    return Rule(label, [clause], [], check)


def _tenant(principal: Principal) -> Rule:
    def check(s: Source) -> RuleOutcome:
        return RuleOutcome(
            rule="tenant",
            passed=s.get("tenant") == principal.tenant,
            detail=f"tenant={s.get('tenant')}",
        )

    return Rule("tenant", [{"term": {"tenant": principal.tenant}}], [], check)


def _acl(principal: Principal) -> Rule:
    """The caller's user id is listed, or one of their groups (``*``: every user of the tenant)."""
    groups = [*principal.groups, EVERYONE]

    def check(s: Source) -> RuleOutcome:
        users = set(_listify(s.get("acl_users")))
        grp = set(_listify(s.get("acl_groups")))
        if principal.user_id in users:
            return RuleOutcome(rule="acl", passed=True, detail=f"acl user {principal.user_id}")
        shared = sorted(grp & set(groups))
        if shared:
            return RuleOutcome(rule="acl", passed=True, detail=f"acl group {shared[0]}")
        return RuleOutcome(rule="acl", passed=False, detail="no ACL entry for the caller")

    clause = {
        "bool": {
            "should": [
                {"terms": {"acl_users": [principal.user_id]}},
                {"terms": {"acl_groups": groups}},
            ],
            "minimum_should_match": 1,
        }
    }
    return Rule("acl", [clause], [], check)


def acl_clause(principal: Principal) -> dict[str, Any]:
    """The engine clause of the ACL rule alone (the one :func:`rules` puts in every policy)."""
    return _acl(principal).filter[0]


def acl_admits(principal: Principal, source: Source) -> bool:
    """Whether ``source``'s ACL lets ``principal`` read it: the search's own ACL rule (its user
    listed, or one of its groups, ``*`` meaning every user of the tenant), nothing else. The
    write authority (``ingest.authority``) asks this, so who may replace a record and who may
    read it cannot drift apart."""
    return _acl(principal).check(source).passed


def _not_deleted() -> Rule:
    def check(s: Source) -> RuleOutcome:
        deleted = bool(s.get("deleted", False))
        return RuleOutcome(
            rule="deletion", passed=not deleted, detail="deleted" if deleted else "not deleted"
        )

    return Rule("deletion", [], [{"term": {"deleted": True}}], check)


def _not_embargoed(now: datetime) -> Rule:
    def check(s: Source) -> RuleOutcome:
        until = _as_datetime(s.get("embargo_until"))
        return RuleOutcome(
            rule="embargo",
            passed=until is None or until <= now,
            detail="no embargo" if until is None else f"embargo until {until.date()}",
        )

    return Rule("embargo", [], [{"range": {"embargo_until": {"gt": now.isoformat()}}}], check)


def _retained(now: datetime) -> Rule:
    def check(s: Source) -> RuleOutcome:
        until = _as_datetime(s.get("retention_until"))
        ok = until is None or until >= now
        return RuleOutcome(
            rule="retention",
            passed=ok,
            detail="retained" if ok else f"retention ended {until.date()}",  # type: ignore[union-attr]
        )

    return Rule("retention", [], [{"range": {"retention_until": {"lt": now.isoformat()}}}], check)


def _current_version() -> Rule:
    def check(s: Source) -> RuleOutcome:
        newer = s.get("superseded_by")
        detail = f"v{s.get('version')} " + (f"superseded by {newer}" if newer else "current")
        return RuleOutcome(rule="current-version", passed=newer is None, detail=detail)

    return Rule("current-version", [], [{"exists": {"field": "superseded_by"}}], check)


def _applicable(lo: date, hi: date) -> Rule:
    """Valid at some point of ``lo..hi`` (open ends where a bound is missing)."""
    lo_dt, hi_dt = _as_datetime(lo), _as_datetime(hi)

    def check(s: Source) -> RuleOutcome:
        vf, vt = _as_datetime(s.get("valid_from")), _as_datetime(s.get("valid_to"))
        ok = (vf is None or vf <= hi_dt) and (vt is None or vt >= lo_dt)  # type: ignore[operator]
        span = f"{vf.date() if vf else '-'}..{vt.date() if vt else '-'}"
        return RuleOutcome(rule="applicability", passed=ok, detail=f"valid {span} for {lo}..{hi}")

    def bound(field: str, op: str, value: date) -> dict[str, Any]:
        return {
            "bool": {
                "should": [{"range": {field: {op: _iso(value)}}}, _missing(field)],
                "minimum_should_match": 1,
            }
        }

    return Rule(
        "applicability", [bound("valid_from", "lte", hi), bound("valid_to", "gte", lo)], [], check
    )


def _no_booking() -> Rule:
    """Outside a booking question, no booking-specific record."""

    def check(s: Source) -> RuleOutcome:
        specific = bool(_listify(s.get("booking_ids")))
        detail = (
            "booking-specific record outside a booking question"
            if specific
            else "not booking-specific"
        )
        return RuleOutcome(rule="booking", passed=not specific, detail=detail)

    return Rule("booking", [], [{"exists": {"field": "booking_ids"}}], check)


def _source_type(allowed: tuple[str, ...]) -> Rule:
    def check(s: Source) -> RuleOutcome:
        return RuleOutcome(
            rule="source-type",
            passed=s.get("source_type") in allowed,
            detail=f"source {s.get('source_type')}",
        )

    return Rule("source-type", [{"terms": {"source_type": list(allowed)}}], [], check)


def rules(principal: Principal, scope: RequestScope, now: datetime) -> list[Rule]:
    """The rules in force for this principal, scope and moment, in a fixed order."""
    now = _as_datetime(now)  # type: ignore[assignment]
    out = [
        _tenant(principal),
        _acl(principal),
        _not_deleted(),
        _not_embargoed(now),
        _retained(now),
    ]
    if not scope.historical:
        out.append(_current_version())
    if not scope.historical or scope.as_of is not None or scope.stay_from is not None:
        out.append(_applicable(*scope.window(now)))
    out.append(
        _scoped("booking_ids", scope.booking_ids, "booking") if scope.booking_ids else _no_booking()
    )
    if scope.property_ids:
        out.append(_scoped("property_ids", scope.property_ids, "property"))
    if scope.jurisdictions:
        out.append(_scoped("jurisdiction", scope.jurisdictions, "jurisdiction"))
    if scope.source_types:
        out.append(_source_type(scope.source_types))
    return out


def policy_filter(
    principal: Principal,
    scope: RequestScope,
    now: datetime,
    *,
    narrowed_by: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The single filter clause that every retriever leaf must carry.

    ``narrowed_by``: the caller's own filter, already translated (``filters.translate_filter``),
    appended as the last clause of the same ``bool.filter``: ANDed with every rule, so it can
    only narrow what the rules admit (its own ``$or`` and ``$not`` stay inside it), and every
    leaf that carries the policy carries it too. The rules' clauses are unchanged by it."""
    filters: list[dict[str, Any]] = []
    must_not: list[dict[str, Any]] = []
    for r in rules(principal, scope, now):
        filters.extend(r.filter)
        must_not.extend(r.must_not)
    if narrowed_by is not None:
        filters.append(narrowed_by)
    return {"bool": {"filter": filters, "must_not": must_not}}


def authorize(
    principal: Principal, scope: RequestScope, now: datetime, source: Source
) -> AuthorizationDecision:
    """Evaluate every rule against a record's ``_source``: the hit's authorization decision."""
    return authorizer(principal, scope, now)(source)


def authorizer(
    principal: Principal, scope: RequestScope, now: datetime
) -> Callable[[Source], AuthorizationDecision]:
    """:func:`authorize` for the records of one search: the rules are built once, not per
    record (building them was most of a search's re-check)."""
    in_force = rules(principal, scope, now)

    def decide(source: Source) -> AuthorizationDecision:
        outcomes = tuple(r.check(source) for r in in_force)
        return AuthorizationDecision(
            allowed=all(o.passed for o in outcomes),
            outcomes=outcomes,
            policy_version=POLICY_VERSION,
        )

    return decide
