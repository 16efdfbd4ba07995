"""docker-compose.yml checked without Docker: no engine runs on the build machines, so the
file is validated against the official Compose Specification schema (vendored verbatim in
tests/fixtures/compose-spec.json) plus the few properties a user of the stack relies on: no
secret with a fallback value (every one required from .env, whose maker the message names), no
port beyond loopback, Elasticsearch's HTTP over TLS with every client trusting the stack's CA,
and Kibana's trace readers logging in as their own user, not ``elastic``."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    assert "--kibana https://kibana:5601" in command
    # The command line needs its own extra (typer, rich): without it `hybrid-es` exits 78.
    assert "'/tmp/app[cli]'" in command
    assert setup["environment"]["HYBRID_ES_URL"] == "https://elasticsearch:9200"
    # The password must come from the same variable as the one Elasticsearch is started with.
    es_password = compose["services"]["elasticsearch"]["environment"]["ELASTIC_PASSWORD"]
    assert setup["environment"]["HYBRID_ES_PASSWORD"] == es_password


def test_published_ports_bind_to_loopback_only(compose):
    # A trial-licensed cluster holding every tenant's records must not be reachable from the
    # network: each published port names 127.0.0.1 (a port without a host address binds to all
    # interfaces), and no service shares the host's network, which would publish everything.
    published = [p for s in compose["services"].values() for p in s.get("ports", [])]
    assert published, "expected Elasticsearch and Kibana to be published"
    for port in published:
        if isinstance(port, dict):  # the long syntax
            assert port.get("host_ip") == "127.0.0.1", port
        else:
            assert isinstance(port, str) and port.startswith("127.0.0.1:"), port
    for name, service in compose["services"].items():
        assert service.get("network_mode", "") != "host", name


def test_elastic_images_are_version_9_and_match(compose):
    # Kibana refuses to start against an Elasticsearch of another version.
    images = {s["image"] for s in compose["services"].values()}
    images = {i for i in images if i.startswith("docker.elastic.co/")}
    tags = {image.rsplit(":", 1)[1] for image in images}
    assert len(tags) == 1, images
    (tag,) = tags
    assert tag.split(".")[0] == "9"
    assert f"docker.elastic.co/elasticsearch/elasticsearch:{tag}" in images


# --- secrets: from .env, never a default ---------------------------------------------------

ENV_SCRIPT = "scripts/compose_env.sh"
SECRET_NAME = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ENCRYPTION_?KEY", re.IGNORECASE)
# Compose interpolation: $VAR, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?err}, ${VAR?err},
# ${VAR:+alt}, ${VAR+alt}; `$$` is a literal dollar for the container's shell.
REFERENCE = re.compile(
    r"\$(?:(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
    r"|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\})"
)


def _strings(node: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Every string of the parsed file (keys too), with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield where, str(key)
            yield from _strings(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, f"{where}[{i}]")
    elif isinstance(node, str):
        yield where, node


def _references(compose: dict) -> list[tuple[str, str, str, str]]:
    """(where, variable, operator, argument) of every interpolation in the file."""
    out = []
    for where, text in _strings(compose):
        for m in REFERENCE.finditer(text.replace("$$", "")):
            name = m.group("bare") or m.group("name")
            out.append((where, name, m.group("op") or "", m.group("arg") or ""))
    return out


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): str(v) for k, v in env.items()}


def test_every_secret_is_required_from_env_and_has_no_fallback(compose):
    # Issue 36: `elastic` fell back to hybrid-es-dev and kibana_system to a fixed value, so
    # every stack started without a .env had public passwords. `${VAR:?msg}` makes Compose
    # refuse to start instead, and the message says how to make the .env.
    secrets = [r for r in _references(compose) if SECRET_NAME.search(r[1])]
    assert secrets, "expected the passwords to come from variables"
    for where, name, op, arg in secrets:
        assert op == ":?", f"{where}: ${{{name}{op}{arg}}} must be ${{{name}:?...}}"
        assert ENV_SCRIPT in arg, f"{where}: the message must name {ENV_SCRIPT}"


def test_no_secret_setting_holds_a_literal_value(compose):
    # A password written into the file is as public as a default.
    for name, service in compose["services"].items():
        for key, value in _environment(service).items():
            if SECRET_NAME.search(key):
                refs = [m.group(0) for m in REFERENCE.finditer(value)]
                assert refs == [value], f"{name}: {key} must be one ${{VAR:?...}}, not {value!r}"


def test_the_env_file_script_writes_exactly_the_required_secrets(compose):
    required = {name for _, name, op, _ in _references(compose) if op == ":?"}
    script = (ROOT / ENV_SCRIPT).read_text(encoding="utf-8")
    assert required == set(re.findall(r"^\s*VARS=\((.*)\)", script, re.M)[0].split())
    assert required == {"ELASTIC_PASSWORD", "KIBANA_SYSTEM_PASSWORD", "TRACE_READER_PASSWORD"}


def test_the_env_file_is_git_ignored():
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".env" in lines or "/.env" in lines


# --- TLS ---------------------------------------------------------------------------------------


def _mount_of(service: dict, volume: str) -> str:
    """Where ``service`` mounts the named ``volume``."""
    for v in service.get("volumes", []):
        source, target = (v["source"], v["target"]) if isinstance(v, dict) else v.split(":")[:2]
        if source == volume:
            return str(target)
    raise AssertionError(f"the service does not mount the {volume} volume")


def test_elasticsearch_http_is_tls_with_certificates_from_the_certs_service(compose):
    services = compose["services"]
    es = services["elasticsearch"]
    env = _environment(es)
    assert env["xpack.security.enabled"] == "true"
    assert env["xpack.security.http.ssl.enabled"] == "true"
    assert env["xpack.security.http.ssl.certificate"].startswith("certs/")
    assert env["xpack.security.http.ssl.key"].startswith("certs/")
    # certificate paths are relative to the config folder, where the certs volume is mounted
    assert _mount_of(es, "certs") == "/usr/share/elasticsearch/config/certs"
    certs = services["certs"]
    assert "elasticsearch-certutil" in " ".join(certs["command"])
    assert _mount_of(certs, "certs") == "/usr/share/elasticsearch/config/certs"
    assert es["depends_on"]["certs"]["condition"] == "service_completed_successfully"


def test_every_client_of_elasticsearch_speaks_https_and_checks_the_certificate(compose):
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    for scheme, host in re.findall(r"(\w+)://(elasticsearch|localhost|127\.0\.0\.1):9200", text):
        assert scheme == "https", f"{scheme}://{host}:9200"
    # Never turned off: curl -k/--insecure, verification_mode none, HYBRID_ES_VERIFY_CERTS=false.
    assert not re.search(r"(^|\s)(-k|--insecure)(\s|$)", text, re.M)
    assert not re.search(r"verification_?mode:\s*none", text, re.I)
    assert "VERIFY_CERTS" not in text
    services = compose["services"]
    kibana, setup = _environment(services["kibana"]), _environment(services["setup"])
    assert kibana["ELASTICSEARCH_HOSTS"] == "https://elasticsearch:9200"
    ca = kibana["ELASTICSEARCH_SSL_CERTIFICATEAUTHORITIES"]
    assert ca.startswith(_mount_of(services["kibana"], "certs") + "/")
    assert setup["HYBRID_ES_URL"].startswith("https://")
    assert setup["HYBRID_ES_CA_CERTS"].startswith(_mount_of(services["setup"], "certs") + "/")
    for name in ("elasticsearch", "users"):  # health check and password calls: curl --cacert
        script = json.dumps(services[name].get("healthcheck", {})) + json.dumps(
            services[name].get("command", [])
        )
        assert "https://" in script and "--cacert" in script, name


def test_kibana_serves_tls_with_a_certificate_of_the_same_ca(compose):
    services = compose["services"]
    kibana = _environment(services["kibana"])
    assert kibana["SERVER_SSL_ENABLED"] == "true"
    mount = _mount_of(services["kibana"], "certs")
    assert kibana["SERVER_SSL_CERTIFICATE"].startswith(mount + "/")
    assert kibana["SERVER_SSL_KEY"].startswith(mount + "/")
    assert "https://localhost:5601" in " ".join(services["kibana"]["healthcheck"]["test"])


# --- who logs into Kibana ----------------------------------------------------------------------


def test_kibana_connects_as_kibana_system_and_trace_readers_get_their_own_user(compose):
    services = compose["services"]
    assert _environment(services["kibana"])["ELASTICSEARCH_USERNAME"] == "kibana_system"
    users = " ".join(services["users"]["command"])
    assert "/_security/user/kibana_system/_password" in users
    # The trace readers' login: its own user, with the role that reads the traces only,
    # which the setup service installs (bootstrap --roles installs hybrid-es-trace-reader).
    assert "/_security/user/hybrid-es-trace-reader" in users
    assert '\\"roles\\":[\\"hybrid-es-trace-reader\\"]' in users
    assert "TRACE_READER_PASSWORD" in users
    assert (ROOT / "es_templates" / "roles" / "hybrid-es-trace-reader.json").exists()
    assert "hybrid-es bootstrap --roles" in " ".join(services["setup"]["command"])
    assert services["kibana"]["depends_on"]["users"]["condition"] == (
        "service_completed_successfully"
    )


def test_the_users_service_sends_each_password_in_valid_json(compose, tmp_path):
    # Its script, run by bash with a curl that records its arguments: each call goes to the
    # node over HTTPS as `elastic`, trusting the CA, with a JSON body that carries the .env's
    # password (the script builds JSON in the shell, so check what comes out).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "curl").write_text(
        f'#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done >> {calls}\n'
        f'printf "\\n\\0" >> {calls}\necho "{{}}"\n',
        encoding="utf-8",
    )
    (bin_dir / "curl").chmod(0o755)
    users = compose["services"]["users"]
    assert users["command"][:2] == ["bash", "-c"]
    script = users["command"][2].replace("$$", "$")
    secrets = {
        "ELASTIC_PASSWORD": "e" * 48,
        "KIBANA_SYSTEM_PASSWORD": "k" * 48,
        "TRACE_READER_PASSWORD": "t" * 48,
    }
    done = subprocess.run(
        ["bash", "-c", script],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", **secrets},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    recorded = [c.strip("\0").split("\0") for c in calls.read_text().split("\n\0") if c.strip()]
    bodies = {}
    for args in recorded:
        url = next(a for a in args if a.startswith("https://"))
        assert url.startswith("https://elasticsearch:9200/_security/user/"), url
        assert args[args.index("-u") + 1] == f"elastic:{secrets['ELASTIC_PASSWORD']}"
        ca = args[args.index("--cacert") + 1]
        assert ca.startswith(_mount_of(users, "certs") + "/")
        bodies[url.rsplit("/_security/user/", 1)[1]] = json.loads(args[args.index("-d") + 1])
    assert bodies["kibana_system/_password"] == {"password": secrets["KIBANA_SYSTEM_PASSWORD"]}
    reader = bodies["hybrid-es-trace-reader"]
    assert reader["password"] == secrets["TRACE_READER_PASSWORD"]
    assert reader["roles"] == ["hybrid-es-trace-reader"]
