"""docker-compose.yml checked without Docker: no engine runs on the build machines, so the
file is validated against the official Compose Specification schema (vendored verbatim in
tests/fixtures/compose-spec.json) plus the few properties a user of the stack relies on."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
SCHEMA_FILE = ROOT / "tests" / "fixtures" / "compose-spec.json"


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validator(schema: dict) -> jsonschema.Draft7Validator:
    # Pinned rather than picked by validator_for: the spec writes its $schema as an https URL,
    # which jsonschema does not map to draft 7 and would silently validate as 2020-12.
    assert "draft-07" in schema["$schema"]
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


@pytest.fixture()
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))


def _errors(validator: jsonschema.Draft7Validator, doc: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


def test_compose_file_follows_the_compose_spec(validator, compose):
    assert _errors(validator, compose) == []


def _ports_not_a_list(doc: dict) -> None:
    doc["services"]["elasticsearch"]["ports"] = "not-a-list"


def _unknown_top_level_key(doc: dict) -> None:
    doc["servics"] = {}


def _misspelt_condition(doc: dict) -> None:
    doc["services"]["setup"]["depends_on"]["kibana"]["condition"] = "service_ready"


BREAKAGES = [_ports_not_a_list, _unknown_top_level_key, _misspelt_condition]


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_schema_rejects_a_broken_copy(validator, compose, breakage):
    # Guards against a schema (or validator) that accepts everything, which would make the
    # test above pass vacuously.
    broken = copy.deepcopy(compose)
    breakage(broken)
    assert _errors(validator, broken)


def test_no_obsolete_version_key(compose):
    # Compose v2 warns that `version` is obsolete; the spec only tolerates it.
    assert "version" not in compose


def test_every_dependency_exists_and_can_satisfy_its_condition(compose):
    services = compose["services"]
    for name, service in services.items():
        for dep, spec in service.get("depends_on", {}).items():
            assert dep in services, f"{name} depends on unknown service {dep}"
            if spec["condition"] == "service_healthy":
                # Without a healthcheck, Compose fails the dependant instead of waiting.
                assert "test" in services[dep].get("healthcheck", {}), f"{dep} has no healthcheck"
            if spec["condition"] == "service_completed_successfully":
                # A restarting one-shot never completes, so its dependants would never start.
                assert services[dep].get("restart", "no") == "no", f"{dep} must not restart"


def test_setup_service_bootstraps_against_the_stack(compose):
    setup = compose["services"]["setup"]
    command = " ".join(setup["command"])
    assert "hybrid-es bootstrap" in command
    assert "--kibana http://kibana:5601" in command
    # The command line needs its own extra (typer, rich): without it `hybrid-es` exits 78.
    assert "'/tmp/app[cli]'" in command
    assert setup["environment"]["HYBRID_ES_URL"] == "http://elasticsearch:9200"
    # The password must come from the same variable as the one Elasticsearch is started with.
    es_password = compose["services"]["elasticsearch"]["environment"]["ELASTIC_PASSWORD"]
    assert setup["environment"]["HYBRID_ES_PASSWORD"] == es_password


def test_published_ports_bind_to_loopback_only(compose):
    # A trial-licensed cluster with a well-known default password must not be reachable
    # from the network.
    published = [p for s in compose["services"].values() for p in s.get("ports", [])]
    assert published, "expected Elasticsearch and Kibana to be published"
    for port in published:
        assert isinstance(port, str) and port.startswith("127.0.0.1:"), port


def test_elastic_images_are_version_9_and_match(compose):
    # Kibana refuses to start against an Elasticsearch of another version.
    images = {s["image"] for s in compose["services"].values()}
    images = {i for i in images if i.startswith("docker.elastic.co/")}
    tags = {image.rsplit(":", 1)[1] for image in images}
    assert len(tags) == 1, images
    (tag,) = tags
    assert tag.split(".")[0] == "9"
    assert f"docker.elastic.co/elasticsearch/elasticsearch:{tag}" in images
