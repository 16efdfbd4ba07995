"""The Kibana import's requests (issue 14, item 1): the cluster's TLS settings and credentials, a
space, the user-agent; and its failures as one error each. Kibana cannot run on the build
machines (test_kibana.py checks the saved objects themselves), so a local HTTPS stand-in for its
import API receives them (tests/fixtures/https_stand_in.py).

Issue 37: the objects are named for the deployment's namespace, and an import leaves alone what
a user edited in Kibana: checked against the saved objects the product writes
(``kibana_objects.saved_objects``) in a stand-in that keeps them as Kibana's import and export
do (tests/fixtures/kibana_stand_in.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from hybrid_es.cluster.kibana import import_path, import_saved_objects, kibana_headers
from hybrid_es.cluster.kibana_objects import content, holds, key, saved_objects
from hybrid_es.errors import AuthenticationError, ConfigurationError, EngineUnavailableError
from hybrid_es.settings import Settings
from tests.fixtures.https_stand_in import HttpsStandIn
from tests.fixtures.kibana_stand_in import KibanaStandIn

FILES = sorted((Path(__file__).resolve().parents[2] / "es_templates" / "kibana").glob("*.ndjson"))


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("HYBRID_ES_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def ca(tmp_path: Path) -> Iterator[tuple[trustme.CA, Path]]:
    authority = trustme.CA()
    path = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    yield authority, path


def test_the_import_path_per_space():
    assert import_path() == "/api/saved_objects/_import"
    assert import_path("default") == "/api/saved_objects/_import"
    assert import_path("ops-team_2") == "/s/ops-team_2/api/saved_objects/_import"
    for bad in ("Ops Team", "../x", ""):
        with pytest.raises(ConfigurationError):
            import_path(bad)


def test_credentials_in_order_url_api_key_bearer_user():
    both = Settings(api_key="K", bearer_auth="T", username="u", password="p")
    assert kibana_headers(both, None)["authorization"] == "ApiKey K"
    url_auth = kibana_headers(both, ("kb", "pw"))["authorization"]
    assert url_auth == "Basic " + base64.b64encode(b"kb:pw").decode()
    assert kibana_headers(Settings(bearer_auth="T"), None)["authorization"] == "Bearer T"
    assert "authorization" not in kibana_headers(Settings(), None)
    assert kibana_headers(Settings(), None)["kbn-xsrf"] == "hybrid-es"


def test_imports_into_a_space_over_tls_with_the_api_key(ca):
    authority, ca_file = ca
    with HttpsStandIn(authority.issue_cert("127.0.0.1")) as kibana:
        done = import_saved_objects(
            kibana.url, Settings(ca_certs=ca_file, api_key="S3cret-key"), space="ops"
        )
    # The stand-in answers every import "success": all were created, in one request.
    assert done.imported == len(saved_objects()) and len(kibana.requests) == 1
    for request in kibana.requests:
        assert request["path"] == "/s/ops/api/saved_objects/_import?overwrite=false"
        assert request["headers"]["authorization"] == "ApiKey S3cret-key"
        assert request["headers"]["kbn-xsrf"] == "hybrid-es"
        assert request["headers"]["user-agent"].startswith("hybrid-es/")
        assert request["headers"]["content-type"].startswith("multipart/form-data; boundary=")
        assert b'"type":"index-pattern"' in request["body"] or b"visualization" in request["body"]


def test_imports_with_the_fingerprint_alone(ca):
    authority, _ = ca
    with HttpsStandIn(authority.issue_cert("127.0.0.1")) as kibana:
        served = ssl.get_server_certificate(("127.0.0.1", int(kibana.url.rsplit(":", 1)[1])))
        pin = hashlib.sha256(ssl.PEM_cert_to_DER_cert(served)).hexdigest()
        done = import_saved_objects(kibana.url, Settings(ssl_assert_fingerprint=pin))
        assert done.imported == len(saved_objects())
        with pytest.raises(ConfigurationError) as info:
            import_saved_objects(kibana.url, Settings(ssl_assert_fingerprint="ab" * 32))
    assert "HYBRID_ES_SSL_ASSERT_FINGERPRINT" in info.value.message


def test_a_wrong_ca_is_one_error_naming_the_setting(ca, tmp_path):
    authority, _ = ca
    other = tmp_path / "other.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    served = authority.issue_cert("127.0.0.1")
    with HttpsStandIn(served) as kibana, pytest.raises(ConfigurationError) as info:
        import_saved_objects(kibana.url, Settings(ca_certs=other, max_retries=0))
    assert "the TLS certificate of Kibana" in info.value.message
    assert "HYBRID_ES_CA_CERTS" in str(info.value)


@pytest.mark.parametrize(
    ("status", "error", "says"),
    [
        (401, AuthenticationError, "rejected the credentials"),
        (403, AuthenticationError, "may not manage saved objects in space 'ops'"),
        (404, ConfigurationError, "has no space 'ops'"),
    ],
)
def test_kibana_refusals_are_one_error_each(ca, status, error, says):
    authority, ca_file = ca
    kibana = HttpsStandIn(authority.issue_cert("127.0.0.1"), answer=(status, {"message": "no"}))
    with kibana, pytest.raises(error) as info:
        import_saved_objects(kibana.url, Settings(ca_certs=ca_file), space="ops")
    assert says in info.value.message


def test_an_unreachable_kibana_is_named():
    with pytest.raises(EngineUnavailableError) as info:
        import_saved_objects("http://127.0.0.1:1", Settings(max_retries=0))
    assert "Kibana at http://127.0.0.1:1" in info.value.message


# -- issue 37: namespaced objects, and a user's edits left alone ---------------------------------


def _file_objects() -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for f in FILES for line in f.read_text().splitlines() if line.strip()]


def test_the_default_namespace_writes_the_file_as_it_is():
    assert saved_objects() == _file_objects()


def test_a_namespace_names_every_object_and_its_data_view_reads_its_traces():
    ours = saved_objects(Settings(namespace="ops").layout())
    ids = {o["id"] for o in ours}
    assert len(ids) == len(_file_objects())
    assert all(i.startswith("hybrid-es.ops-") for i in ids)
    # Every reference resolves inside the namespace's own objects: none reaches the default's.
    assert all(r["id"] in ids for o in ours for r in o["references"])
    (view,) = [o for o in ours if o["type"] == "index-pattern"]
    assert view["id"] == "hybrid-es.ops-traces"
    assert view["attributes"]["title"] == "hybrid-es.ops-traces-*"
    (board,) = [o for o in ours if o["type"] == "dashboard"]
    assert board["attributes"]["title"] == "hybrid-es ops traces"
    assert all(o["attributes"]["title"].startswith("hybrid-es ops") for o in ours if o is not view)
    # Another deployment's ids are disjoint: both live in one Kibana space.
    assert ids.isdisjoint(o["id"] for o in saved_objects())


def test_the_data_view_reads_the_traces_setting():
    (view,) = [
        o
        for o in saved_objects(Settings(traces_index="hybrid-es-traces-eu").layout())
        if o["type"] == "index-pattern"
    ]
    assert view["attributes"]["title"] == "hybrid-es-traces-eu-*"


def _edit_dashboard(kibana: KibanaStandIn, space: str, dashboard_id: str) -> dict:  # type: ignore[type-arg]
    """What a user does in Kibana: retitle the dashboard and drop its first panel."""
    stored = kibana.objects[(space, "dashboard", dashboard_id)]
    attributes = stored["attributes"]
    panels = json.loads(attributes["panelsJSON"])[1:]
    attributes["title"] = "our traces (edited)"
    attributes["panelsJSON"] = json.dumps(panels)
    stored["references"] = stored["references"][1:]
    stored["version"] = "WzEwMDAsMV0="
    return json.loads(json.dumps(stored))


def test_an_edited_dashboard_is_left_alone_and_a_deleted_panel_comes_back():
    settings = Settings(namespace="ops")
    ours = saved_objects(settings.layout())
    with KibanaStandIn() as kibana:
        first = import_saved_objects(kibana.url, settings)
        assert set(first.created) == {o["id"] for o in ours}
        for o in ours:  # Kibana holds exactly the objects the product writes
            stored = kibana.objects[("default", o["type"], o["id"])]
            assert {k: v for k, v in stored.items() if k in o} == o

        # Nothing changed: nothing is written (an import that conflicts, an export, no third).
        kibana.requests.clear()
        again = import_saved_objects(kibana.url, settings)
        assert again.imported == 0 and set(again.unchanged) == {o["id"] for o in ours}
        assert [r["path"].split("?")[0].rsplit("/", 1)[1] for r in kibana.requests] == [
            "_import",
            "_export",
        ]

        # A user edits the dashboard, and deletes one Lens panel object.
        board = "hybrid-es.ops-traces-dashboard"
        edited = _edit_dashboard(kibana, "default", board)
        del kibana.objects[("default", "lens", "hybrid-es.ops-lens-errors")]
        untouched = {k: json.dumps(v) for k, v in kibana.objects.items()}
        after = import_saved_objects(kibana.url, settings)
        assert after.kept == (board,)
        assert after.created == ("hybrid-es.ops-lens-errors",)
        assert after.replaced == ()
        assert kibana.objects[("default", "dashboard", board)] == edited
        for k, before in untouched.items():  # nothing else was written
            assert json.dumps(kibana.objects[k]) == before
        (lens,) = [o for o in ours if o["id"] == "hybrid-es.ops-lens-errors"]
        assert holds(content(kibana.objects[("default", "lens", lens["id"])]), content(lens))

        # Asked to, the import takes the product's dashboard back.
        back = import_saved_objects(kibana.url, settings, overwrite=True)
        assert back.replaced == (board,) and back.kept == ()
        (mine,) = [o for o in ours if o["id"] == board]
        assert content(kibana.objects[("default", "dashboard", board)]) == content(mine)


def test_what_kibana_adds_on_import_is_not_an_edit():
    # A migration fills in fields and re-serializes JSON attributes: not the user's doing.
    settings = Settings()
    with KibanaStandIn() as kibana:
        import_saved_objects(kibana.url, settings)
        board = kibana.objects[("default", "dashboard", "hybrid-es-traces-dashboard")]
        options = json.loads(board["attributes"]["optionsJSON"])
        board["attributes"]["optionsJSON"] = json.dumps({**options, "added": 1}, indent=1)
        board["attributes"]["controlGroupInput"] = {"panelsJSON": "{}"}
        board["typeMigrationVersion"] = "10.2.0"
        assert import_saved_objects(kibana.url, settings).kept == ()


def test_two_namespaces_share_a_space_without_touching_each_other():
    with KibanaStandIn() as kibana:
        import_saved_objects(kibana.url, Settings(namespace="a"), space="ops")
        theirs = {k: json.dumps(v) for k, v in kibana.objects.items()}
        done = import_saved_objects(kibana.url, Settings(namespace="b"), space="ops")
        assert done.imported == len(_file_objects())
        assert {k: json.dumps(kibana.objects[k]) for k in theirs} == theirs
        assert len(kibana.objects) == 2 * len(_file_objects())
        assert {key(o) for o in saved_objects(Settings(namespace="b").layout())} == {
            (t, i) for (_, t, i) in kibana.objects if i.startswith("hybrid-es.b-")
        }
