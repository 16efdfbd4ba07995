"""An ingest run in a process of its own, for tests/cluster/test_node_loss.py to SIGKILL mid-way
(a writer that crashes: its corpus-state marker stays behind, some batches written, the rest not).

    python tests/cluster/node_loss_ingest.py '<json>'

The JSON names the cluster (``url``: node URLs, comma-separated; ``username``, ``password``),
the indices (``chunks``, ``packets``, ``corpus_state``), the ``tenant``, the documents
(``docs``: id, title, body), ``batch_size`` and ``pause_s``: a pause after each batch, the time
a real embedder would take, so that the kill lands between batches. Prints ``batch N`` after
each batch is written and ``done`` at the end, each line flushed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pydantic import SecretStr

from hybrid_es.cluster.engine import connect
from hybrid_es.evaluation.metering import HashEmbedder
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import EVERYONE, Principal
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout


def main() -> int:
    job = json.loads(sys.argv[1])
    settings = Settings(
        url=job["url"],
        username=job["username"],
        password=SecretStr(job["password"]),
        ca_certs=None,
        request_timeout=30,
    )
    layout = IndexLayout(
        chunks=job["chunks"],
        packets=job["packets"],
        corpus_state=job["corpus_state"],
        mode="shared",
    )
    ingestor = Ingestor(
        connect(settings),
        HashEmbedder(),
        layout=layout,
        batch_size=int(job["batch_size"]),
        default_acl=(EVERYONE,),
    )
    done = 0

    def progress(n: int) -> None:
        nonlocal done
        done += 1
        print(f"batch {done}", flush=True)
        time.sleep(float(job["pause_s"]))

    docs = [Document(tenant=job["tenant"], **d) for d in job["docs"]]
    ingestor.ingest(docs, Principal(tenant=job["tenant"], user_id="loader"), progress=progress)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
