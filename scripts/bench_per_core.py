#!/usr/bin/env python
"""Searches per core: the CPU one default search costs in this process and in the engine, and the
share of the machine's limit (cores x 1000 / CPU-ms per search) a load of 1, 2, 4 and 8
concurrent clients achieves (``benchmarks.per_core``).

    python scripts/bench_per_core.py                         # SciFact, 1/2/4/8 clients, 20 s each
    python scripts/bench_per_core.py --clients 1,4 --seconds 10 --profile 300 --json

The searches are SciFact's judged test queries through ``HybridSearcher.search`` with the query
vector cache off, over the evaluation's index of the collection (ingested first when missing).
The client's CPU is this whole process's (``time.process_time``); the engine's is the nodes'
``_nodes/stats/process`` ``cpu.total_in_millis``, less their background rate measured
before and after each level (a shared node burns CPU for others). A single-thread pass splits the
client's CPU into the query embedding and the rest; ``--profile N`` adds a cProfile of N searches.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench import print_rows
from benchmarks.per_core import rows_table
from benchmarks.per_core_run import Level, PerCoreOptions, run
from hybrid_es.evaluation.collection import default_index
from hybrid_es.settings import Settings

DATASET = (Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets" / "scifact").resolve()


def _counts(text: str) -> tuple[int, ...]:
    counts = tuple(int(x) for x in text.split(",") if x.strip())
    if not counts or not all(1 <= n <= 32 for n in counts):
        raise argparse.ArgumentTypeError("client counts are 1..32, comma-separated")
    return counts


def _options(argv: list[str]) -> tuple[PerCoreOptions, argparse.Namespace]:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--dataset", type=Path, default=DATASET, help="BEIR folder")
    p.add_argument("--split", default="test", help="qrels/<split>.tsv")
    p.add_argument("--embedder", default="minilm", help="minilm | e5 | hash | a model")
    p.add_argument("--index", default=None, help="chunks index (default: the evaluation's)")
    p.add_argument("--state-index", default=None, help="corpus state index (default: eval's)")
    p.add_argument("--clients", type=_counts, default=(1, 2, 4, 8), help="e.g. 1,2,4,8")
    p.add_argument("--seconds", type=float, default=20.0, help="measured window per level")
    p.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds per level")
    p.add_argument("--idle", type=float, default=3.0, help="engine background, per level")
    p.add_argument("--single", type=int, default=200, help="searches of the single-thread pass")
    p.add_argument("--profile", type=int, default=0, help="searches profiled (0: none)")
    p.add_argument("--markdown", action="store_true", help="tables as Markdown")
    p.add_argument("--json", action="store_true", help="one JSON record on stdout")
    a = p.parse_args(argv)
    if not (0 < a.seconds <= 600 and 0 <= a.warmup <= 60 and 0 <= a.idle <= 60):
        p.error("seconds must be 0..600, warmup and idle 0..60 (the run is bounded)")
    if not (1 <= a.single <= 5000 and 0 <= a.profile <= 5000):
        p.error("--single is 1..5000 and --profile 0..5000")
    options = PerCoreOptions(
        dataset=a.dataset,
        index=a.index or default_index(a.dataset, a.embedder),
        state_index=a.state_index or f"{Settings().corpus_state_index}-eval",
        split=a.split,
        embedder=a.embedder,
        clients=a.clients,
        level=Level(warmup=a.warmup, seconds=a.seconds, idle=a.idle),
        single=a.single,
        profile=a.profile,
    )
    return options, a


def main(argv: list[str]) -> int:
    options, args = _options(argv)
    out = run(options, shlex.join(["python", "scripts/bench_per_core.py", *argv]))
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    m = out["machine"]
    head = (
        f"{out['command']}\n{m.get('engine')} {m.get('engine_version')}, {m['nproc']} cores, "
        f"load average {m['load_average_at_start']} -> {out['load_average_at_end']}; "
        f"{out['embedder']}, {out['fusion_path']}, {out['queries']} queries, {out['index']}"
    )
    split = [{"client CPU-ms (1 thread)": k, "value": v} for k, v in out["client_split"].items()]
    tables = [("levels", out["levels"]), ("client split", split)]
    if out["profile"]:
        tables += [(f"profile: {k}", out["profile"][k]) for k in ("areas", "functions")]
    print(head)
    for title, rows in tables:
        if args.markdown:
            print(f"\n{title}\n\n{rows_table(rows)}")
        else:
            print_rows(title, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
