"""Item 4: document-level security, with a scratch tenant reader role and a credential bound to it.

The role is the product's own (``security.install_tenant_reader``: ``bootstrap --tenant``'s),
for the first scratch tenant, naming exactly the scratch chunks and corpus-state indices. The
credential: on Elasticsearch an API key whose role descriptor is that role's body (an hour's
expiry on top of the removal), on OpenSearch an internal user with the role's backend role. Over
that credential, with no client filter at all, a ``match_all``, a count and the kNN leg must see
exactly the first tenant's records (deleted and restricted ones included: document-level security
binds the tenant, the policy filter the rest), and the searcher must answer that tenant's caller
(on OpenSearch 2.19 through the neural-search#1303 workaround).

Where the cluster cannot store such a role (security off, a licence without document-level
security, Elasticsearch's integ-test node without a native role store) or the credentials may not
create one (no ``manage_security``), the item is unavailable, with that reason.
"""

from __future__ import annotations

import functools
import secrets
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from hybrid_es.cluster.access import access_of
from hybrid_es.cluster.bootstrap import roles_skipped_because
from hybrid_es.cluster.capabilities import Capabilities
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.cluster.security import install_tenant_reader
from hybrid_es.cluster.templates import backend_role, render_role
from hybrid_es.errors import EngineError, HybridEsError
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.dialects import dialect_for
from hybrid_es.retrieval.door import control_reads
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.verify.corpus import PHRASE
from hybrid_es.verify.report import Check, failed, passed, skipped, unavailable
from hybrid_es.verify.scratch import INFIX, Scratch, taken

ITEM = 4
OS_API = "/_plugins/_security/api"


@dataclass(frozen=True)
class Reader:
    """The scratch credential, connected: its engine, the tenant it is bound to, and what it is
    (``API key hybrid-es-verify-<tag>``)."""

    engine: Engine
    tenant: str
    credential: str


def why_not(caps: Capabilities) -> str:
    """Why this cluster, or these credentials, cannot make the scratch role ("" when they can).
    Read-only: from the capability probe."""
    skip = roles_skipped_because(caps)
    if skip and caps.flavor != "opensearch" and not caps.native_security_store:
        note = next((n for n in caps.notes if n.startswith("native users/roles")), "")
        if note:
            return f"no native role store ({note.split('; --probe-writes')[0]})"
    if skip:
        return skip
    access = access_of(caps.privileges, "bootstrap --tenant")
    if access.allowed is False:
        who = caps.user or "these credentials"
        return f"{who} may not create a scratch role: lacks {'; '.join(access.missing)}"
    return ""


def make_reader(scratch: Scratch) -> Reader:
    """Install the scratch tenant reader role and a credential bound to it, each removal
    registered first; the credential, connected. Raises the engine's error (AuthenticationError
    403: the credentials may not)."""
    engine, tenant = scratch.engine, scratch.corpus.tenants[0]
    name, body = render_role(
        tenant, scratch.layout, directory=scratch.settings.templates_dir, flavor=engine.flavor
    )
    install = functools.partial(
        install_tenant_reader, engine, tenant, scratch.layout, scratch.settings.templates_dir
    )
    who = f"hybrid-es{INFIX}{scratch.tag}"
    # Every PUT below overwrites an object of the same name, and every removal deletes it:
    # each name is checked first, so that a name taken before the run stops it (scratch.taken)
    # rather than being overwritten and then deleted.
    if engine.flavor == "opensearch":
        for what, api in (("role", "roles"), ("role mapping", "rolesmapping")):
            if _exists(engine, f"{OS_API}/{api}/{name}"):
                raise taken(f"{what} {name}", scratch.tag)
        # Two objects in one call (the role, then its mapping): whatever it answers, the role
        # may exist, so both removals stay registered.
        for what, api in (("role mapping", "rolesmapping"), ("role", "roles")):
            scratch.undo(f"{what} {name}", functools.partial(_delete, engine, f"{api}/{name}"))
        install()
        scratch.made += [f"role {name}", f"role mapping {name}"]
        password = f"Hv-{secrets.token_hex(12)}-Aa1!"
        user = {
            "password": password,
            "backend_roles": [backend_role(tenant, scratch.layout.namespace)],
        }
        scratch.make(
            f"internal user {who}",
            functools.partial(_request, engine, "PUT", f"{OS_API}/internalusers/{who}", user),
            functools.partial(_delete, engine, f"internalusers/{who}"),
            exists=functools.partial(_exists, engine, f"{OS_API}/internalusers/{who}"),
        )
        update: dict[str, Any] = {"username": who, "password": SecretStr(password)}
        credential = f"internal user {who}"
    else:
        path = f"/_security/role/{name}"
        scratch.make(
            f"role {name}",
            install,
            functools.partial(_request, engine, "DELETE", path),
            exists=functools.partial(_exists, engine, path),
        )
        key: dict[str, Any] = {}
        request = {"name": who, "expiration": "1h", "role_descriptors": {name: body}}
        scratch.make(
            f"API key {who}",
            lambda: key.update(_request(engine, "POST", "/_security/api_key", request)),
            functools.partial(_invalidate, engine, who, key),
            exists=functools.partial(_own_active_key, engine, who),
        )
        update = {"api_key": SecretStr(str(key["encoded"])), "username": None, "password": None}
        credential = f"API key {who}"
    settings = scratch.settings.model_copy(update={"bearer_auth": None, **update})
    return Reader(connect(settings), tenant, credential)


