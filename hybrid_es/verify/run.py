"""``verify``: every item, in order, on the connected cluster; what ``hybrid-es verify`` runs.

Read-only by default: the capability probe, the native fusion probes (searches of a pattern that
matches no index), the analyzers of an existing chunks index, the trace storage, the versions
and what each of the deployment's indices needs (``indices``: bootstrap's own index check);
the items that need scratch records are reported as skipped, with what they need. With
``write=True`` the run makes its scratch objects (``scratch``, ``dls``), runs every item on them,
and removes them on every way out: an error, SIGINT or SIGTERM (``interrupt``), which is then
raised as :class:`~hybrid_es.verify.interrupt.VerifyInterrupted` once they are gone.

``HYBRID_ES_VERIFY_HOLD`` (seconds; tests) holds a writing run once its scratch objects exist,
so that a test can interrupt it there.
"""

from __future__ import annotations

import os
import time

from hybrid_es.cluster.capabilities import Capabilities, probe
from hybrid_es.cluster.engine import Engine
from hybrid_es.errors import AuthenticationError, HybridEsError
from hybrid_es.retrieval.fusion import fixed_alpha
from hybrid_es.settings import Settings
from hybrid_es.verify.analysis import check_analysis
from hybrid_es.verify.compare import TOLERANCE
from hybrid_es.verify.dls import Reader, check_dls, make_reader, why_not
from hybrid_es.verify.fusion import check_fusion
from hybrid_es.verify.indices import check_indices
from hybrid_es.verify.interrupt import interruptible
from hybrid_es.verify.legs import check_policy
from hybrid_es.verify.report import (
    Check,
    VerifyReport,
    failed,
    not_tried,
    passed,
    refusal,
    skipped,
    unavailable,
)
from hybrid_es.verify.scratch import Scratch, Step, describe
from hybrid_es.verify.source import check_source
from hybrid_es.verify.traces import check_traces
from hybrid_es.verify.versions import check_versions

HOLD = "HYBRID_ES_VERIFY_HOLD"
SCRATCH = "a scratch index with records of two scratch tenants"


def verify(
    engine: Engine,
    settings: Settings,
    *,
    write: bool = False,
    caps: Capabilities | None = None,
    on_step: Step | None = None,
    tag: str | None = None,
) -> VerifyReport:
    """Check on this cluster what hybrid-es relies on (``report.ITEMS``), each item pass, fail
    or unavailable with its reason. ``write``: make (and remove) scratch objects for the items
    that need them; without it nothing is written. ``caps``: the capability probe, if the
    caller has one; ``on_step``: told each step of a writing run (a line of text); ``tag``: in
    the scratch objects' names (default: a random one). A scratch name that is taken already
    fails item 0 (or 4, for the role and credential), and that object is left as it was.

    Raises VerifyInterrupted (after removing the scratch objects) on SIGINT or SIGTERM, and the
    engine's errors when the cluster cannot be reached or refuses the credentials (401)."""
    caps = caps or probe(engine, layout=settings.layout())
    if not write:
        checks = [skipped(0, SCRATCH), *_checks(engine, settings, caps, None, None)]
    else:
        with interruptible():
            checks = _writing(engine, settings, caps, on_step, tag)
    return VerifyReport(
        url=engine.url,
        flavor=engine.flavor,
        server_version=engine.version,
        client_library=engine.client_library,
        user=caps.user,
        write=write,
        checks=tuple(sorted(checks, key=lambda c: c.item)),
        tolerance=TOLERANCE,
    )


def _checks(
    engine: Engine,
    settings: Settings,
    caps: Capabilities,
    scratch: Scratch | None,
    reader: Reader | Check | None,
) -> list[Check]:
    """Items 1-9; those that need the scratch objects are skipped without ``scratch``.
    ``reader``: the scratch credential, or the outcome of item 4 when it could not be made."""
    dls = reader if isinstance(reader, Check) else check_dls(scratch, reader, why_not(caps))
    return [
        # Native fusion takes a fixed weight: the spread default is compared at 0.4.
        check_fusion(engine, "rrf", scratch, alpha=fixed_alpha(settings.fusion_alpha)),
        check_fusion(engine, "linear", scratch, alpha=fixed_alpha(settings.fusion_alpha)),
        check_policy(engine, scratch),
        dls,
        check_analysis(engine, settings, caps, scratch),
        check_traces(engine, settings),
        check_versions(engine),
        check_source(engine, settings),
        check_indices(engine, settings),
    ]


def _writing(
    engine: Engine, settings: Settings, caps: Capabilities, on_step: Step | None, tag: str | None
) -> list[Check]:
    """A writing run: the scratch objects, every item on them, their removal, then item 0."""
    who = caps.user or "these credentials"
    with Scratch(engine, settings, tag=tag, on_step=on_step) as scratch:
        setup = _create(scratch, who)
        if setup is None:
            reader = _reader(scratch, caps, who)
            _hold(scratch)
            checks = _checks(engine, settings, caps, scratch, reader)
        else:
            checks = [
                not_tried(c.item, "the scratch index could not be made (item 0)")
                if c.skipped
                else c
                for c in _checks(engine, settings, caps, None, None)
            ]
    return [_scratch_check(scratch, setup), *checks]


def _create(scratch: Scratch, who: str) -> Check | None:
    """Make the scratch indices and records; None when done, else item 0's outcome."""
    try:
        scratch.create()
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        why = f"{who} may not make the scratch index {scratch.index}: {refusal(exc.message)}"
        return unavailable(0, why, skipped=True)
    except HybridEsError as exc:
        return failed(0, f"the scratch index could not be made: {exc.message[:300]}")
    return None


def _reader(scratch: Scratch, caps: Capabilities, who: str) -> Reader | Check | None:
    """The scratch credential of item 4; its outcome where it could not be made; None where
    the cluster or the credentials cannot make one (item 4 says why)."""
    if why_not(caps):
        return None
    try:
        return make_reader(scratch)
    except AuthenticationError as exc:
        if exc.status == 403:
            why = f"{who} may not make the scratch role or credential: {refusal(exc.message)}"
            return unavailable(4, why)
        return failed(4, f"the scratch credential was refused: {exc.message[:300]}")
    except HybridEsError as exc:
        return failed(4, f"the scratch role or credential could not be made: {exc.message[:300]}")


def _hold(scratch: Scratch) -> None:
    try:
        seconds = float(os.environ.get(HOLD) or 0)
    except ValueError:
        seconds = 0.0
    if seconds > 0:
        scratch.step(f"holding {seconds:g} s with the scratch objects in place ({HOLD})")
        time.sleep(seconds)


def _scratch_check(scratch: Scratch, setup: Check | None) -> Check:
    """Item 0, once the scratch objects are removed: made by the installed templates (the
    chunks index has the mapping of es_templates), and all removed."""
    details = describe(scratch)
    if scratch.problems:
        return failed(0, f"could not remove {scratch.problems[0]}", details + scratch.problems)
    if setup is not None:
        return setup.model_copy(update={"details": tuple(details)})
    if scratch.mapping_problems:
        return failed(
            0,
            f"the scratch chunks index {scratch.mapping_problems[0]}: the installed chunks "
            "template is not es_templates' (run `hybrid-es bootstrap`)",
            details + scratch.mapping_problems[1:],
        )
    return passed(0, "made by the installed templates, and removed", details)


__all__ = ["HOLD", "verify"]
