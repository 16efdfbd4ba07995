"""How packet operations are measured: per-process latencies and verdict counts, and spans.

Apart from the packet flow (``service.py``) so that the flow reads as its operations only; every
operation is timed into :class:`PacketMetrics` (bounded, for reuse rate and build p50/p95) and
run inside an OpenTelemetry span (:func:`spanned`; ``hybrid_es.telemetry``, a no-op without it)
that carries the database conventions of an operation on the packets index.
"""

from __future__ import annotations

import functools
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from hybrid_es import telemetry
from hybrid_es.packets.store import Stored
from hybrid_es.packets.verdict import Verdict

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Store(Protocol):
    @property
    def index(self) -> str: ...


class PacketOperator(Protocol):
    """What :func:`spanned` reads of the object whose method it wraps (``PacketService``): the
    engine it talks to and the packet store (its index)."""

    @property
    def client(self) -> Any: ...

    @property
    def store(self) -> _Store: ...


_S = TypeVar("_S", bound=PacketOperator)


def spanned(
    name: str,
) -> Callable[[Callable[Concatenate[_S, _P], _R]], Callable[Concatenate[_S, _P], _R]]:
    """The operation in an OpenTelemetry span ``hybrid_es.packet.<name>`` (``telemetry``: a
    no-op without it) with the database conventions of the operation ``packet.<name>`` on the
    packets index (``telemetry.db_attributes``); no case id, query or member text goes on it,
    only the outcome."""

    def wrap(fn: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
        @functools.wraps(fn)
        def run(service: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            db = telemetry.db_attributes(service.client, f"packet.{name}", service.store.index)
            with telemetry.span(f"hybrid_es.packet.{name}", db) as sp:
                out = fn(service, *args, **kwargs)
                verdict = out[0] if isinstance(out, tuple) else out
                if isinstance(verdict, Verdict):
                    sp.set(verdict=verdict.kind, reasons=len(verdict.reasons))
                if isinstance(out, Stored):
                    sp.set(members=len(out.manifest.members))
                return out

        return run

    return wrap


MAX_LATENCIES = 10_000
"""Latencies kept per operation: the most recent ones (a long-lived process keeps no more)."""


@dataclass
class PacketMetrics:
    """Per-operation latencies (ms; the latest :data:`MAX_LATENCIES` of each) and verdict counts
    for this process: bounded, whatever the traffic (OpenTelemetry's histograms,
    ``hybrid_es.telemetry``, keep the whole distribution)."""

    latencies: dict[str, deque[float]] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)
    max_latencies: int = MAX_LATENCIES

    def record(self, op: str, ms: float, verdict: str | None = None) -> None:
        kept = self.latencies.get(op)
        if kept is None:
            kept = self.latencies[op] = deque(maxlen=self.max_latencies)
        kept.append(ms)
        if verdict:
            self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1

    @property
    def reuse_rate(self) -> float:
        total = sum(self.verdicts.values())
        return self.verdicts.get("reuse", 0) / total if total else 0.0

    def percentiles(self, op: str) -> tuple[float, float]:
        """(p50, p95) of an operation's latency; (0, 0) when it never ran."""
        xs = sorted(self.latencies.get(op, ()))
        if not xs:
            return 0.0, 0.0
        if len(xs) == 1:
            return xs[0], xs[0]
        q = statistics.quantiles(xs, n=20, method="inclusive")
        return statistics.median(xs), q[18]
