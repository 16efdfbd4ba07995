"""The scratch corpus ``verify --write`` ingests: two tenants' generated documents, the records the
policy filter must keep out, and the queries. Pure and deterministic (a seeded generator): every
run, on every cluster, asks the same questions of the same records.

Every restricted record holds :data:`PHRASE`, as does one record the caller may read: a search
for the phrase must find that one and none of the others, whichever leg scores them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hybrid_es.ingest.documents import Document
from hybrid_es.models import EVERYONE, Principal

SEED = 20261201
PER_TENANT = 16
PHRASE = "lighthouse harbour tariff"
"""In every restricted record and in :data:`VISIBLE`; in no generated document (none of its words
is in the vocabulary)."""
GROUP = "verify-agents"
VISIBLE = "verify-visible"
"""The caller's own record with the phrase: the legs must find it (else the check proves
nothing)."""
SUPERSEDED = "verify-superseded"
"""Two versions: version 1 holds the phrase and is superseded by version 2, which does not."""
RESTRICTED = {
    "verify-other-tenant": "another tenant's",
    "verify-deleted": "deleted",
    "verify-acl": "for another group only",
    "verify-embargoed": "under embargo",
    SUPERSEDED: "a superseded version",
}
"""The records the first tenant's caller must never meet, and why."""

_VOCABULARY = (
    "hotel room rate contract season breakfast shuttle airport transfer suite balcony garden "
    "ocean view deposit refund cancel policy guest arrival departure night weekend holiday "
    "family child infant cot extra bed single double twin king queen accessible ramp lift "
    "parking valet spa pool gym sauna dinner lunch menu allergy vegan kosher halal wine bar "
    "terrace rooftop lobby reception concierge luggage storage laundry minibar safe wifi "
    "meeting conference wedding group tour guide ticket museum temple shrine garden castle "
    "river mountain lake forest village market station ferry bus taxi train platform "
    "invoice currency commission allotment release inventory quota blackout surcharge tax "
    "fee voucher booking itinerary amendment confirmation supplier partner agency region"
)
_WORDS = tuple(_VOCABULARY.split())


@dataclass(frozen=True)
class ScratchCorpus:
    """The documents of both tenants (each tenant's to be ingested as that tenant), their
    callers, and the queries asked of each."""

    tenants: tuple[str, str]
    documents: tuple[Document, ...]
    callers: tuple[Principal, Principal]
    queries: tuple[str, ...]
    """Asked by each caller (fusion items); the first is the phrase."""

    def of(self, tenant: str) -> list[Document]:
        return [d for d in self.documents if d.tenant == tenant]


def scratch_corpus(tag: str, now: datetime) -> ScratchCorpus:
    """The corpus for a run whose scratch objects carry ``tag`` (the tenants are
    ``verify-<tag>-a`` and ``-b``); ``now`` dates the embargo (a year ahead)."""
    a, b = f"verify-{tag}-a", f"verify-{tag}-b"
    rng = random.Random(SEED)
    docs: list[Document] = []
    for tenant in (a, b):
        for i in range(PER_TENANT):
            groups = (EVERYONE,) if i % 3 == 0 else (GROUP,)
            docs.append(
                Document(
                    id=f"verify-{i:02d}",
                    tenant=tenant,
                    title=_sentence(rng, 3, 6),
                    body=" ".join(_sentence(rng, 6, 12) + "." for _ in range(rng.randint(3, 6))),
                    acl_groups=groups,
                )
            )
    docs += _special(a, b, now)
    queries = [PHRASE]
    for doc in rng.sample(docs[: 2 * PER_TENANT], 6):
        words = doc.body.replace(".", "").split()
        start = rng.randrange(len(words) - 4)
        queries.append(" ".join(words[start : start + rng.randint(3, 5)]))
    callers = (
        Principal(tenant=a, user_id="verify-user", groups=(GROUP,)),
        Principal(tenant=b, user_id="verify-user", groups=(GROUP,)),
    )
    return ScratchCorpus((a, b), tuple(docs), callers, tuple(queries))


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(_WORDS, k=rng.randint(low, high))).capitalize()


def _special(a: str, b: str, now: datetime) -> list[Document]:
    """The phrase's records: the visible one, then each restricted one (the superseded record
    twice: version 1 with the phrase, version 2 without it)."""
    text = f"The {PHRASE} applies to every berth on the quay."
    everyone = (EVERYONE,)

    def doc(
        tenant: str, id: str, *, body: str = text, acl: tuple[str, ...] = everyone, **kw: Any
    ) -> Document:
        return Document(
            id=id, tenant=tenant, title="Harbour notice", body=body, acl_groups=acl, **kw
        )

    return [
        doc(a, VISIBLE),
        doc(b, "verify-other-tenant"),
        doc(a, "verify-deleted", deleted=True),
        doc(a, "verify-acl", acl=("verify-other-group",)),
        doc(a, "verify-embargoed", embargo_until=now + timedelta(days=365)),
        doc(a, SUPERSEDED, version=1),
        doc(a, SUPERSEDED, version=2, body="The quay is closed for works this week."),
    ]
