"""A tenant's chunks index rebuilt online while the tenant is searched and written (issue 37):
what ``scripts/bench_rebuild.py`` runs and reports.

The world: two tenants in one deployment (index-per-tenant, every name the benchmark's own).
``bench-a`` holds the first ``--docs`` documents of a shared collection (BEIR layout), ``bench-b``
a handful of its own records; both are searched the whole time, each by its own reader, and every
hit is checked for its tenant. A writer adds records to ``bench-a`` every ``--write-every``
seconds and deletes some of them again, recording each that was acknowledged.

The run: bench-a's index is rebuilt (``ingest.rebuild``) to another embedder (``--scenario
embedder``: float32 MiniLM to the fused int8 one, the same tokenizer, so the chunks are the
same), or to another analysis profile (``--scenario analysis``: the templates installed again
with the other profile, the same model). The load goes on through the switch and for
``--after`` seconds beyond it. Then:

- **searches**: how many failed (an exception), and how many hits named another tenant;
- **writes**: every acknowledged record is in the new generation once, deleted where it was
  deleted; none lost, none twice;
- **records**: the new generation's records against a fresh ingest of the same records (the
  collection's and the load's, deletions included) by the new embedder (or profile) in a
  deployment of its own, field by field;
- **quality**: nDCG@10 of the collection's test questions against that fresh ingest, and how
  many questions' ranked hits are identical: as each index was written, then with both
  compacted (one segment, no deleted record: ``_compact``). As written they differ by design:
  HNSW graphs and ``int8_hnsw``'s quantiles are per segment, and a record written again leaves
  a soft-deleted copy that counts in BM25's statistics;
- **switching back**: the old generation, served again with the writes made since caught up,
  against a fresh ingest of the same records by the old embedder (or profile), both compacted;
  and a rebuild with no load against the fresh ingest, both compacted;
- **throughput**: records embedded a second by a rebuild with no load (of that fresh old-model
  ingest, to the new model) against the encoder alone embedding the same texts; and by the
  rebuild under load, which shares the cores with the searches and the writes.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.scale_load import force_merge
from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import Capabilities, probe
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.generations import create
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.evaluation.metrics import evaluate, ranking_to_run
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.beir import read_corpus, read_qrels, read_queries
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.ingest.rebuild import Rebuild, RebuildReport
from hybrid_es.models import EVERYONE, WRITER_ROLE, Principal
from hybrid_es.retrieval.door import ChunksDoor, tenant_body, tenant_policy
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout

A, B = "bench-a", "bench-b"
WRITER_A = Principal(tenant=A, user_id="loader", roles=(WRITER_ROLE,))
WRITER_B = Principal(tenant=B, user_id="loader", roles=(WRITER_ROLE,))
READER_A = Principal(tenant=A, user_id="reader-a")
READER_B = Principal(tenant=B, user_id="reader-b")
B_DOCS = [
    Document(id=f"b-{i}", tenant=B, body=f"Tenant B's own note {i} about cells and proteins.")
    for i in range(20)
]


@dataclass
class Load:
    """What the load saw: searches done and failed, hits of another tenant, the writes
    acknowledged (record id -> deleted)."""

    searches: int = 0
    failed: list[str] = field(default_factory=list)
    cross_tenant: int = 0
    written: dict[str, bool] = field(default_factory=dict)
    write_errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


@dataclass
class Compared:
    """One generation's answers to the test questions against a fresh ingest of the same
    records (the same model and analysis) in a deployment of its own."""

    ndcg: float
    ndcg_fresh: float
    same: int
    """Questions whose ranked hits are identical."""
    same_set: int = 0
    """Questions whose top 10 hold the same documents, in any order."""


@dataclass
class Outcome:
    scenario: str
    engine: str
    docs: int
    records: int
    rebuild: RebuildReport
    load: Load
    lost: list[str]
    twice: list[str]
    questions: int
    same_records: tuple[int, int, list[str]]
    """Records of the new generation identical to the fresh ingest's, of how many, and the
    fields that differed and the first keys of records that did (:func:`_same_records`)."""
    back_records: tuple[int, int, list[str]]
    """The same for the generation switched back to, against the fresh old-model ingest."""
    as_written: Compared
    """The new generation against the fresh ingest, each with the segments its writes made."""
    merged: Compared
    """The same, both compacted (:func:`_compact`)."""
    switched_back: Compared
    """The old generation, switched back to (with the writes made since caught up), against a
    fresh ingest of the same records with the old model, both compacted."""
    alone: Compared
    """A rebuild with no load (of the fresh old-model ingest) against the fresh new-model
    ingest, both compacted."""
    encoder_per_s: float
    rebuild_per_s: float
    """A rebuild with no load (of the fresh old-model ingest), records embedded a second."""
    rebuild_load_per_s: float
    """The rebuild under load."""
    seconds: dict[str, float]


def world(settings: Settings, tag: str) -> IndexLayout:
    """The benchmark's own index names (index-per-tenant)."""
    return IndexLayout(
        chunks=f"{settings.chunks_index}-bench-rb-{tag}",
        packets=f"{settings.packets_index}-bench-rb-{tag}",
        corpus_state=f"{settings.corpus_state_index}-bench-rb-{tag}",
    )


