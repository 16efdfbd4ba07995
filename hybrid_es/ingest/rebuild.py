"""A tenant's chunks index rebuilt online: the next generation built beside the live one from the
records already stored, then switched to at once (``cluster.generations``).

What a rebuild changes is what the deployment changed: the embedding model (every chunk is
embedded again from its stored ``search_payload``), the analysis or the mapping (the new
generation is created from the templates installed now, so every text field is analysed again
as it is copied; the client-side terms of an older analysis version are computed again). What
it keeps is everything else, as stored: chunk ids and keys, versions, hashes, context headers,
ACLs, validity, deletion marks and audit copies. The chunks are not cut again: their boundaries
came from the documents, which a rebuild does not have (the index holds the chunks).

**The flow** (:meth:`Rebuild.run`):

1. the next generation ``<name>+g<N+1>`` is created (the installed templates shape it) and its
   model recorded in its ``_meta``;
2. the main pass copies every record of the tenant in pages sorted by chunk id, each page
   embedded with the new model where the model changes, and sent while the next page is read
   and embedded (the ingest's write-behind); once a page is written, the pass's position is
   saved in the corpus state, so an interrupted rebuild resumes where it stopped;
3. catch-up passes copy what was written meanwhile: the documents with a chunk written since
   the pass before began (every write stamps ``ingested_at``), each document whole, and remove
   from the new generation the chunks a correction removed;
4. the checks: the new model recorded, the policy fields mapped as the template maps them, and
   a sample of searches answering from the new generation;
5. the switch: new writes of the tenant wait (the corpus state's write barrier) while the runs
   in flight finish, a last catch-up copies what they wrote, the records are counted on both
   sides (they must be equal: writers are held), and the alias moves in one request; then
   writes go on, into the new generation.

The corpus watermark does not move: the records are the same evidence, so a packet built before
the switch is still ``reuse`` (the same chunk ids and hashes), and one over a record changed
meanwhile says ``refresh_required`` as any change makes it. The old generation stays until
:meth:`Rebuild.drop`; :meth:`Rebuild.switch_back` is the same switch the other way, after a
catch-up of what was written to the new generation since.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.generations import Generation, current, physical, switch
from hybrid_es.cluster.policy_fields import check_mapped, field_types
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.errors import ConfigurationError, PolicyViolationError, translate_es_error
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.bulk import send_bulk
from hybrid_es.ingest.write_behind import Taken, WriteBehind
from hybrid_es.models import Principal
from hybrid_es.retrieval.door import ChunksDoor, tenant_body, tenant_policy
from hybrid_es.tenancy import IndexLayout
from hybrid_es.text.analysis import ANALYSIS_VERSION, client_terms, code_terms
from hybrid_es.text.folding import fold_for_matching

PAGE = 256
"""Records copied (and embedded) per bulk request."""
MARGIN = timedelta(minutes=5)
"""How far before a pass began its catch-up looks: writers on other hosts may stamp their
records by clocks behind this one. Copying a record twice writes the same record."""
MAX_CATCH_UP = 20
"""Catch-up passes before the switch at most: a tenant written faster than it can be copied
is refused with the figures, never switched half-copied."""
Progress = Callable[[int], None]


@dataclass
class RebuildReport:
    """What a rebuild did: where from and to, what it copied and embedded, the catch-up passes,
    the checks, and whether the alias moved."""

    tenant: str
    name: str
    source: str
    target: str
    model_from: str = ""
    model_to: str = ""
    copied: int = 0
    embedded: int = 0
    removed: int = 0
    catch_up: list[int] = field(default_factory=list)
    """Records copied by each catch-up pass, the last one under the write barrier."""
    checks: dict[str, Any] = field(default_factory=dict)
    switched: bool = False
    resumed_at: str | None = None
    seconds: float = 0.0
    failed: list[dict[str, Any]] = field(default_factory=list)


class Rebuild:
    """Rebuilds of one deployment's chunks indices over ``engine``; ``embedder`` embeds the new
    generation (None: the model the index records, for a change of analysis or mapping only).
    ``layout`` names the indices, ``corpus_state`` holds the progress and the write barrier."""

    def __init__(
        self,
        engine: Engine,
        layout: IndexLayout,
        corpus_state: CorpusState,
        *,
        embedder: Embedder | None = None,
        recorded: Callable[[str], Embedder] | None = None,
        page: int = PAGE,
    ) -> None:
        self.engine = engine
        self.layout = layout
        self.corpus_state = corpus_state
        self.embedder = embedder
        self.recorded = recorded
        self.page = page
        self.engine.guard(layout.chunks)
        self.door = ChunksDoor(engine)

    # -- the whole rebuild ---------------------------------------------------------------------

    def run(
        self,
        principal: Principal,
        *,
        switch_now: bool = True,
        switch_wait: float = 60.0,
        progress: Progress | None = None,
        on_total: Progress | None = None,
        samples: Iterable[str] = (),
    ) -> RebuildReport:
        """Build the next generation of ``principal``'s tenant's chunks index and, with
        ``switch_now``, switch to it (module docstring). Resumes a rebuild of the same target
        that stopped. ``samples``: questions whose search must answer from the new generation
        before the switch (default: the titles of a few records). Raises PolicyViolationError
        for a principal without the tenant's writer role, ConfigurationError for an index with
        nothing to rebuild or not yet behind an alias (``hybrid-es reindex --adopt``), and in
        the shared tenancy layout, where one index holds every tenant (:func:`_refuse_shared`)."""
        t0 = time.perf_counter()
        _refuse_shared(self.layout)
        _require_writer(principal)
        tenant = principal.tenant
        name = self.layout.chunks_for(tenant)
        live = self._live(name)
        state = self.corpus_state.rebuild_state(tenant, name) or {}
        target = state.get("target") or live.next
        if target == live.index:
            raise ConfigurationError(
                f"{name} already serves {target}: the rebuild recorded for it is done",
                hint="hybrid-es reindex --drop removes the old generation",
            )
        embedder = self.embedder or self._recorded_embedder(live.index)
        report = RebuildReport(tenant, name, live.index, target, resumed_at=state.get("after"))
        report.model_from = str(self._meta(live.index).get("embedding_model") or "")
        report.model_to = embedder.model_id
        self._create(target, embedder)
        # Writers in flight stamp their records with the time their run began: the first
        # catch-up looks back to the earliest of them (``_since``).
        started = self._since(tenant) if not state.get("started") else _parse(state["started"])
        begun = {"source": live.index, "target": target, "model": embedder.model_id}
        self.corpus_state.update_rebuild(
            tenant,
            name,
            lambda s: {**s, **begun, "started": s.get("started") or started.isoformat()},
        )
        if on_total:
            on_total(self._count(live.index, tenant))
        self._main_pass(tenant, live.index, target, embedder, report, state.get("after"), progress)
        since = started
        for _ in range(MAX_CATCH_UP):
            mark = self._since(tenant)
            copied = self._catch_up(tenant, live.index, target, embedder, since, report)
            report.catch_up.append(copied)
            since = mark
            if copied == 0:
                break
        report.checks = self.check(tenant, live.index, target, embedder, samples)
        if switch_now:
            self._switch(principal, live, target, embedder, since, switch_wait, report)
        report.seconds = round(time.perf_counter() - t0, 2)
        return report

    def switch_back(self, principal: Principal, *, switch_wait: float = 60.0) -> RebuildReport:
        """Point the tenant's alias back at the generation it served before the last switch,
        after copying into it (embedded with its own model) what was written since the switch.
        Raises ConfigurationError when there is no earlier generation to go back to, or in the
        shared tenancy layout (as :meth:`run`)."""
        _refuse_shared(self.layout)
        _require_writer(principal)
        tenant = principal.tenant
        name = self.layout.chunks_for(tenant)
        live = self._live(name)
        state = self.corpus_state.rebuild_state(tenant, name) or {}
        previous = state.get("previous")
        if not previous or not self.engine.index_exists(previous):
            raise ConfigurationError(
                f"{name} has no earlier generation to switch back to",
                hint="a switch back is possible until `hybrid-es reindex --drop` removes it",
            )
        embedder = self._recorded_embedder(previous)
        report = RebuildReport(tenant, name, live.index, previous)
        report.model_from = str(self._meta(live.index).get("embedding_model") or "")
        report.model_to = embedder.model_id
        since = _parse(state.get("switched") or state.get("started") or _now().isoformat())
        copied = self._catch_up(tenant, live.index, previous, embedder, since, report)
        report.catch_up.append(copied)
        self._switch(principal, live, previous, embedder, _now(), switch_wait, report)
        return report

    def drop(self, principal: Principal) -> list[str]:
        """Delete the generations of the tenant's index that the alias does not serve; their
        names."""
        _require_writer(principal)
        name = self.layout.chunks_for(principal.tenant)
        live = self._live(name)
        found = self.engine.indices(f"{name}+g*")
        others = [i for i in found if i != live.index and _generation_of(i, name)]
        for index in others:
            self.engine.delete_index(index)
        self.corpus_state.update_rebuild(
            principal.tenant, name, lambda s: {k: v for k, v in s.items() if k != "previous"}
        )
        return others

    # -- the passes ----------------------------------------------------------------------------

    def _main_pass(
        self,
        tenant: str,
        source: str,
        target: str,
        embedder: Embedder,
        report: RebuildReport,
        after: str | None,
        progress: Progress | None,
    ) -> None:
        """Copy every record of the tenant from ``after`` on, a page at a time: each page's bulk
        request is sent (``WriteBehind``) while the next page is read and embedded, and its
        position saved once its request has succeeded."""
        name = self.layout.chunks_for(tenant)

        def settle(taken: Taken[_Page, list[dict[str, Any]]] | None) -> None:
            if taken is None:
                return
            self._raise_failed(target, taken.batch.actions, taken.outcome(), report)
            self.corpus_state.update_rebuild(tenant, name, _with({"after": taken.batch.after}))
            report.copied += len(taken.batch.actions)
            if progress:
                progress(len(taken.batch.actions))

        reading = self._reading(source, embedder)
        send = functools.partial(_send_page, self.engine)
        with WriteBehind(send) as behind:
            try:
                while True:
                    body = tenant_body(
                        tenant, size=self.page, sort=[{"chunk_id": "asc"}], **reading
                    )
                    if after is not None:
                        body["search_after"] = [after]
                    policy = tenant_policy(tenant)
                    hits = self.door.search(source, body, policy, what="reading for a rebuild")
                    page = [h["_source"] for h in hits["hits"]["hits"]]
                    if not page:
                        break
                    after = str(page[-1]["chunk_id"])
                    actions = self._actions(target, tenant, page, embedder, report)
                    settle(behind.take())
                    behind.submit(_Page(actions, after))
                settle(behind.take())
            except BaseException:
                # The page in flight is settled on the way out (its position saved where it
                # was written); the first error is the one raised.
                taken = behind.take()
                if taken is not None:
                    with contextlib.suppress(Exception):
                        settle(taken)
                raise

    def _catch_up(
        self,
        tenant: str,
        source: str,
        target: str,
        embedder: Embedder,
        since: datetime,
        report: RebuildReport,
    ) -> int:
        """Copy, whole, every document with a chunk written to ``source`` since ``since`` (less
        :data:`MARGIN`), and remove from ``target`` its chunks that ``source`` no longer has;
        how many records were copied."""
        # What was written since the last pass must be visible to this one, on both sides.
        self.engine.refresh(source)
        self.engine.refresh(target)
        stamp = (since - MARGIN).isoformat()
        since_stamp = tenant_body(
            tenant, {"range": {"ingested_at": {"gte": stamp}}}, _source=["doc_id"]
        )
        found = self.door.scan(source, since_stamp, tenant_policy(tenant))
        doc_ids = sorted({h["_source"]["doc_id"] for h in found})
        copied = 0
        reading = self._reading(source, embedder)
        for at in range(0, len(doc_ids), 500):
            part = doc_ids[at : at + 500]
            body = tenant_body(tenant, {"terms": {"doc_id": part}}, **reading)
            records = [h["_source"] for h in self.door.scan(source, body, tenant_policy(tenant))]
            there = tenant_body(tenant, {"terms": {"doc_id": part}}, _source=list(FINGERPRINT))
            copies = {
                h["_id"]: fingerprint(h["_source"])
                for h in self.door.scan(target, there, tenant_policy(tenant))
            }
            # Only what differs from the copy: a quiet tenant's catch-up copies nothing.
            changed = [
                r for r in records if copies.get(chunk_key(tenant, r["chunk_id"])) != fingerprint(r)
            ]
            for start in range(0, len(changed), self.page):
                self._write(target, tenant, changed[start : start + self.page], embedder, report)
            copied += len(changed)
            keep = {chunk_key(tenant, r["chunk_id"]) for r in records}
            gone = sorted(set(copies) - keep)
            if gone:
                actions = [{"_op_type": "delete", "_index": target, "_id": k} for k in gone]
                self._raise_failed(target, actions, send_bulk(self.engine, actions), report)
                report.removed += len(gone)
                copied += len(gone)
        return copied

    def _write(
        self,
        target: str,
        tenant: str,
        records: list[dict[str, Any]],
        embedder: Embedder,
        report: RebuildReport,
    ) -> None:
        """Index ``records`` into ``target`` now (:meth:`_actions`)."""
        actions = self._actions(target, tenant, records, embedder, report)
        self._raise_failed(target, actions, send_bulk(self.engine, actions), report)

    def _actions(
        self,
        target: str,
        tenant: str,
        records: list[dict[str, Any]],
        embedder: Embedder,
        report: RebuildReport,
    ) -> list[dict[str, Any]]:
        """The bulk actions indexing ``records`` into ``target`` under their keys: re-embedded
        where the model changes (audit copies carry no vector), their client-side terms brought
        to the current analysis version."""
        out = [copy_record(r) for r in records]
        # Embedded again: a record of another model, and one whose vector was not read (never
        # written without one).
        needs = [
            r
            for r in out
            if _live(r) and (r.get("embedding_model") != embedder.model_id or "embedding" not in r)
        ]
        if needs:
            vectors = embedder.embed_passages([r["search_payload"] for r in needs])
            for r, v in zip(needs, vectors, strict=True):
                r["embedding"] = [float(x) for x in v]
                r["embedding_model"] = embedder.model_id
            report.embedded += len(needs)
        return [
            {
                "_op_type": "index",
                "_index": target,
                "_id": chunk_key(tenant, r["chunk_id"]),
                "_source": r,
            }
            for r in out
        ]

    @staticmethod
    def _raise_failed(
        target: str,
        actions: list[dict[str, Any]],
        failed: list[dict[str, Any]],
        report: RebuildReport,
    ) -> None:
        """Record and raise the failed items of one bulk request (nothing is dropped: the run
        stops, and resumes from the last page written)."""
        if failed:
            report.failed.extend(failed)
            raise ConfigurationError(
                f"{len(failed)} of {len(actions)} records could not be written to {target} "
                f"(first: {failed[0]['reason']})",
                hint="fix the cause and run the rebuild again: it resumes where it stopped",
            )

    # -- checks and the switch -----------------------------------------------------------------

    def check(
        self,
        tenant: str,
        source: str,
        target: str,
        embedder: Embedder,
        samples: Iterable[str] = (),
    ) -> dict[str, Any]:
        """What must hold before the switch (ConfigurationError naming what does not): the new
        model recorded, the policy fields mapped as the template maps them, and the sample
        searches answering from the new generation. The records are counted under the write
        barrier, after the last catch-up (:meth:`_same_records`): before it, writers go on."""
        self.engine.refresh(target)
        recorded = self._meta(target).get("embedding_model")
        check_mapped(target, {target: field_types(self._properties(target))}, writing=True)
        questions = list(samples) or self._titles(target, tenant)
        answered = 0
        for q in questions:
            body = tenant_body(
                tenant, {"multi_match": {"query": q, "fields": ["search_payload", "title"]}}, size=1
            )
            hits = self.door.search(target, body, tenant_policy(tenant), what="a sample search")
            answered += bool(hits["hits"]["hits"])
        checks = {
            "model": recorded,
            "samples": {"asked": len(questions), "answered": answered},
        }
        problems = []
        if recorded != embedder.model_id:
            problems.append(f"the new generation records {recorded}, not {embedder.model_id}")
        if answered < len(questions):
            missed = len(questions) - answered
            problems.append(f"{missed} of {len(questions)} sample searches found nothing")
        if problems:
            raise ConfigurationError(
                f"the new generation {target} is not ready: {'; '.join(problems)}",
                hint="run the rebuild again (it resumes and catches up); nothing was switched",
            )
        return checks

    def _same_records(self, tenant: str, source: str, target: str) -> dict[str, int]:
        """The tenant's records, and those with a vector, counted on both sides, writes held
        (ConfigurationError where they differ: nothing is switched)."""
        self.engine.refresh(source)
        self.engine.refresh(target)
        vectors = {"exists": {"field": "embedding"}}
        old, new = self._count(source, tenant), self._count(target, tenant)
        old_v, new_v = self._count(source, tenant, vectors), self._count(target, tenant, vectors)
        if (old, old_v) != (new, new_v):
            raise ConfigurationError(
                f"the new generation {target} is not ready: {new} records ({new_v} with a "
                f"vector) against {old} ({old_v})",
                hint="run the rebuild again (it resumes and catches up); nothing was switched",
            )
        return {"old": old, "new": new, "with_vectors": new_v}

    def _switch(
        self,
        principal: Principal,
        live: Generation,
        target: str,
        embedder: Embedder,
        since: datetime,
        wait: float,
        report: RebuildReport,
    ) -> None:
        tenant, name = principal.tenant, live.name
        with self.corpus_state.writes_held(tenant, wait=wait):
            report.catch_up.append(
                self._catch_up(tenant, live.index, target, embedder, since, report)
            )
            report.checks["records"] = self._same_records(tenant, live.index, target)
            try:
                switch(self.engine, name, live.index, target)
            except Exception as exc:
                raise translate_es_error(exc, what=f"switching {name}") from exc
        report.switched = True
        now = _now().isoformat()
        self.corpus_state.update_rebuild(
            tenant, name,
            lambda s: {"previous": live.index, "switched": now, "started": now},
        )  # fmt: skip

    # -- reading what is there -------------------------------------------------------------------

    def _live(self, name: str) -> Generation:
        live = current(self.engine, name)
        if live is None:
            raise ConfigurationError(
                f"there is no index {name} to rebuild", hint="ingest the tenant's documents first"
            )
        if not live.aliased:
            raise ConfigurationError(
                f"{name} is an index of an earlier release, not yet behind an alias",
                hint="put it behind one first: hybrid-es reindex --adopt (a short write block "
                "while it is cloned)",
            )
        return live

    def _create(self, target: str, embedder: Embedder) -> None:
        if not self.engine.index_exists(target):
            self.engine.create_index(target)
        meta = self._meta(target)
        if meta.get("embedding_model") != embedder.model_id:
            meta = {**meta, "embedding_model": embedder.model_id, "embedding_dims": embedder.dims}
            self.engine.put_mapping(target, {"_meta": meta})

    def _reading(self, source: str, embedder: Embedder) -> dict[str, Any]:
        """What a body reading ``source``'s records to copy adds at its top: where the copies
        keep their vectors (``source`` records ``embedder``'s model) and the engine leaves
        vectors out of ``_source`` (Elasticsearch 9.1 on, ``index.mapping.
        exclude_source_vectors``), the request for them. Where the model changes the vectors
        are not read: they are made again."""
        if self._meta(source).get("embedding_model") != embedder.model_id:
            return {}
        found = self.engine.request(
            "GET",
            f"/{source}/_settings",
            params={"include_defaults": "true", "filter_path": "**.exclude_source_vectors"},
            what=f"reading {source}'s settings",
        )
        excluded = "'exclude_source_vectors': 'true'" in str(found or {})
        return {"_source": {"exclude_vectors": False}} if excluded else {}

    def _since(self, tenant: str) -> datetime:
        """Now, or the start of the earliest writer run of the tenant still in flight (its
        records carry that time), whichever is earlier."""
        pending = self.corpus_state.earliest_pending(tenant)
        now = _now()
        return min(now, pending) if pending is not None else now

    def _recorded_embedder(self, index: str) -> Embedder:
        model = self._meta(index).get("embedding_model")
        if self.recorded is None or not model:
            raise ConfigurationError(
                f"{index} records no embedding model to embed its next generation with",
                hint="name the model: hybrid-es reindex --embedder NAME",
            )
        return self.recorded(str(model))

    def _meta(self, index: str) -> dict[str, Any]:
        (mapping,) = self.engine.get_mapping(index).values()
        return dict(mapping.get("_meta") or {})

    def _properties(self, index: str) -> dict[str, Any]:
        (mapping,) = self.engine.get_mapping(index).values()
        return dict(mapping.get("properties") or {})

    def _count(self, index: str, tenant: str, *clauses: dict[str, Any]) -> int:
        query = tenant_body(tenant, *clauses)["query"]
        return self.door.count(index, query, tenant_policy(tenant))

    def _titles(self, index: str, tenant: str, n: int = 5) -> list[str]:
        body = tenant_body(
            tenant, {"exists": {"field": "title"}}, size=n, _source=["title"],
            sort=[{"chunk_id": "asc"}],
        )  # fmt: skip
        hits = self.door.search(index, body, tenant_policy(tenant), what="sample titles")
        found = [h["_source"].get("title") for h in hits["hits"]["hits"]]
        return [str(t) for t in found if t]


@dataclass(frozen=True)
class _Page:
    """One page of the main pass: its bulk actions, and the position after it."""

    actions: list[dict[str, Any]]
    after: str


def _send_page(engine: Engine, page: _Page) -> list[dict[str, Any]]:
    return send_bulk(engine, page.actions)


FINGERPRINT = ("chunk_id", "ingested_at", "deleted", "superseded_by", "doc_hash", "chunk_hash")
"""What tells a record's copy from its source after a write (every write stamps ``ingested_at``;
the model and the analysis fields differ by design)."""


def fingerprint(record: dict[str, Any]) -> tuple[Any, ...]:
    """The fields of :data:`FINGERPRINT` of a record (pure)."""
    return tuple(record.get(f) for f in FINGERPRINT)


def copy_record(record: dict[str, Any]) -> dict[str, Any]:
    """A stored chunk as the new generation stores it: the same, with the matching fields of
    the current analysis version where it was written by an older one (the folded text and
    title made again from the stored ``search_payload`` and ``title``, then the client-side
    terms from them, as ``ingest.plan`` makes them). Pure."""
    out = dict(record)
    if out.get("analysis_version") != ANALYSIS_VERSION and "search_payload" in out:
        folded = fold_for_matching(str(out["search_payload"]))
        out["search_folded"] = folded
        out["title_folded"] = fold_for_matching(str(out.get("title") or ""))
        out["search_terms"] = client_terms(folded)
        out["code_terms"] = code_terms(folded)
        out["analysis_version"] = ANALYSIS_VERSION
    return out


def _with(values: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A state update that sets ``values``."""
    return lambda state: {**state, **values}


