"""scripts/compose_env.sh: the .env of the compose stack, with a strong random password for each
variable docker-compose.yml requires, private to its owner, and never replaced unasked."""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compose_env.sh"
REQUIRED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):\?")


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    # stdin is not a terminal here: the script must refuse rather than prompt.
    return subprocess.run(
        ["bash", str(SCRIPT), *map(str, args)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )


def _values(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(ln.split("=", 1) for ln in lines if ln and not ln.startswith("#"))


def _required() -> set[str]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    return {
        name
        for service in compose["services"].values()
        for value in (service.get("environment") or {}).values()
        for name in REQUIRED.findall(str(value))
    }


def test_it_writes_every_required_password_strong_random_and_private(tmp_path):
    env = tmp_path / ".env"
    done = _run(env)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    values = _values(env)
    assert set(values) == _required()
    for value in values.values():
        assert re.fullmatch(r"[0-9a-f]{48}", value), value  # 192 bits, no quoting needed
    assert len(set(values.values())) == len(values)  # one password per user
    assert list(tmp_path.iterdir()) == [env]  # no temporary file left behind

    other = tmp_path / "other.env"
    assert _run(other).returncode == 0
    assert not set(_values(other).values()) & set(values.values())  # random, not fixed


def test_an_existing_file_is_kept_unless_forced(tmp_path):
    env = tmp_path / ".env"
    env.write_text("ELASTIC_PASSWORD=mine\n", encoding="utf-8")
    refused = _run(env)
    assert refused.returncode == 1
    assert "--force" in refused.stderr
    assert env.read_text(encoding="utf-8") == "ELASTIC_PASSWORD=mine\n"

    forced = _run("--force", env)
    assert forced.returncode == 0, forced.stderr
    assert set(_values(env)) == _required()
    assert _values(env)["ELASTIC_PASSWORD"] != "mine"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600


def test_by_default_it_writes_next_to_the_compose_file(tmp_path):
    # Run a copy placed as in the repository (scripts/ beside docker-compose.yml), so that the
    # repository's own .env is never touched.
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / SCRIPT.name)
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / SCRIPT.name)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    assert set(_values(tmp_path / ".env")) == _required()


@pytest.mark.parametrize("args", [["--nope"], ["a", "b"]])
def test_bad_arguments_are_a_usage_error(tmp_path, args):
    done = subprocess.run(
        ["bash", str(SCRIPT), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "usage" in done.stderr
    assert not list(tmp_path.iterdir())