def _docs(dataset: Path, n: int) -> list[Document]:
    out = []
    for d in read_corpus(dataset, tenant=A, acl_groups=(EVERYONE,)):
        out.append(d)
        if len(out) >= n:
            break
    return out


def _questions(dataset: Path, kept: set[str]) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The test questions judged on a kept document, and their judgements on kept ones."""
    queries = read_queries(dataset)
    qrels = {
        q: {d: g for d, g in docs.items() if d in kept}
        for q, docs in read_qrels(dataset, "test").items()
    }
    qrels = {q: d for q, d in qrels.items() if any(g > 0 for g in d.values())}
    return {q: queries[q] for q in qrels if queries.get(q)}, qrels


def _ranked(searcher: HybridSearcher, questions: dict[str, str]) -> dict[str, list[str]]:
    return {
        q: [h.doc_id for h in searcher.search(text, READER_A, rerank=False).hits]
        for q, text in questions.items()
    }


def _ndcg(ranked: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    run = {q: ranking_to_run(list(dict.fromkeys(docs))) for q, docs in ranked.items()}
    return evaluate(qrels, run, ("ndcg@10",)).scores["ndcg@10"]


def _searching(
    searcher: HybridSearcher, principal: Principal, texts: list[str], load: Load
) -> Callable[[], None]:
    def run() -> None:
        i = 0
        while not load.stop.is_set():
            text = texts[i % len(texts)]
            i += 1
            try:
                hits = searcher.search(text, principal, rerank=False).hits
            except Exception as exc:  # the count is the subject
                load.failed.append(f"{principal.tenant}: {type(exc).__name__}: {exc}"[:300])
                continue
            finally:
                load.searches += 1
            load.cross_tenant += sum(h.source.get("tenant") != principal.tenant for h in hits)

    return run


def _writing(ingestor: Ingestor, every: float, load: Load) -> Callable[[], None]:
    def run() -> None:
        n = 0
        while not load.stop.is_set():
            n += 1
            doc_id = f"live-{n}"
            body = f"Maintenance note {n}: the printer on floor {n % 7} needs toner."
            doc = Document(id=doc_id, tenant=A, body=body, acl_groups=(EVERYONE,))
            try:
                ingestor.ingest([doc], WRITER_A)
                load.written[doc_id] = False
                if n % 5 == 0:  # now and then a record goes again
                    gone = f"live-{n - 2}"
                    if ingestor.delete_document(WRITER_A, gone):
                        load.written[gone] = True
            except Exception as exc:  # reported, never dropped
                load.write_errors.append(f"{doc_id}: {type(exc).__name__}: {exc}"[:300])
            load.stop.wait(every)

    return run


def _stored(es: Engine, name: str) -> dict[str, list[bool]]:
    """Each record id of tenant A under ``name`` -> the deleted mark of each of its chunks."""
    out: dict[str, list[bool]] = {}
    for src in _read(es, name, _source=["doc_id", "deleted"]):
        out.setdefault(str(src["doc_id"]), []).append(bool(src.get("deleted")))
    return out


def _read(es: Engine, name: str, **top: Any) -> list[dict[str, Any]]:
    """Tenant A's records under ``name`` (every one: deleted ones too), through the door."""
    body = tenant_body(A, **top)
    return [h["_source"] for h in ChunksDoor(es).scan(name, body, tenant_policy(A))]


