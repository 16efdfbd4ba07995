"""``hybrid-es verify`` on the engine under test (issue 25, item 6).

On Elasticsearch's integ-test node the native items are unavailable, each with its reason (no
rank-rrf module; linear is fused client-side on Elasticsearch; no native role store), and every
other item passes; on OpenSearch the native rrf and linear items and document-level security pass
as well. A read-only run sends only reads and names what it skipped; a credential that may not
write (``hybrid-es-app``) runs the read-only items and names what it could not try; and a writing
run interrupted by SIGINT or SIGTERM while its scratch objects exist removes every one of them.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hybrid_es.cluster.capabilities import native_fusion_works
from hybrid_es.cluster.security import install_deployment_roles
from hybrid_es.errors import EngineError
from hybrid_es.tenancy import IndexLayout
from hybrid_es.verify.dls import why_not
from hybrid_es.verify.fusion import ES_LINEAR
from hybrid_es.verify.report import NEEDS_WRITE
from hybrid_es.verify.run import HOLD, verify
from hybrid_es.verify.scratch import INFIX

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
OS_API = "/_plugins/_security/api"
READS = {
    "_search",
    "_msearch",
    "_analyze",
    "_count",
    "_mget",
    "_field_caps",
    "_has_privileges",
    "_simulate",
    "_simulate_index",
}
"""The endpoints a POST may go to and still only read."""


def leftovers(es: Any) -> list[str]:
    """Every scratch object of a verify run on the cluster: indices (open, closed or hidden),
    and on OpenSearch roles, role mappings and internal users, on Elasticsearch roles and active
    API keys, whose name holds ``-verify-``."""
    found = es.request(
        "GET",
        f"/*{INFIX}*",
        params={
            "expand_wildcards": "all",
            "allow_no_indices": True,
            "ignore_unavailable": True,
            "filter_path": "*.settings.index.provided_name",
        },
        what="listing scratch indices",
    )
    out = [f"index {name}" for name in sorted(found or {})]
    if es.flavor == "opensearch":
        for what in ("roles", "rolesmapping", "internalusers"):
            names = es.request("GET", f"{OS_API}/{what}", what="listing")
            out += [f"{what} {n}" for n in sorted(names) if INFIX in n]
        return out
    try:  # the integ-test node has no native role store: nothing to list there
        roles = es.request("GET", "/_security/role", what="listing roles")
        out += [f"role {n}" for n in sorted(roles) if INFIX in n]
        keys = es.request(
            "GET", "/_security/api_key", params={"active_only": True}, what="listing API keys"
        )
        out += [f"API key {k['name']}" for k in keys.get("api_keys", []) if INFIX in k["name"]]
    except EngineError:
        pass
    return out


def _is_read(method: str, target: str) -> bool:
    if method in ("GET", "HEAD"):
        return True
    return method == "POST" and any(s in READS for s in target.split("?")[0].split("/"))


def test_a_writing_run_checks_every_item_and_removes_its_scratch_objects(
    es, settings, caps, bootstrapped
):
    report = verify(es, settings, write=True)
    by = {c.item: c for c in report.checks}
    assert sorted(by) == list(range(10))  # 8: the index source, where one is configured
    for item in (0, 3, 5, 6, 7):
        assert by[item].status == "pass", by[item]
    assert report.ok, report.failed
    assert "made and removed: index hybrid-es-chunks-t-verify-" in by[0].details[0]
    assert "restricted records" in by[3].details[1]
    if es.flavor == "opensearch":
        for item in (1, 2, 4):
            assert by[item].status == "pass", by[item]
        assert "internal user hybrid-es-verify-" in by[4].reason
        assert by[5].reason == "the full profile's analyzers answer as expected"
    else:
        assert (by[2].status, by[2].reason) == ("unavailable", ES_LINEAR)
        works, why = native_fusion_works(es, "rrf")
        assert by[1].status == ("pass" if works else "unavailable"), by[1]
        if not works:
            assert by[1].reason == why.removeprefix("rrf: ")
        dls = why_not(caps)
        assert by[4].status == ("unavailable" if dls else "pass"), by[4]
        if dls:
            assert by[4].reason == dls
    assert not [c for c in report.checks if c.skipped]
    assert leftovers(es) == []


def test_the_integ_test_node_says_why_each_native_item_is_unavailable(es, settings, caps):
    if es.flavor == "opensearch" or caps.native_rrf or caps.native_security_store:
        pytest.skip(f"{es.flavor} {es.version} runs the native items (asserted above)")
    report = verify(es, settings, caps=caps)
    works, why = native_fusion_works(es, "rrf")
    assert not works and report.check(1).reason == why.removeprefix("rrf: ")
    assert "no rank-rrf module" in why or "licence" in why
    assert report.check(2).reason == ES_LINEAR
    assert report.check(4).reason.startswith("no native role store (")
    assert not any(report.check(i).skipped for i in (1, 2, 4))


def test_a_read_only_run_only_reads_and_names_what_it_skipped(wire, es, settings, bootstrapped):
    engine, log = wire
    report = verify(engine, settings)
    assert log
    writes = [f"{method} {target}" for method, target, _ in log if not _is_read(method, target)]
    assert writes == []
    skipped = {c.item for c in report.skipped}
    assert {0, 3} <= skipped
    assert all(c.reason.startswith(NEEDS_WRITE) for c in report.skipped)
    assert (
        report.check(0).reason
        == f"{NEEDS_WRITE}a scratch index with records of two scratch tenants"
    )
    if es.flavor == "opensearch":
        assert {1, 2, 4} <= skipped
    assert report.ok and not report.write
    assert leftovers(es) == []


def test_the_table_is_readable_at_80_columns(es, bootstrapped):
    proc = _cli(env={})
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, out
    assert "read-only" in lines[0] and "needs --write: a scratch index" in out
    assert "skipped: 0, " in out and "nothing failed" in out


@pytest.fixture
def app_env(es) -> Iterator[dict[str, str]]:  # type: ignore[no-untyped-def]
    """The environment of a ``hybrid-es-app`` credential: on Elasticsearch the file-realm user of
    scripts/es.sh (the node's password), on OpenSearch an internal user with the shipped role
    (installed for the test when the cluster lacks it, and removed again)."""
    if es.flavor != "opensearch":
        yield {"HYBRID_ES_USERNAME": "hybrid-es-app"}
        return
    try:
        es.request("GET", f"{OS_API}/roles/hybrid-es-app", what="reading a role")
        installed = False
    except EngineError:
        install_deployment_roles(es, IndexLayout())
        installed = True
    user, password = f"hes-app-{secrets.token_hex(4)}", f"Va-{secrets.token_hex(8)}-Aa1!"
    body = {"password": password, "opendistro_security_roles": ["hybrid-es-app"]}
    es.request("PUT", f"{OS_API}/internalusers/{user}", body=body, what="creating a test user")
    try:
        yield {"HYBRID_ES_USERNAME": user, "HYBRID_ES_PASSWORD": password}
    finally:
        es.request("DELETE", f"{OS_API}/internalusers/{user}", what="removing a test user")
        for role in ("hybrid-es-admin", "hybrid-es-ingest", "hybrid-es-app") if installed else ():
            es.request("DELETE", f"{OS_API}/roles/{role}", what="removing a test role")


def _cli(*args: str, env: dict[str, str], stdout: int = subprocess.PIPE) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hybrid_es.cli", "verify", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "80", **env},
    )


def test_a_credential_that_may_not_write_runs_the_read_only_items(es, bootstrapped, app_env):
    proc = _cli("--write", "--json", env=app_env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    report = json.loads(out)
    by = {c["item"]: c for c in report["checks"]}
    assert report["ok"] and report["write"] and report["user"] == app_env["HYBRID_ES_USERNAME"]
    assert by[0]["status"] == "unavailable" and by[0]["skipped"]
    assert "may not make the scratch index hybrid-es-chunks-t-verify-" in by[0]["reason"]
    assert by[3]["skipped"] and by[3]["reason"].startswith("not tried: ")
    assert {0, 3} <= set(report["skipped"])
    assert by[4]["status"] == "unavailable"
    if es.flavor == "opensearch":
        assert "may not create a scratch role" in by[4]["reason"]
        assert by[1]["skipped"] and by[2]["skipped"]
    # the file-realm hybrid-es-app may not read the server's version (cluster monitor)
    assert by[7]["status"] in ("pass", "unavailable")
    assert leftovers(es) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_run_leaves_no_scratch_object_behind(es, bootstrapped, caps, signum):
    proc = _cli("--write", env={HOLD: "300"}, stdout=subprocess.DEVNULL)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")))  # type: ignore[union-attr]
    reader.start()
    deadline = time.monotonic() + 240
    try:
        while not any("holding" in line for line in lines):
            assert proc.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "".join(lines)
            time.sleep(0.1)
        made = leftovers(es)
        assert any(m.startswith("index hybrid-es-chunks-t-verify-") for m in made), made
        assert any(m.startswith("index hybrid-es-corpus-state-verify-") for m in made), made
        if es.flavor == "opensearch" and not why_not(caps):
            kinds = {m.split()[0] for m in made}
            assert {"roles", "rolesmapping", "internalusers"} <= kinds, made
        proc.send_signal(signum)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=10)
        proc.stderr.close()  # type: ignore[union-attr]
    text = "".join(lines)
    assert proc.returncode == 128 + signum, text
    assert "interrupted" in text and "the scratch objects were removed" in text
    assert leftovers(es) == []


def test_a_scratch_name_taken_before_the_run_is_neither_used_nor_deleted(
    es, settings, bootstrapped
):
    """Before: the create found the index there, the run took it for its own, and the clean-up
    deleted it with its documents."""
    tag = f"taken{secrets.token_hex(3)}"
    theirs = f"{settings.corpus_state_index}{INFIX}{tag}"
    es.create_index(theirs)
    try:
        doc = {"tenant": "someone-else", "watermark": 7}
        es.request("PUT", f"/{theirs}/_doc/theirs", params={"refresh": "true"}, body=doc)
        report = verify(es, settings, write=True, tag=tag)
        item0 = report.check(0)
        assert item0.status == "fail" and theirs in item0.reason, item0
        assert "exists already" in item0.reason and "choose another tag" in item0.reason
        assert es.index_exists(theirs)
        assert es.request("GET", f"/{theirs}/_doc/theirs")["_source"] == doc
        assert leftovers(es) == [f"index {theirs}"]  # the run's own chunks index is gone
    finally:
        es.delete_index(theirs)


def test_a_scratch_user_taken_before_the_run_is_neither_overwritten_nor_deleted(
    es, settings, caps, bootstrapped
):
    """The scratch credential's name taken (OpenSearch's internal users: a PUT overwrites)."""
    if es.flavor != "opensearch" or why_not(caps):
        pytest.skip("needs a role store for the scratch credential (item 4): OpenSearch's")
    tag = f"taken{secrets.token_hex(3)}"
    who = f"hybrid-es{INFIX}{tag}"
    body = {"password": f"Va-{secrets.token_hex(8)}-Aa1!", "attributes": {"owner": "someone"}}
    es.request("PUT", f"{OS_API}/internalusers/{who}", body=body, what="a user of someone's")
    try:
        report = verify(es, settings, write=True, tag=tag)
        item4 = report.check(4)
        assert item4.status == "fail" and who in item4.reason and "exists already" in item4.reason
        assert report.check(0).status == "pass"  # the indices were the run's, and removed
        user = es.request("GET", f"{OS_API}/internalusers/{who}", what="reading the user")[who]
        assert user["attributes"] == {"owner": "someone"}
        assert leftovers(es) == [f"internalusers {who}"]
    finally:
        es.request("DELETE", f"{OS_API}/internalusers/{who}", what="removing the user")
