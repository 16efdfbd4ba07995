"""Every slice of an index sync at once, each in a process of its own on this machine
(``hybrid-es ingest --from-index SRC --workers N``): the same as N processes started by hand with
``--slices N --slice K`` (``ingest.sync``), which is what each worker is.

A worker is a fresh interpreter (``spawn``): it connects to both clusters from the settings it is
given and loads its own embedder, its torch and OpenMP threads held to C/N on a machine of C
cores (ONNX Runtime's int8 passages take one thread per core in every process whatever they are
told: the workers then share the cores through the scheduler). Their progress comes back over a
queue; their results are added up (:func:`merge`).
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queues
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hybrid_es.cluster.engine import connect
from hybrid_es.cluster.source_connection import SourceSettings, connect_source
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders, make_embedders
from hybrid_es.errors import ConfigurationError, HybridEsError
from hybrid_es.ingest import sync_state as states
from hybrid_es.ingest.sync import IndexSource, SyncHow, SyncRun, sync_index
from hybrid_es.models import Principal
from hybrid_es.settings import Settings


@dataclass(frozen=True)
class SliceJob:
    """Everything a worker needs to sync one slice, picklable: the deployment's settings, the
    source's, the embedder (a name, or an embedder object that pickles), the source, the caller
    and how (``how.slice`` is the worker's slice)."""

    settings: Settings
    source_settings: SourceSettings
    embedder: str | Embedder | Embedders
    source: IndexSource
    principal: Principal
    how: SyncHow
    threads: int | None = None
    """Torch and OpenMP threads of the worker (None: the runtime's own count)."""


def limit_threads(threads: int | None) -> None:
    """Hold this process's torch and OpenMP to ``threads`` threads (before a model loads)."""
    if not threads:
        return
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)
    try:
        import torch
    except ImportError:  # pragma: no cover - the models extra brings torch
        return
    torch.set_num_threads(threads)


def run_slice(
    job: SliceJob,
    *,
    on_total: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> SyncRun:
    """Sync ``job``'s slice in this process (what a worker runs)."""
    limit_threads(job.threads)
    target = connect(job.settings)
    layout = job.settings.layout()
    source = connect_source(job.source_settings, target, layout, job.source.index)
    embedder = job.embedder
    if isinstance(embedder, str):
        s = job.settings
        embedder = make_embedders(embedder, query_threads=s.embed_threads, runtime=s.embed_runtime)
    return sync_index(
        source,
        target,
        embedder,
        job.source,
        job.principal,
        layout=layout,
        how=job.how,
        on_total=on_total,
        progress=progress,
    )


def _worker(job: SliceJob, out: Any) -> None:
    try:
        result = run_slice(
            job,
            on_total=lambda n: out.put(("total", n)),
            progress=lambda n: out.put(("progress", n)),
        )
    except HybridEsError as exc:
        out.put(("error", exc))
    except BaseException as exc:  # anything else, passed on as text
        out.put(("error", HybridEsError(f"{type(exc).__name__}: {exc}")))
    else:
        out.put(("done", result))


def sync_workers(
    job: SliceJob,
    workers: int,
    *,
    on_total: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> SyncRun:
    """Sync every slice of ``job.how.slices`` (= ``workers``) in as many worker processes, each
    on its share of this machine's cores; the results added up (:func:`merge`). Raises the first
    worker's error, after every worker ended (what the others wrote stays written, and a run
    again resumes)."""
    if workers < 1 or job.how.slices != workers:
        raise ConfigurationError(
            f"--workers {workers} reads {workers} slices: give --slices {workers} or none"
        )
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    threads = job.threads or max(1, (os.cpu_count() or 1) // workers)
    procs = [
        ctx.Process(
            target=_worker,
            args=(replace(job, how=replace(job.how, slice=k), threads=threads), out),
            name=f"hybrid-es-sync-{k}",
        )
        for k in range(workers)
    ]
    for p in procs:
        p.start()
    results: list[SyncRun] = []
    errors: list[HybridEsError] = []
    totals = 0
    ended = 0
    while ended < workers:
        try:
            kind, value = out.get(timeout=1.0)
        except queues.Empty:
            if all(not p.is_alive() for p in procs) and out.empty():
                errors.append(HybridEsError("a sync worker ended without a result"))
                break
            continue
        if kind == "total":
            totals += int(value)
            if on_total:
                on_total(totals)
        elif kind == "progress":
            if progress:
                progress(int(value))
        else:
            ended += 1
            (results if kind == "done" else errors).append(value)
    for p in procs:
        p.join()
    if errors:
        raise errors[0]
    merged = merge(results)
    merged.seconds = time.perf_counter() - t0
    return merged


def merge(parts: list[SyncRun]) -> SyncRun:
    """The results of a run's slices as one: counts added, the finisher's deletions, whole-run
    counts and checkpoint, the examples and failures joined."""
    first = parts[0]
    out = SyncRun(
        first.source,
        first.tenant,
        first.kind,
        first.mode,
        first.read,
        run_id=first.run_id,
        slices=first.slices,
        slice=None,
    )
    for part in sorted(parts, key=lambda p: p.slice or 0):
        out.counts = states.add_counts(out.counts, part.counts)
        out.total += part.total
        out.resumed = out.resumed or part.resumed
        out.examples += part.examples[: max(0, 20 - len(out.examples))]
        out.failures += part.failures
        out.warnings = list(dict.fromkeys(out.warnings + part.warnings))
        for tenant, mark in part.watermarks.items():
            out.watermarks[tenant] = max(mark, out.watermarks.get(tenant, 0))
        if part.finished:
            out.finished = True
            out.deleted = part.deleted
            out.run_counts = part.run_counts
            out.checkpoint = part.checkpoint
    return out