def run(
    es: Engine,
    settings: Settings,
    dataset: Path,
    *,
    scenario: str,
    before: Embedder,
    after: Embedder,
    docs: int,
    write_every: float,
    searchers: int,
    after_s: float,
    log: Callable[[str], None] = print,
) -> Outcome:
    """One rebuild under load (module docstring); cleans up every object it made."""
    tag = uuid.uuid4().hex[:8]
    layout = world(settings, tag)
    fresh, fresh_old = world(settings, tag + "f"), world(settings, tag + "o")
    layouts = [layout, fresh, fresh_old]
    times: dict[str, float] = {}
    caps = probe(es)
    new_profile = caps.analysis_profile
    old_profile = (
        ("standard" if new_profile == "full" else "full") if scenario == "analysis" else ""
    )
    # What a deployment configured with the new model serves: the old generation by the model
    # it records (a MiniLM on the runtime that wrote it), the new one by the new model.
    embedders = Embedders(after)
    embedders.make_minilm = lambda runtime: before
    name = layout.chunks_for(A)
    try:
        if old_profile:
            log(f"analysis: the index is written with {old_profile}, rebuilt with {new_profile}")
            _install(es, settings, caps, old_profile)
        for each in layouts:
            es.create_index(each.corpus_state)
        state = CorpusState(es, layout.corpus_state)
        for tenant in (A, B):
            create(es, layout.chunks_for(tenant))
        if old_profile:
            create(es, fresh_old.chunks_for(A))
            _install(es, settings, caps, new_profile)
        corpus = _docs(dataset, docs)
        questions, qrels = _questions(dataset, {d.id for d in corpus})
        t = time.perf_counter()
        ingestor = Ingestor(es, before, layout=layout, corpus_state=state)
        ingestor.ingest(corpus, WRITER_A)
        ingestor.ingest(B_DOCS, WRITER_B)
        times["ingest"] = time.perf_counter() - t
        log(f"ingested {len(corpus)} documents in {times['ingest']:.0f} s")
        texts = _payloads(es, name)

        # The load, and the rebuild under it; the load goes on after the switch.
        load = Load()
        threads = _load(es, embedders, layout, state, questions, load, searchers, write_every)
        t = time.perf_counter()
        recorded = lambda model: embedders.recorded(name, model)  # noqa: E731
        rebuild = Rebuild(es, layout, state, embedder=after, recorded=recorded)
        try:
            report = rebuild.run(WRITER_A, switch_wait=120)
        except BaseException:
            load.stop.set()
            for th in threads:
                th.join(60)
            raise
        times["rebuild under load"] = time.perf_counter() - t
        log(
            f"rebuilt {report.copied} records ({report.embedded} embedded) in "
            f"{times['rebuild under load']:.0f} s under load; switched: {report.switched}"
        )
        load.stop.wait(after_s)
        load.stop.set()
        for th in threads:
            th.join(60)
        es.refresh(name)
        stored = _stored(es, name)

        # The same records ingested fresh: with the new model (and profile), and the old.
        live = [
            Document(id=d, tenant=A, body=_live_body(d), acl_groups=(EVERYONE,), deleted=gone)
            for d, gone in load.written.items()
        ]
        for each, model in ((fresh, after), (fresh_old, before)):
            if not es.indices(each.chunks_for(A)):
                create(es, each.chunks_for(A))
            work = Ingestor(es, model, layout=each, corpus_state=CorpusState(es, each.corpus_state))
            work.ingest([*corpus, *live], WRITER_A)
        same_records = _same_records(es, name, fresh.chunks_for(A))
        as_written = _compare(es, embedders, layout, fresh, questions, qrels, merge=False)
        merged = _compare(es, embedders, layout, fresh, questions, qrels, merge=True)
        rebuild.switch_back(WRITER_A)
        log("switched back")
        es.refresh(name)
        back_records = _same_records(es, name, fresh_old.chunks_for(A))
        back = _compare(es, embedders, layout, fresh_old, questions, qrels, merge=True)

        # A rebuild with no load: the fresh old-model ingest, to the new model; then its
        # answers against the fresh new-model ingest.
        # The encoder alone on the texts it embeds, just before and just after (the machine's
        # other work moves both alike).
        payloads = _payloads(es, fresh_old.chunks_for(A))
        encoder = [_embedding_seconds(after, payloads)]
        t = time.perf_counter()
        quiet_state = CorpusState(es, fresh_old.corpus_state)
        quiet = Rebuild(es, fresh_old, quiet_state, embedder=after).run(WRITER_A)
        times["rebuild alone"] = time.perf_counter() - t
        encoder.append(_embedding_seconds(after, payloads))
        times["encoder"] = statistics.mean(encoder)
        log(
            f"rebuilt {quiet.embedded} records alone in {times['rebuild alone']:.0f} s; the "
            f"encoder alone: {encoder[0]:.0f} s, {encoder[1]:.0f} s"
        )
        alone = _compare(es, embedders, fresh_old, fresh, questions, qrels, merge=True)
        return Outcome(
            scenario=scenario,
            engine=f"{es.name} {es.version}",
            docs=len(corpus),
            records=len(texts),
            rebuild=report,
            load=load,
            lost=sorted(d for d in load.written if d not in stored),
            twice=_twice(stored, load),
            questions=len(questions),
            same_records=same_records,
            back_records=back_records,
            as_written=as_written,
            merged=merged,
            switched_back=back,
            alone=alone,
            encoder_per_s=len(payloads) / times["encoder"],
            rebuild_per_s=_per_s(quiet, times["rebuild alone"]),
            rebuild_load_per_s=_per_s(report, times["rebuild under load"]),
            seconds=times,
        )
    finally:
        es.delete_index(",".join(f"{each.chunks}*,{each.corpus_state}" for each in layouts))
        if old_profile:
            _install(es, settings, caps, new_profile)


