#!/usr/bin/env python
"""Contextual retrieval on the data it was published with, and the cost of re-ingesting.

Part 1 (always): Anthropic's contextual-retrieval cookbook set (``anthropic_codebase``: 90 source
files cut into 737 chunks, 248 questions with their golden chunks). The corpus's own chunks are
used as they are (the ingest is handed a chunker that returns them), one tenant, two chunk
indices built by ``Ingestor``: one without headers, one with the extractive header. Pass@k is the
cookbook's metric: the share of a query's golden chunks found in the top k, averaged over
queries. Pipelines:

- dense only: kNN over the raw chunks (the same policy-filtered ``knn`` leaf the searcher sends);
- hybrid, no context: ``HybridSearcher`` (BM25 + kNN, RRF) over the raw chunks;
- contextual dense: kNN over header + chunk;
- contextual hybrid: ``HybridSearcher`` over header + chunk;
- contextual hybrid + rerank: the same with ``--rerank-model`` (a local CrossEncoder folder), the
  fused top 50 reranked.

The table is printed beside the cookbook's own numbers (``ANCHORS.md``: Voyage embeddings, Claude
3 Haiku headers, Cohere rerank); ours use all-MiniLM-L6-v2 (256-token window) and the extractive
header, offline.

Part 2 (``--scifact``): the SciFact corpus (5,183 abstracts) ingested into its own index three
times: from empty, again unchanged (everything must be skipped: no embedding, no header), and
with 1% of the documents edited (those regenerate all their chunks, the rest are skipped).

Run from the repository root with the project venv::

    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1
    python scripts/bench_contextual.py                     # part 1, about 3 minutes on 2 cores
    python scripts/bench_contextual.py --scifact           # and part 2, about 10 more
    python scripts/bench_contextual.py --json > out.json

Connection settings come from ``HYBRID_ES_*`` (Elasticsearch or OpenSearch: ``hybrid_es.connect``
probes which). The indices are created fresh (and deleted at the end unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.evaluation.bench import engine_line, machine
from hybrid_es.evaluation.cookbook import Codebase, load_codebase
from hybrid_es.evaluation.metering import MeteredEmbedder
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.beir import read_corpus
from hybrid_es.ingest.chunking import Chunk
from hybrid_es.ingest.contextual import (
    Contextualizer,
    ContextUsage,
    ExtractiveContextualizer,
    Header,
    NoContextualizer,
)
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor, IngestReport, chunk_id
from hybrid_es.models import EVERYONE, Principal, RequestScope
from hybrid_es.retrieval.dialects import dialect_for
from hybrid_es.retrieval.embedder import Embedder, Vectors, make_embedder
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.reranker import CrossEncoderReranker
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
DATASETS = (REPO_ROOT / ".." / "shared" / "datasets").resolve()
TENANT = "bench-cc"
PRINCIPAL = Principal(tenant=TENANT, user_id="bench")
KS = (5, 10, 20)
PIPELINES = {
    "dense only": "dense only",
    "hybrid, no context": None,
    "contextual dense": "contextual dense",
    "contextual hybrid": "contextual dense + contextual BM25",
    "contextual hybrid + rerank": "+ rerank",
}
"""Our pipeline -> the cookbook's row in ANCHORS.md (None: the cookbook has no such row)."""


# -- instrumentation (wrappers only: the package code runs unchanged) -------------------------


class CountingContextualizer:
    """Counts the documents a contextualizer was asked for headers (an LLM one calls the model
    once per chunk of each)."""

    def __init__(self, inner: Contextualizer) -> None:
        self.inner = inner
        self.documents = 0
        self.chunks = 0

    @property
    def prompt_version(self) -> str:
        return self.inner.prompt_version

    def headers(self, doc: Document, chunks: Sequence[Chunk], usage: ContextUsage) -> list[Header]:
        self.documents += 1
        self.chunks += len(chunks)
        return self.inner.headers(doc, chunks, usage)


# -- the codebase set --------------------------------------------------------------------------


def _fresh(client: Engine, *names: str) -> None:
    client.delete_index(",".join(names))


