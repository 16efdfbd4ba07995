#!/usr/bin/env python
"""A tenant's chunks index rebuilt online under searches and writes (issue 37): another embedder
(``--scenario embedder``: float32 MiniLM to int8 MiniLM) or another analysis profile
(``--scenario analysis``), then the searches failed, the hits of another tenant, the writes lost
or doubled, nDCG@10 against a fresh ingest, switching back, and the rebuild's throughput against
the encoder alone. Prints a table (``--json`` for the raw figures).

Run from the repository root with the project venv::

    export PATH=~/.cache/hybrid-es/venv/bin:$PATH HF_HUB_OFFLINE=1
    python scripts/bench_rebuild.py --scenario embedder --docs 2000
    python scripts/bench_rebuild.py --scenario analysis --docs 2000

Connection settings come from ``HYBRID_ES_*`` (Elasticsearch or OpenSearch). Library code:
``benchmarks.rebuild_load``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import bench_client, print_rows
from benchmarks.rebuild_load import run, table
from hybrid_es.encoders.embedder import make_embedder
from hybrid_es.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
DATASETS = (REPO_ROOT / ".." / "shared" / "datasets").resolve()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--scenario", choices=("embedder", "analysis"), default="embedder")
    p.add_argument("--dataset", type=Path, default=DATASETS / "scifact", help="BEIR folder")
    p.add_argument("--docs", type=int, default=2000, help="documents of the rebuilt tenant")
    p.add_argument("--write-every", type=float, default=0.5, help="seconds between writes")
    p.add_argument("--searchers", type=int, default=2, help="searching threads")
    p.add_argument("--after", type=float, default=10.0, help="seconds of load after the switch")
    p.add_argument("--json", action="store_true", help="print one JSON object, no table")
    args = p.parse_args(argv)
    if args.docs < 1 or args.searchers < 1 or args.write_every <= 0:
        p.error("--docs and --searchers must be >= 1, --write-every > 0")
    settings = Settings()
    es = bench_client(settings)
    log = (lambda _m: None) if args.json else (lambda m: print(m, file=sys.stderr))
    before = make_embedder("minilm", runtime="onnx")
    after = make_embedder("minilm", runtime="onnx-int8") if args.scenario == "embedder" else before
    for emb in {id(before): before, id(after): after}.values():
        emb.embed_queries(["warm-up"])
    outcome = run(
        es,
        settings,
        args.dataset,
        scenario=args.scenario,
        before=before,
        after=after,
        docs=args.docs,
        write_every=args.write_every,
        searchers=args.searchers,
        after_s=args.after,
        log=log,
    )
    command = "python " + shlex.join(
        sys.argv if argv is None else ["scripts/bench_rebuild.py", *argv]
    )
    if args.json:
        data = {k: v for k, v in vars(outcome).items() if k not in ("load",)}
        for key in ("rebuild", "as_written", "merged", "switched_back", "alone"):
            data[key] = asdict(getattr(outcome, key))
        data["load"] = {k: v for k, v in vars(outcome.load).items() if k != "stop"}
        print(json.dumps({"command": command, **data}, default=str, indent=2))
    else:
        print_rows(
            f"Online rebuild ({args.scenario})",
            [{"what": what, "measured": value} for what, value in table(outcome)],
            width=120,
        )
        if outcome.load.failed or outcome.load.write_errors:
            for line in [*outcome.load.failed, *outcome.load.write_errors][:10]:
                print("  " + line)
        print(f"\n{command}")
    bad = outcome.load.failed or outcome.load.cross_tenant or outcome.lost or outcome.twice
    return 1 if bad or not outcome.rebuild.switched else 0


if __name__ == "__main__":
    raise SystemExit(main())