def _compact(es: Engine, names: list[str], wait: float = 90.0) -> None:
    """Each index merged to one segment with no deleted record left in it. A record written
    again (a catch-up's copy, a deletion mark) leaves its earlier version behind, soft-deleted
    and kept for the shard's history retention lease (12 h by default); it still counts in
    BM25's statistics, so two indices of the same records score apart until it is merged
    away. The lease is shortened on these (the benchmark's own) indices and the merge asked
    again until nothing deleted remains."""
    settings = {
        "index.merge.policy.expunge_deletes_allowed": 0,
        "index.soft_deletes.retention_lease.period": "1s",
    }
    deadline = time.monotonic() + wait
    for name in names:
        es.put_settings(name, settings)
    for name in names:
        while True:
            es.request(
                "POST", f"/{name}/_forcemerge", params={"only_expunge_deletes": "true"},
                what="expunging deleted records",
            )  # fmt: skip
            force_merge(es, name, 1)
            es.refresh(name)
            stats = es.request("GET", f"/{name}/_stats/docs", what="counting deleted records")
            if not stats["_all"]["primaries"]["docs"]["deleted"]:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} still holds deleted records after {wait:g} s")
            time.sleep(5)


IGNORED = ("ingested_at", "doc_hash")
"""Fields a rebuilt record may differ in from a fresh ingest's: the time it was written, and
the hash of a deleted document (a fresh ingest of a document marked deleted hashes the mark
with it; a document deleted after its ingest keeps the hash it was written with)."""