def _live(record: dict[str, Any]) -> bool:
    """Whether a record carries a vector to embed again (an audit copy carries none)."""
    return "embedding" in record or not str(record.get("doc_id", "")).count("::")


def _generation_of(index: str, name: str) -> bool:
    return index.startswith(f"{name}+g") and index[len(name) + 2 :].isdigit()


def _refuse_shared(layout: IndexLayout) -> None:
    """ConfigurationError in the shared tenancy layout: its one chunks index holds every tenant,
    so a rebuild of one tenant would switch every tenant to a generation that holds that
    tenant's records only."""
    if layout.mode == "shared":
        raise ConfigurationError(
            f"a rebuild is per tenant, and in the shared tenancy layout {layout.chunks} holds "
            "every tenant: switching it to a rebuilt generation of one tenant would leave the "
            "others without their records; nothing was changed",
            hint="run the deployment index-per-tenant (HYBRID_ES_TENANCY=index-per-tenant, the "
            "default: each tenant's index is then rebuilt on its own), or set "
            "HYBRID_ES_CHUNKS_INDEX to a new name, run `hybrid-es bootstrap`, ingest every "
            "tenant into it and point the deployment at it",
        )


def _require_writer(principal: Principal) -> None:
    if not principal.is_writer:
        raise PolicyViolationError(
            f"{principal.user_id!r} may not rebuild tenant {principal.tenant!r}'s index: a "
            "rebuild rewrites every record of the tenant",
            hint="run it as the tenant's writer (roles=('hybrid-es-writer',); hybrid-es reindex "
            "does)",
        )


def _now() -> datetime:
    return datetime.now(UTC)


def _parse(value: str) -> datetime:
    dt = datetime.fromisoformat(value)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


__all__ = ["PAGE", "Rebuild", "RebuildReport", "copy_record", "physical"]