def _request(engine: Engine, method: str, path: str, body: Any = None) -> Any:
    return engine.request(method, path, body=body, what=f"verify: {method} {path}")


def _delete(engine: Engine, path: str) -> None:
    _request(engine, "DELETE", f"{OS_API}/{path}")


def _exists(engine: Engine, path: str) -> bool:
    """Whether ``GET path`` finds the object (404: it does not)."""
    try:
        _request(engine, "GET", path)
    except EngineError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _own_active_key(engine: Engine, name: str) -> bool:
    """Whether these credentials own an active API key named ``name``."""
    params = {"name": name, "owner": "true", "active_only": "true"}
    try:
        found = engine.request("GET", "/_security/api_key", params=params, what="reading API keys")
    except EngineError as exc:
        if exc.status == 404:  # some versions answer "none" so
            return False
        raise
    return bool(found.get("api_keys"))


def _invalidate(engine: Engine, name: str, key: dict[str, Any]) -> None:
    # By its id once the key is known; by name (among these credentials' own keys, which held
    # none of that name before) only when its creation got no answer.
    body = {"ids": [key["id"]]} if key.get("id") else {"name": name, "owner": True}
    engine.request("DELETE", "/_security/api_key", body=body, what="invalidating a scratch API key")


def check_dls(scratch: Scratch | None, reader: Reader | None, why: str) -> Check:
    """Item 4. ``why``: why there is no reader (the cluster's or the credentials' reason)."""
    if why:
        return unavailable(ITEM, why)
    if scratch is None:
        return skipped(ITEM, "a scratch role and credential bound to one scratch tenant")
    if reader is None:
        return failed(ITEM, "the scratch credential could not be made")
    try:
        return _check(scratch, reader)
    except HybridEsError as exc:
        return failed(ITEM, f"as {reader.credential}: {exc.message[:300]}")


def _check(scratch: Scratch, reader: Reader) -> Check:
    index, own = scratch.index, reader.tenant
    expected = {k for k in scratch.records if scratch.tenant_of(k) == own}
    engine, params = reader.engine, RetrievalParams()
    size = len(scratch.records) + 10
    seen = {
        "match_all": _keys(engine, index, {"query": {"match_all": {}}, "size": size}),
        "kNN leg": _keys(
            engine,
            index,
            dialect_for(engine.flavor).dense_body(_vector(scratch), {"match_all": {}}, params),
        ),
    }
    problems = [
        f"{what} returned {key} of tenant {scratch.tenant_of(key)}"
        for what, keys in seen.items()
        for key in sorted(keys)
        if key not in expected
    ]
    if seen["match_all"] != expected:
        problems.append(f"match_all saw {len(seen['match_all'])} records, not {len(expected)}")
    with control_reads("verify: the scratch reader's count, no client filter"):
        count = engine.count(index)
    if count != len(expected):
        problems.append(f"count is {count}, not {len(expected)}")
    searcher = HybridSearcher(
        engine, scratch.embedder, index=index, corpus_state_index=scratch.layout.corpus_state
    )
    response = searcher.search(
        PHRASE, scratch.corpus.callers[0], RequestScope(), rerank=False, now=scratch.now
    )
    details = [
        f"{reader.credential} (role for tenant {own}), no client filter: match_all "
        f"{len(seen['match_all'])} of {len(scratch.records)} records, count {count}, kNN leg "
        f"{len(seen['kNN leg'])}: all tenant {own}'s",
        f"the searcher over it: {len(response.hits)} hits ({response.fusion_path})",
    ]
    if not response.hits:
        problems.append("the searcher found nothing for the credential's own tenant")
    if problems:
        return failed(ITEM, problems[0], [*details, *problems[1:]])
    return passed(ITEM, f"{reader.credential} sees only its tenant, with no client filter", details)


def _keys(engine: Engine, index: str, body: dict[str, Any]) -> set[str]:
    with control_reads("verify: as the scratch reader, no client filter"):
        resp = engine.search(index, {**body, "_source": False}, what="verify: scratch reader")
    return {str(h["_id"]) for h in resp["hits"]["hits"]}


def _vector(scratch: Scratch) -> list[float]:
    return [float(x) for x in scratch.embedder.embed_queries([PHRASE])[0]]