def _same_records(es: Engine, ours: str, theirs: str) -> tuple[int, int, list[str]]:
    """How many of ``ours``'s records equal ``theirs``'s (the same key, every field but
    :data:`IGNORED`, vectors to the last digit), of how many, and the fields that differed."""

    top: dict[str, Any] = {}
    if es.flavor == "elasticsearch":  # 9.1 on leaves vectors out of _source unless asked
        top["_source"] = {"exclude_vectors": False}

    def records(name: str) -> dict[str, dict[str, Any]]:
        return {chunk_key(A, r["chunk_id"]): r for r in _read(es, name, **top)}

    a, b = records(ours), records(theirs)
    fields: set[str] = set()
    same = near = 0
    differ: list[str] = []
    for key in set(a) | set(b):
        x = {k: v for k, v in a.get(key, {}).items() if k not in IGNORED}
        y = {k: v for k, v in b.get(key, {}).items() if k not in IGNORED}
        if key in a and key in b and x == y:
            same += 1
        elif key in a and key in b and _near(x, y):
            near += 1
            differ.append(key)
        else:
            fields |= {f for f in set(x) | set(y) if x.get(f) != y.get(f)} or {"_id"}
            differ.append(key)
    notes = [f"{near} differ only in vector components, by under 1e-5"] if near else []
    return same, len(set(a) | set(b)), notes + sorted(fields) + sorted(differ)[:3]


def _near(x: dict[str, Any], y: dict[str, Any]) -> bool:
    """Whether two records are equal but for their vectors, which differ by under 1e-5 in
    every component (float32 ONNX: a text's vector moves in its last digits with the
    padding of the batch it was embedded in)."""
    if {k: v for k, v in x.items() if k != "embedding"} != {
        k: v for k, v in y.items() if k != "embedding"
    }:
        return False
    u, v = x.get("embedding") or [], y.get("embedding") or []
    return len(u) == len(v) and all(abs(p - q) < 1e-5 for p, q in zip(u, v, strict=True))


def _embedding_seconds(embedder: Embedder, texts: list[str]) -> float:
    t = time.perf_counter()
    embedder.embed_passages(texts)
    return time.perf_counter() - t


def _per_s(report: RebuildReport, seconds: float) -> float:
    """Records embedded a second (copied, where nothing needed embedding)."""
    return (report.embedded or report.copied) / max(seconds, 1e-9)


def _compare(
    es: Engine,
    embedders: Embedders,
    layout: IndexLayout,
    fresh: IndexLayout,
    questions: dict[str, str],
    qrels: dict[str, dict[str, int]],
    *,
    merge: bool,
) -> Compared:
    """The answers of ``layout``'s tenant A against ``fresh``'s; ``merge``: each index merged
    to one segment first."""
    if merge:
        _compact(es, [layout.chunks_for(A), fresh.chunks_for(A)])
    ours = _ranked(_searcher(es, embedders, layout), questions)
    theirs = _ranked(_searcher(es, embedders, fresh), questions)
    return Compared(
        ndcg=_ndcg(ours, qrels),
        ndcg_fresh=_ndcg(theirs, qrels),
        same=sum(ours[q] == theirs[q] for q in questions),
        same_set=sum(set(ours[q]) == set(theirs[q]) for q in questions),
    )


def _searcher(es: Engine, embedders: Embedders, layout: IndexLayout) -> HybridSearcher:
    return HybridSearcher(es, embedders, layout=layout, query_cache_size=0)


def _payloads(es: Engine, name: str) -> list[str]:
    """The texts a rebuild embeds: each stored record's ``search_payload``."""
    return [r["search_payload"] for r in _read(es, name, _source=["search_payload"])]


