"""A packet ``_id`` digests its owner under the deployment's secret (issue 36, item 7).

The owner's part of ``<tenant>::<owner digest>::<packet id>`` was an unkeyed SHA-256 of the user
id: whoever saw a packet ``_id`` (a proxy's access log of the GET, an audit log) could hash a
guessed user id and confirm it. With ``HYBRID_ES_TRACE_HASH_KEY`` set it is an HMAC, and the
same in every process of the deployment, so ``packet build`` and a later ``packet show`` agree.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from elasticsearch import Elasticsearch

from hybrid_es.identity import owner_digest, packet_key
from hybrid_es.models import Principal
from hybrid_es.packets.store import PacketStore, owner_secret
from hybrid_es.settings import Settings

SECRET = "a deployment secret"
OWNER = Principal(tenant="demo-A", user_id="manager")
PID = "JPN-2026-0417-packet-v1"


def _store(secret: str | None) -> PacketStore:
    s = Settings(trace_hash_key=secret)
    return PacketStore(Elasticsearch("http://127.0.0.1:9"), owner_secret=owner_secret(s))


def test_a_guessed_user_id_does_not_confirm_a_keyed_packet_id():
    key = _store(SECRET).key(OWNER, PID)
    tenant, digest, pid = key.split("::")
    # What anyone can compute from a guess is not in it; the tenant and the packet id still are.
    guessed = hashlib.sha256(b"manager").hexdigest()
    assert guessed[:24] != digest and guessed[:16] not in key
    assert (tenant, pid) == ("demo-A", PID)
    assert len(digest) == 24
    # Another secret, another id; another tenant or owner, another id.
    assert _store("another secret").key(OWNER, PID) != key
    other_tenant = Principal(tenant="demo-B", user_id="manager")
    assert _store(SECRET).key(other_tenant, PID).split("::")[1] == digest  # same owner digest...
    assert _store(SECRET).key(other_tenant, PID) != key  # ...under another tenant
    assert _store(SECRET).key(Principal(tenant="demo-A", user_id="agent-1"), PID) != key


def test_the_secret_is_bound_to_packet_owners_not_shared_with_query_hashes():
    # Traces keep HMAC(secret, query text): a query that spells a user id must not hash to
    # that user's packet digest.
    from hybrid_es.hashing import keyed_digest

    secret = SECRET.encode()
    assert keyed_digest(secret, "manager", length=24) != owner_digest("manager", secret)


def test_without_a_secret_the_digest_is_the_unkeyed_one_packets_were_stored_under():
    # A deployment without a secret keeps finding the packets it stored before keying.
    assert owner_secret(Settings(trace_hash_key=None)) is None
    assert _store(None).key(OWNER, PID) == (
        f"demo-A::{hashlib.sha256(b'manager').hexdigest()[:24]}::{PID}"
    )


def test_every_process_of_a_deployment_computes_the_same_packet_id():
    # packet build and packet show are separate processes: a key drawn per process (as traces
    # draw one when none is set) would lose every packet between them.
    program = (
        "from hybrid_es.identity import packet_key\n"
        "from hybrid_es.packets.store import owner_secret\n"
        "from hybrid_es.settings import Settings\n"
        f"print(packet_key('demo-A', 'manager', {PID!r}, owner_secret(Settings())))\n"
    )
    ids = set()
    for secret in (SECRET, SECRET, None):
        env = {k: v for k, v in os.environ.items() if k != "HYBRID_ES_TRACE_HASH_KEY"}
        if secret is not None:
            env["HYBRID_ES_TRACE_HASH_KEY"] = secret
        out = subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
        )
        ids.add((secret, out.stdout.strip()))
    assert ids == {
        (SECRET, _store(SECRET).key(OWNER, PID)),
        (None, _store(None).key(OWNER, PID)),
    }
    assert packet_key("demo-A", "manager", PID, SECRET.encode()) == _store(SECRET).key(OWNER, PID)
