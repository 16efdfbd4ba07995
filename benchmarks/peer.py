"""The driver's handle on the Haystack peer: a worker process in the peer's own venv.

The peer runs under ``<peer venv>/bin/python`` (``scripts/setup_peer.sh``: an overlay of the
project venv whose own site-packages hold the 8.x Elasticsearch client and the Haystack
integrations, so both sides run the very same torch, transformers and sentence-transformers, and
only the client differs). :class:`PeerProcess` starts
:mod:`~benchmarks.peer_worker` there and speaks its line protocol; the
worker's stderr (its logs) is this process's stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any

from benchmarks.interleave import Answer
from benchmarks.peer_pipelines import PeerConfig
from hybrid_es.errors import ConfigurationError

WORKER = "benchmarks.peer_worker"
CLOSE_TIMEOUT_S = 30.0


class PeerError(RuntimeError):
    """The peer worker failed a request, or died."""


def default_peer_python() -> Path:
    """``$HYBRID_ES_CACHE/peer-venv/bin/python`` (default cache ``~/.cache/hybrid-es``), where
    ``scripts/setup_peer.sh`` puts it."""
    cache = Path(os.environ.get("HYBRID_ES_CACHE") or Path.home() / ".cache" / "hybrid-es")
    return cache / "peer-venv" / "bin" / "python"


def worker_env(base: dict[str, str]) -> dict[str, str]:
    """``base`` for the worker: this checkout's ``hybrid_es`` and ``benchmarks`` first on its path
    (both sides run the same code), Haystack's telemetry off, the model hubs offline unless set
    otherwise."""
    env = dict(base)
    root = str(Path(__file__).resolve().parents[1])  # the folder holding benchmarks/, hybrid_es/
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env["HAYSTACK_TELEMETRY_ENABLED"] = "False"
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    return env


class PeerProcess:
    """The running worker; use as a context manager (closing stops the process)."""

    def __init__(self, python: Path | None = None) -> None:
        exe = python or default_peer_python()
        if not Path(exe).is_file():
            raise ConfigurationError(
                f"no peer interpreter at {exe}",
                hint="create the peer venv first: scripts/setup_peer.sh",
            )
        self._proc = subprocess.Popen(
            [str(exe), "-m", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
            env=worker_env(dict(os.environ)),
        )
        self.names: list[str] = []
        """The pipelines built (:meth:`pipelines`)."""

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and read its answer; raises PeerError on a failure."""
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps({"op": op, **fields}) + "\n")
            stdin.flush()
        except BrokenPipeError:
            raise PeerError(f"the peer worker exited ({self._proc.poll()})") from None
        line = stdout.readline()
        if not line:
            raise PeerError(f"the peer worker exited ({self._proc.wait()}); see its stderr")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise PeerError(f"peer {op}: {answer['error']}")
        return answer

    def versions(self) -> dict[str, str]:
        return dict(self.request("versions")["versions"])

    def index(self, index: str, *, source: str, tenant: str) -> dict[str, Any]:
        """Fill (or reuse) the peer's ``index`` with our ``source`` index's chunks of
        ``tenant``; its report."""
        return dict(self.request("index", index=index, source=source, tenant=tenant)["index"])

    def pipelines(self, cfg: PeerConfig) -> list[str]:
        """Build and warm up the peer's pipelines; their names."""
        self.names = list(self.request("pipelines", config=asdict(cfg))["pipelines"])
        return self.names

    def query(self, pipeline: str, text: str) -> Answer:
        """One query through one pipeline, timed by the worker (stages: each component's ms)."""
        a = self.request("query", pipeline=pipeline, text=text)
        return Answer(float(a["ms"]), tuple(a["ranked"]), dict(a["stages"]))

    def close(self) -> None:
        if self._proc.poll() is None:
            with contextlib.suppress(PeerError, OSError):
                self.request("close")
            try:
                self._proc.wait(timeout=CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> PeerProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