def ingest_codebase(
    client: Engine,
    embedder: Embedder,
    cb: Codebase,
    index: str,
    state: str,
    contextualizer: Contextualizer,
) -> tuple[IngestReport, MeteredEmbedder, CountingContextualizer]:
    emb = MeteredEmbedder(embedder)
    ctx = CountingContextualizer(contextualizer)
    ing = Ingestor(
        client,
        emb,
        index=index,
        corpus_state=CorpusState(client, state, url=client.url),
        contextualizer=ctx,
        chunker=lambda doc: cb.chunks[doc.id],
        default_acl=(EVERYONE,),
    )
    return ing.ingest(cb.docs, PRINCIPAL), emb, ctx


def pass_at(ranked: list[str], golden: set[str], k: int) -> float:
    return len(golden & set(ranked[:k])) / len(golden)


def dense_run(client: Engine, index: str, vectors: Vectors, now: datetime) -> list[list[str]]:
    params = RetrievalParams()
    policy = policy_filter(PRINCIPAL, RequestScope(), now)
    dialect = dialect_for(client.flavor)
    out = []
    for v in vectors:
        body = {**dialect.dense_body(v, policy, params), "size": max(KS)}
        resp = client.search(index, body, what="dense search")
        out.append([h["_source"]["chunk_id"] for h in resp["hits"]["hits"]])
    return out


def hybrid_run(searcher: HybridSearcher, queries: list[str], rerank: bool) -> list[list[str]]:
    return [
        [h.chunk_id for h in searcher.search(q, PRINCIPAL, top_k=max(KS), rerank=rerank).hits]
        for q in queries
    ]


def cookbook_anchors(path: Path) -> dict[str, tuple[float, float, float]]:
    """The cookbook's Pass@5/10/20 rows from ANCHORS.md (empty when the file is missing)."""
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    section = text.split("## Anthropic contextual-retrieval cookbook", 1)[-1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"[\d.]+", cells[1]):
            rows[cells[0]] = (float(cells[1]), float(cells[2]), float(cells[3]))
    return rows


def codebase_part(
    args: argparse.Namespace, client: Engine, embedder: Embedder, console: Console
) -> dict[str, Any]:
    cb = load_codebase(args.dataset, tenant=TENANT)
    if args.queries:
        cb.queries = cb.queries[: args.queries]
    plain, ctx_index = f"{args.index_prefix}-plain", f"{args.index_prefix}-ctx"
    state = f"hybrid-es-corpus-state-{args.index_prefix.removeprefix('hybrid-es-chunks-')}"
    _fresh(client, plain, ctx_index, state)
    ingest: dict[str, Any] = {}
    for name, index, contextualizer in (
        ("no header", plain, NoContextualizer()),
        ("extractive header", ctx_index, ExtractiveContextualizer()),
    ):
        console.print(f"ingest {name} -> {index}", highlight=False)
        rep, emb, _ = ingest_codebase(client, embedder, cb, index, state, contextualizer)
        ingest[name] = {
            "seconds": round(rep.seconds, 1),
            "documents": rep.documents,
            "chunks": rep.chunks,
            "embed_seconds": round(emb.seconds, 1),
        }
    rep, emb, ctx = ingest_codebase(
        client, embedder, cb, ctx_index, state, ExtractiveContextualizer()
    )
    ingest["extractive header, again"] = {
        "seconds": round(rep.seconds, 1),
        "documents": rep.documents,
        "chunks": rep.chunks,
        "skipped_unchanged": rep.skipped_unchanged,
        "embedded": emb.passages,
        "header_calls": ctx.documents,
    }
    sample = client.search(
        ctx_index,
        {
            "size": 1,
            "query": {"ids": {"values": [chunk_key(PRINCIPAL.tenant, chunk_id("doc_1", 1, 2))]}},
        },
    )
    header_example = (
        sample["hits"]["hits"][0]["_source"]["context_header"] if sample["hits"]["hits"] else ""
    )

    texts = [q for q, _ in cb.queries]
    golden = [g for _, g in cb.queries]
    now = datetime.now(UTC)
    console.print(f"search: {len(texts)} queries x {len(PIPELINES)} pipelines", highlight=False)
    t = time.perf_counter()
    vectors = embedder.embed_queries(texts)
    runs: dict[str, list[list[str]]] = {}
    runs["dense only"] = dense_run(client, plain, vectors, now)
    runs["contextual dense"] = dense_run(client, ctx_index, vectors, now)
    url = client.url
    for name, index in (("hybrid, no context", plain), ("contextual hybrid", ctx_index)):
        searcher = HybridSearcher(client, embedder, index=index, corpus_state_index=state, url=url)
        runs[name] = hybrid_run(searcher, texts, rerank=False)
        fusion = f"{searcher._path()[0]}"
    if args.rerank_model:
        searcher = HybridSearcher(
            client,
            embedder,
            index=ctx_index,
            corpus_state_index=state,
            reranker=CrossEncoderReranker(args.rerank_model),
            url=url,
        )
        runs["contextual hybrid + rerank"] = hybrid_run(searcher, texts, rerank=True)
    search_seconds = time.perf_counter() - t
    table = {
        name: [
            round(
                100
                * sum(pass_at(r, g, k) for r, g in zip(ranked, golden, strict=True))
                / len(golden),
                2,
            )
            for k in KS
        ]
        for name, ranked in runs.items()
    }
    if not args.keep:
        _fresh(client, plain, ctx_index, state)
    return {
        "queries": len(texts),
        "chunks": sum(len(c) for c in cb.chunks.values()),
        "documents": len(cb.docs),
        "ingest": ingest,
        "pass_at_k": table,
        "search_seconds": round(search_seconds, 1),
        "fusion_path": fusion,
        "header_example": header_example,
        "anchors": cookbook_anchors(args.dataset.parent / "ANCHORS.md"),
    }


