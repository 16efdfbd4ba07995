"""The travel fixture's (tests/fixtures/travel.jsonl) shared question, caller and clock, named once
so the suites that ask the golden question ask the same one. A module that needs another value on
purpose (a later clock, a caller with a ``scope_version``) keeps its own constant."""

from __future__ import annotations

from datetime import UTC, datetime

from hybrid_es.models import Principal

NOW = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
"""The clock policy filters are read at: D1's 2026-27 contract is in force, D0's has expired."""

QUERY = "KYO-H12 April roll-in shower rate"
"""The golden question: D1 answers it (JPY 31,500), D0 answers it too but is stale."""

AGENT = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
"""demo-A's travel agent: sees the tenant's contracts (ACL group ``travel-agents``)."""
