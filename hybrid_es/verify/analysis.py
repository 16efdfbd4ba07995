"""Item 5: the analysis profile's analyzers answer as the profile says, asked of a chunks index.

A chunks index holds the analyzers of the profile bootstrap installed (``hes_text`` and
``hes_cjk``, from the ``hybrid-es-analysis`` component): ``full`` where the cluster has
analysis-common (English stemming and stop words; CJK bigrams), ``standard`` otherwise (the core
standard analyzer with English stop words; CJK as single characters). The index's own analyzer
definitions say which profile it has; ``_analyze`` on a sample must give that profile's tokens.
The index is the scratch one (made by the installed template) in a writing run, else an existing
chunks index: read-only either way.
"""

from __future__ import annotations

from typing import Any

from hybrid_es.cluster.capabilities import Capabilities
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import ANALYSIS_TEMPLATE
from hybrid_es.errors import AuthenticationError, EngineError, IndexMissingError
from hybrid_es.namespace import in_namespace
from hybrid_es.settings import Settings
from hybrid_es.verify.report import Check, failed, passed, refusal, skipped, unavailable
from hybrid_es.verify.scratch import INFIX, Scratch

ITEM = 5
SAMPLES = {"hes_text": "The hotels' running rates", "hes_cjk": "東京都庁"}
EXPECTED: dict[str, dict[str, list[str]]] = {
    "full": {"hes_text": ["hotel", "run", "rate"], "hes_cjk": ["東京", "京都", "都庁"]},
    "standard": {"hes_text": ["hotels", "running", "rates"], "hes_cjk": ["東", "京", "都", "庁"]},
}
WHAT = {
    "full": {"hes_text": "English stemming and stop words", "hes_cjk": "CJK bigrams"},
    "standard": {"hes_text": "standard, English stop words", "hes_cjk": "single CJK characters"},
}


def profile_of(analysis: dict[str, Any]) -> str | None:
    """The profile an index's analysis settings are (``full`` or ``standard``); None when its
    ``hes_text`` is neither. Pure."""
    text = (analysis.get("analyzer") or {}).get("hes_text") or {}
    if text.get("type") == "standard":
        return "standard"
    filters = text.get("filter") or []
    defined = analysis.get("filter") or {}
    kinds = {str((defined.get(f) or {}).get("type", f)) for f in filters}
    return "full" if text.get("type") == "custom" and "stemmer" in kinds else None


def check_analysis(
    engine: Engine, settings: Settings, caps: Capabilities, scratch: Scratch | None
) -> Check:
    """Item 5, on the scratch index, else on an existing chunks index."""
    try:
        indices = [scratch.index] if scratch else _existing(engine, settings)
    except AuthenticationError as exc:
        if exc.status == 401:
            raise
        why = refusal(exc.message)
        return unavailable(ITEM, f"the credentials may not list the chunks indices: {why}")
    for index in indices:
        try:
            return _check(engine, caps, index, settings.namespace)
        except IndexMissingError:
            continue  # deleted since it was listed: the next one
        except AuthenticationError as exc:
            if exc.status == 401:
                raise
            why = refusal(exc.message)
            return unavailable(ITEM, f"the credentials may not analyze with {index}: {why}")
        except EngineError as exc:
            return failed(ITEM, f"{index}: {exc.message[:300]}")
    return skipped(ITEM, "a scratch index (there is no chunks index to ask)")


def _existing(engine: Engine, settings: Settings) -> list[str]:
    """The deployment's existing chunks indices (not scratch ones), its tenants' first."""
    layout = settings.layout()
    names = [i for i in engine.indices(f"{layout.chunks}*") if INFIX not in i]
    own = layout.chunks_pattern().rstrip("*")
    return sorted(names, key=lambda i: (not i.startswith(own), i))


def _check(engine: Engine, caps: Capabilities, index: str, namespace: str) -> Check:
    resp = engine.request(
        "GET",
        f"/{index}/_settings",
        params={"filter_path": "*.settings.index.analysis"},
        what=f"reading the analyzers of {index}",
    )
    bodies: list[dict[str, Any]] = list(dict(resp or {}).values())
    index_settings = bodies[0].get("settings", {}).get("index", {}) if bodies else {}
    profile = profile_of(index_settings.get("analysis", {}))
    if profile is None:
        return failed(ITEM, f"{index}'s hes_text analyzer is of neither profile")
    details = [
        f"profile {profile}, from {index}'s analyzers; the installed template: "
        f"{_installed(engine, namespace)}; this cluster's analyzers allow: "
        f"{caps.analysis_profile}"
    ]
    problems = []
    for analyzer, text in SAMPLES.items():
        tokens = [
            str(t["token"])
            for t in engine.request(
                "POST",
                f"/{index}/_analyze",
                body={"analyzer": analyzer, "text": text},
                what=f"analyzing with {analyzer}",
            ).get("tokens", [])
        ]
        want = EXPECTED[profile][analyzer]
        details.append(f"{analyzer} ({WHAT[profile][analyzer]}): {text!r} -> {' '.join(tokens)}")
        if tokens != want:
            problems.append(f"{analyzer} gave {tokens}, the {profile} profile gives {want}")
    if problems:
        return failed(ITEM, problems[0], [*details, *problems[1:]])
    return passed(ITEM, f"the {profile} profile's analyzers answer as expected", details)


def _installed(engine: Engine, namespace: str) -> str:
    """The profile of the installed analysis component template (of the deployment's
    ``namespace``), or why it is not known."""
    try:
        body = engine.get_component_template(in_namespace(ANALYSIS_TEMPLATE, namespace))
    except EngineError as exc:
        return f"unknown ({exc.message[:80]})" if exc.status != 403 else "not readable"
    if body is None:
        return "not installed"
    return str((body.get("_meta") or {}).get("profile", "unknown"))