# -- SciFact: the cost of re-ingesting --------------------------------------------------------


def scifact_part(
    args: argparse.Namespace, client: Engine, embedder: Embedder, console: Console
) -> dict[str, Any]:
    root = args.scifact_dataset
    docs = list(read_corpus(root, tenant="bench-scifact"))
    if args.scifact_docs:
        docs = docs[: args.scifact_docs]
    index = f"{args.index_prefix}-scifact"
    state = "hybrid-es-corpus-state-bench-scifact"
    _fresh(client, index, state)
    edited = [
        Document.model_validate(
            {**d.model_dump(), "body": d.body + " (Edited: one sentence added.)"}
        )
        if i % 100 == 0
        else d
        for i, d in enumerate(docs)
    ]
    runs = {}
    for name, batch in (("first ingest", docs), ("unchanged", docs), ("1% edited", edited)):
        console.print(f"scifact: {name} ({len(batch)} documents)", highlight=False)
        emb = MeteredEmbedder(embedder)
        ctx = CountingContextualizer(ExtractiveContextualizer())
        ing = Ingestor(
            client,
            emb,
            index=index,
            corpus_state=CorpusState(client, state, url=client.url),
            contextualizer=ctx,
            default_acl=(EVERYONE,),
        )
        rep = ing.ingest(batch, Principal(tenant="bench-scifact", user_id="bench"))
        runs[name] = {
            "seconds": round(rep.seconds, 1),
            "documents": rep.documents,
            "skipped_unchanged": rep.skipped_unchanged,
            "chunks_written": rep.chunks,
            "removed_chunks": rep.removed_chunks,
            "embedded": emb.passages,
            "embed_seconds": round(emb.seconds, 1),
            "header_calls": ctx.documents,
            "docs_per_second": round(rep.documents / rep.seconds, 1),
            "chunks_in_index": client.count(index),
        }
    if not args.keep:
        _fresh(client, index, state)
    return {"index": index, "runs": runs}


# -- output ------------------------------------------------------------------------------------