def _load(
    es: Engine,
    embedders: Embedders,
    layout: IndexLayout,
    state: CorpusState,
    questions: dict[str, str],
    load: Load,
    searchers: int,
    write_every: float,
) -> list[threading.Thread]:
    """``searchers`` searching threads (tenant A's questions, and tenant B's own) and one
    writer of tenant A, started."""
    searcher = _searcher(es, embedders, layout)
    jobs = [
        _searching(searcher, READER_A if i % 2 == 0 else READER_B, texts, load)
        for i, texts in enumerate(
            [list(questions.values()), ["cells", "proteins"]] * ((searchers + 1) // 2)
        )
    ][:searchers]
    writer = Ingestor(es, embedders, layout=layout, corpus_state=state)
    jobs.append(_writing(writer, write_every, load))
    threads = [threading.Thread(target=job) for job in jobs]
    for th in threads:
        th.start()
    return threads


def _twice(stored: dict[str, list[bool]], load: Load) -> list[str]:
    """The live records stored more than once, or whose deletion mark is not the one written."""
    twice = [d for d, chunks in stored.items() if d.startswith("live-") and len(chunks) > 1]
    wrong = [d for d, gone in load.written.items() if d in stored and any(stored[d]) != gone]
    return sorted({*twice, *wrong})


def _live_body(doc_id: str) -> str:
    n = int(doc_id.split("-")[1])
    return f"Maintenance note {n}: the printer on floor {n % 7} needs toner."


def _install(es: Engine, settings: Settings, caps: Capabilities, profile: str) -> None:
    """The templates installed again with the analysis ``profile``."""
    # The profile follows the analyzers the probe found (``Capabilities.analysis_profile``).
    full = {"english", "cjk"}
    kept = [a for a in caps.analyzers if a not in full]
    analyzers = sorted({*kept, *full}) if profile == "full" else kept
    profiled = caps.model_copy(update={"analyzers": type(caps.analyzers)(analyzers)})
    assert profiled.analysis_profile == profile, (profile, profiled.analysis_profile)
    bootstrap(es, profiled, settings, force=True, create_indices=False)


def table(o: Outcome) -> list[tuple[str, str]]:
    """The rows ``scripts/bench_rebuild.py`` prints."""
    r, load, n = o.rebuild, o.load, o.questions

    def versus(c: Compared) -> str:
        diff = abs(c.ndcg - c.ndcg_fresh)
        return (
            f"{c.ndcg:.6f} / {c.ndcg_fresh:.6f} (diff {diff:.1e}); {c.same} of {n} identical, "
            f"{c.same_set} the same set"
        )

    return [
        ("engine; scenario", f"{o.engine}; {o.scenario} ({r.model_from} -> {r.model_to})"),
        ("tenant A: documents, records", f"{o.docs}, {o.records}"),
        ("rebuild: copied, embedded, catch-up passes", f"{r.copied}, {r.embedded}, {r.catch_up}"),
        (
            "searches during the rebuild; failed; hits of another tenant",
            f"{load.searches}; {len(load.failed)}; {load.cross_tenant}",
        ),
        (
            "writes acknowledged; lost; twice or wrongly deleted; write errors",
            f"{len(load.written)}; {len(o.lost)}; {len(o.twice)}; {len(load.write_errors)}",
        ),
        (
            "records identical to a fresh ingest's (fields that differ)",
            f"{o.same_records[0]} of {o.same_records[1]} ({', '.join(o.same_records[2]) or '-'})",
        ),
        (
            "switched back: records identical to a fresh old-model ingest's",
            f"{o.back_records[0]} of {o.back_records[1]} ({', '.join(o.back_records[2]) or '-'})",
        ),
        ("nDCG@10 rebuilt / fresh ingest, as written; top 10", versus(o.as_written)),
        ("nDCG@10 rebuilt / fresh ingest, compacted; top 10", versus(o.merged)),
        ("nDCG@10 switched back / fresh old-model ingest; top 10", versus(o.switched_back)),
        ("nDCG@10 rebuilt with no load / fresh ingest; top 10", versus(o.alone)),
        (
            "records/s: rebuild alone / encoder alone / rebuild under load",
            f"{o.rebuild_per_s:.1f} / {o.encoder_per_s:.1f} / {o.rebuild_load_per_s:.1f} "
            f"(alone: {o.rebuild_per_s / o.encoder_per_s:.0%} of the encoder)",
        ),
        ("seconds: " + ", ".join(o.seconds), ", ".join(f"{v:.0f}" for v in o.seconds.values())),
    ]


__all__ = ["Compared", "Outcome", "run", "table"]
