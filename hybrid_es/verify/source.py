"""Item 8: the ingest source's read, with the source's own credentials (``HYBRID_ES_SOURCE_*``):
what ``hybrid-es ingest --from-index`` needs on the source index (``read`` and
``view_index_metadata``, ``cluster.access.source_access``), tried with read APIs only, and what
the credentials hold beyond it. Unavailable where no source index is configured."""

from __future__ import annotations

from hybrid_es.cluster.access import source_access
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.source_connection import connect_source, read_source_settings
from hybrid_es.errors import HybridEsError
from hybrid_es.settings import Settings
from hybrid_es.verify.report import Check, failed, passed, unavailable

ITEM = 8


def check_source(engine: Engine, settings: Settings) -> Check:
    """Pass when the source credentials may read ``HYBRID_ES_SOURCE_INDEX`` as a sync does;
    fail when a read is refused (or the settings cannot be used); unavailable without one."""
    try:
        source = read_source_settings()
    except HybridEsError as exc:
        return failed(ITEM, f"the source settings cannot be used: {exc.message[:200]}")
    if not source.index:
        return unavailable(ITEM, "no source index configured (HYBRID_ES_SOURCE_INDEX)")
    try:
        reader = connect_source(source, engine, settings.layout(), source.index)
        access = source_access(reader, source.index)
    except HybridEsError as exc:
        return failed(ITEM, f"the source {source.index} cannot be read: {exc.message[:200]}")
    where = source.redacted_url(engine)
    if not access.allowed:
        return failed(
            ITEM,
            f"the source credentials may not read {source.index} at {where}",
            [f"lacks {m}" for m in access.missing],
        )
    return passed(
        ITEM,
        f"the source credentials read {source.index} at {where} ({access.basis})",
        list(access.degraded),
    )