def print_report(console: Console, out: dict[str, Any]) -> None:
    m = out["machine"]
    console.print(
        f"[bold]command:[/bold] {out['command']}\n[bold]machine:[/bold] nproc={m['nproc']}, "
        f"{m['platform']}, python {m['python']}, {engine_line(m)}; "
        f"embedder {out['embedder']}",
        highlight=False,
        soft_wrap=True,
    )
    cb = out["codebase"]
    t = Table(
        title=f"ingest: anthropic_codebase ({cb['documents']} files, {cb['chunks']} chunks)",
        title_justify="left",
    )
    for c in (
        "run",
        "seconds",
        "documents",
        "chunks written",
        "skipped",
        "embedded",
        "header calls",
    ):
        t.add_column(c, justify="right" if c != "run" else "left")
    for name, r in cb["ingest"].items():
        t.add_row(
            name,
            str(r["seconds"]),
            str(r["documents"]),
            str(r["chunks"]),
            str(r.get("skipped_unchanged", "-")),
            str(r.get("embedded", r["chunks"])),
            str(r.get("header_calls", "-")),
        )
    console.print(t)
    t = Table(
        title=f"Pass@k on anthropic_codebase, {cb['queries']} queries (ours | cookbook)",
        title_justify="left",
    )
    t.add_column("pipeline")
    for k in KS:
        t.add_column(f"Pass@{k}", justify="right")
    for k in KS:
        t.add_column(f"cookbook @{k}", justify="right", style="dim")
    for name, anchor in PIPELINES.items():
        ours = cb["pass_at_k"].get(name)
        ref = cb["anchors"].get(anchor) if anchor else None
        t.add_row(
            name,
            *([f"{v:.2f}" for v in ours] if ours else ["not run"] * 3),
            *([f"{v:.2f}" for v in ref] if ref else ["-"] * 3),
        )
    console.print(t)
    console.print(
        f"fusion: {cb['fusion_path']}; search {cb['search_seconds']} s; "
        f"header of doc_1 chunk 2: {cb['header_example']!r}",
        highlight=False,
        soft_wrap=True,
    )
    if "scifact" in out:
        t = Table(title="re-ingest on SciFact (extractive headers)", title_justify="left")
        cols = (
            "seconds",
            "documents",
            "skipped_unchanged",
            "chunks_written",
            "removed_chunks",
            "embedded",
            "header_calls",
            "docs_per_second",
            "chunks_in_index",
        )
        t.add_column("run")
        for c in cols:
            t.add_column(c.replace("_", " "), justify="right")
        for name, r in out["scifact"]["runs"].items():
            t.add_row(name, *(str(r[c]) for c in cols))
        console.print(t)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--dataset", type=Path, default=DATASETS / "anthropic_codebase")
    p.add_argument("--queries", type=int, default=None, help="first N queries (default: all)")
    p.add_argument(
        "--rerank-model", default=None, help="local CrossEncoder folder (else no rerank row)"
    )
    p.add_argument("--embedder", default="minilm", help="minilm | e5 | a model path")
    p.add_argument("--index-prefix", default="hybrid-es-chunks-bench-ctx")
    p.add_argument("--scifact", action="store_true", help="also measure re-ingest on SciFact")
    p.add_argument("--scifact-dataset", type=Path, default=DATASETS / "scifact")
    p.add_argument("--scifact-docs", type=int, default=None, help="first N SciFact documents")
    p.add_argument("--keep", action="store_true", help="keep the benchmark indices")
    p.add_argument("--json", action="store_true", help="print one JSON object, no tables")
    args = p.parse_args(argv)
    console = Console(stderr=args.json)
    if not console.is_terminal:
        console.width = max(console.width, 140)
    client = connect(Settings())
    embedder = make_embedder(args.embedder)
    out: dict[str, Any] = {
        "command": "python "
        + shlex.join(sys.argv if argv is None else ["scripts/bench_contextual.py", *argv]),
        "machine": machine(client),
        "embedder": embedder.model_id,
    }
    t = time.perf_counter()
    out["codebase"] = codebase_part(args, client, embedder, console)
    if args.scifact:
        out["scifact"] = scifact_part(args, client, embedder, console)
    out["seconds"] = round(time.perf_counter() - t, 1)
    if args.json:
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        print_report(console, out)
        console.print(f"total {out['seconds']} s", highlight=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
