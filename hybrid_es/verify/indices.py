"""Item 9: the deployment's indices are what the installed templates would make of them now.

The check bootstrap reports for each existing index (``cluster.index_status``), read-only: every
chunks index of the layout, the packets and the corpus state index, each current, short of new
fields (``hybrid-es bootstrap`` adds them), or in need of a rebuild (another analysis, model,
vector field or field type than a new index would get), with the command that rebuilds it
(``hybrid-es reindex --tenant T``). Anything but current fails the item, naming the command.
"""

from __future__ import annotations

from hybrid_es.cluster.bootstrap import wanted
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.index_survey import survey
from hybrid_es.encoders.embedder_choice import models_served
from hybrid_es.errors import AuthenticationError, EngineError
from hybrid_es.settings import Settings
from hybrid_es.verify.report import Check, failed, passed, refusal, unavailable

ITEM = 9
SHOWN = 20
"""Indices listed by name in the details at most (the rest counted)."""


def check_indices(engine: Engine, settings: Settings) -> Check:
    """Item 9 on the deployment's existing indices."""
    layout = settings.layout()
    pattern = ",".join(
        dict.fromkeys([layout.chunks_pattern(), layout.packets, layout.corpus_state])
    )
    try:
        statuses = survey(
            engine, pattern, wanted(settings, engine.flavor, models_served(settings.embedder))
        )
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        why = refusal(exc.message)
        return unavailable(ITEM, f"the credentials may not read the indices' mappings: {why}")
    except EngineError as exc:
        return failed(ITEM, f"the indices could not be read: {exc.message[:300]}")
    if not statuses:
        return passed(ITEM, f"no index of the deployment exists yet ({pattern})")
    behind = [s for s in statuses.values() if s.state != "current"]
    details = [f"{s.name} ({s.index}): {s.state}; {s.note}" for s in behind[:SHOWN]]
    if len(behind) > SHOWN:
        details.append(f"... and {len(behind) - SHOWN} more")
    current = len(statuses) - len(behind)
    details.append(f"{current} of {len(statuses)} indices current")
    pending = [s for s in behind if s.state in ("rebuild", "conflict")]
    if pending:
        first = pending[0]
        what = "need a rebuild" if first.state == "rebuild" else "conflict with the settings"
        return failed(
            ITEM,
            f"{len(pending)} of {len(statuses)} indices {what}: {first.name}: run: {first.command}",
            details,
        )
    if behind:
        return failed(
            ITEM,
            f"{len(behind)} of {len(statuses)} indices lack fields of the installed templates "
            f"(the writers of this version write them): run: hybrid-es bootstrap",
            details,
        )
    return passed(
        ITEM, f"all {len(statuses)} indices are as the installed templates would make them", details
    )
