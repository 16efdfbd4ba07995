#!/usr/bin/env bash
# Set up everything and run the whole test suite against real engines: venv (cached),
# Elasticsearch 9, OpenSearch 2.19 and Elasticsearch 8.19 (fetched from Maven Central, cached),
# lint, type check, then the unit suite alone (on every core, in random order, on a cold numba
# cache), then two lanes side by side: pytest on Elasticsearch 9 (every other test), then the
# smoke test of a local 3-node Elasticsearch 9 cluster (tests/cluster: a node killed and restarted
# under searches); and pytest on OpenSearch (what can differ between the engines), then on
# Elasticsearch 8.19 with elasticsearch-py 8 (what can differ between client majors, plus the
# client-mismatch test with the 9.x client). Each suite run ends with its slowest test files and
# their seconds (tests/conftest.py).
#
#   scripts/test.sh [pytest args]       the same args go to every run but the cluster smoke; with
#                                       args the unit suite is not run apart (the Elasticsearch
#                                       run takes them, in file order, as the whole suite)
#   HYBRID_ES_TEST_ENGINES="elasticsearch"   only the first run (default:
#                                            "elasticsearch opensearch elasticsearch8 cluster")
#   HYBRID_ES_TEST_SERIAL=1             the second lane (OpenSearch, 8.19) after the first, not beside
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VENV="$(scripts/setup.sh | tail -1)"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

# The seed's post-rerank gate needs a trained cross-encoder; training one takes 20 minutes
# (`hybrid-es reranker train`, docs/evaluation.md), so CI uses one only where the cache holds it
# and otherwise that single test is skipped by name.
MODEL="${HYBRID_ES_CACHE:-$HOME/.cache/hybrid-es}/models/scifact-ce"
if [ -z "${HYBRID_ES_TEST_RERANKER:-}" ] && [ -f "$MODEL/hybrid_es_reranker.json" ]; then
  export HYBRID_ES_TEST_RERANKER="$MODEL"
fi

ENGINES="${HYBRID_ES_TEST_ENGINES:-elasticsearch opensearch elasticsearch8 cluster}"
wants() { [[ " $ENGINES " == *" $1 "* ]]; }

# The other nodes start in the background while the linters and the first run go (each start
# overlaps with work that does not need it); `await_node` waits for one and shows its log.
declare -A NODE_PID NODE_LOG
start_node() {  # name command...
  local name=$1; shift
  NODE_LOG[$name]="$(mktemp)"
  "$@" >"${NODE_LOG[$name]}" 2>&1 &
  NODE_PID[$name]=$!
}
await_node() {  # name -> the start's exit status, its log on stderr when it failed
  if wait "${NODE_PID[$1]}"; then cat "${NODE_LOG[$1]}"; return 0; fi
  cat "${NODE_LOG[$1]}" >&2
  return 1
}
# The HTTPS node of tests/integration/test_tls.py (its own instance on port 9243, a 512 MB heap),
# stopped after the Elasticsearch run; the module starts it itself when run alone.
TLS_NODE=(env HYBRID_ES_TLS=1 HYBRID_ES_HEAP=512m HYBRID_ES_START_TIMEOUT=900)
ES8=(env HYBRID_ES_SERVER_VERSION=8.19.21 HYBRID_ES_PORT=9219 HYBRID_ES_START_TIMEOUT=900)
# Elasticsearch 9 starts in the background too, while the linters and the unit suite run (they
# need no node), and the HTTPS node after it in the same job (it shares its download). The runs
# wait for the job; an HTTPS node that did not start only warns (test_tls.py tries once more).
es9_and_tls() {
  scripts/es.sh start || return $?
  if wants elasticsearch && ! "${TLS_NODE[@]}" scripts/es.sh start; then
    echo "test.sh: the HTTPS node did not start (above); test_tls.py tries once more" >&2
  fi
  return 0
}
start_node es9 es9_and_tls
CLIENT_MAJOR_SUITE=(tests/integration/test_{connection,capabilities,bootstrap,ingest,retrieval,filters,golden_bodies,native_fusion,records,packets,traces,isolation,verify}.py)
# OpenSearch runs what can differ between the engines: everything below the engine seam
# (connecting, the capability probe, bootstrap, bulk ingest, the search bodies and both fusion
# paths, records, packets, traces, verify), the whole security suite (DLS, least privilege, every
# CLI path an attacker tries), fuzzing, evaluation (its fusion path is the engine's), and the
# framework stores with their conformance suites (writes, deletes and filters in the engine's
# dialect). Left out, as in the 8.19 lane: what sits above the seam and sends nothing that the
# modules kept do not send already: the two trainers (they mine through the searcher, as
# test_retrieval searches), the long-query eval, the ingest CLI's printing and process boundary,
# the SciFact-sized ingest (test_ingest's bulk path, at scale), and test_render.py (pure).
OPENSEARCH_SUITE=(tests/integration tests/security --ignore=tests/security/test_render.py)
for module in embedder_train reranker_train eval_long_queries ingest_cli ingest_scifact; do
  OPENSEARCH_SUITE+=("--ignore=tests/integration/test_$module.py")
done
# The seconds per test file at the end of each suite run (tests/conftest.py): where CI's time goes.
DURATIONS=(--file-durations=25)
# The 3-node cluster of tests/cluster (instance "cluster", ports 9271-9273, 512 MB heap a node):
# started once the Elasticsearch run is over, so that its start overlaps the second lane rather
# than crowding the first; stopped after its smoke test.
CLUSTER=(env HYBRID_ES_HEAP=512m HYBRID_ES_START_TIMEOUT=900 scripts/es.sh --nodes 3)
if wants elasticsearch8; then start_node es8 "${ES8[@]}" scripts/es.sh start; fi
# The background starts wait longer than a start by hand: beside a busy Elasticsearch run on 2
# cores, OpenSearch's security index took over the default 240 s to initialise.
if wants opensearch; then
  start_node opensearch env HYBRID_OS_START_TIMEOUT=900 scripts/opensearch.sh start
fi

echo "== ruff"; ruff check hybrid_es tests scripts benchmarks
# mypy's incremental cache outside the clone (as the venv and the downloads), so a fresh clone
# rechecks only what changed: mypy compares each file's hash with the cache's, whatever the path
# of the clone (about 6 s instead of 60-100 s on the 2-core machine).
echo "== mypy"
MYPY_CACHE_DIR="${HYBRID_ES_CACHE:-$HOME/.cache/hybrid-es}/mypy" mypy hybrid_es benchmarks
status=0
ES_ARGS=("$@")
if wants elasticsearch && [ $# -eq 0 ]; then
  # The unit suite on its own, while the nodes start (it needs none): on every core
  # (pytest-xdist; one process alone left half of the 2-core machine idle), in random order
  # (pytest-randomly, off unless `-p randomly` asks for it, see pyproject.toml; the seed is in the
  # header, `-p randomly --randomly-seed=N` replays the order, the same in every worker) and on a
  # cold numba cache (ranx compiles its kernels with cache=True; NUMBA_CACHE_DIR moves the cache
  # to an empty directory), so a test that leans on another's leftovers, on running first or on
  # a warm cache fails here. The integration runs keep their file order: their modules share
  # engines and fixtures.
  echo "== pytest (unit: every core, random order, cold numba cache)"
  UNIT_NUMBA_CACHE="$(mktemp -d)"
  NUMBA_CACHE_DIR="$UNIT_NUMBA_CACHE" python -m pytest -p randomly -n auto "${DURATIONS[@]}" \
    tests/unit || status=$?
  rm -rf "$UNIT_NUMBA_CACHE"
  ES_ARGS=(--ignore=tests/unit)
fi
await_node es9 || { echo "test.sh: Elasticsearch did not start (log above)" >&2; exit 1; }
eval "$(scripts/es.sh env)"
opensearch_run() {  # [pytest args] -> pytest's status on OpenSearch
  echo "== pytest (OpenSearch)"
  (
    eval "$(scripts/opensearch.sh env)"
    if [ $# -eq 0 ]; then set -- "${OPENSEARCH_SUITE[@]}"; fi
    # its own cache directory: the Elasticsearch run may write .pytest_cache at the same time
    python -m pytest -o cache_dir=.pytest_cache/opensearch "${DURATIONS[@]}" "$@"
  )
}
es8_run() {  # [pytest args] -> the 8.19 lane's status; stops its node
  local s=0
  VENV8="$(scripts/setup.sh es8 | tail -1)"
  echo "== pytest (Elasticsearch 8.19: the 9.x client refused clearly; then elasticsearch-py 8)"
  (
    eval "$("${ES8[@]}" scripts/es.sh env)"
    HYBRID_ES_MISMATCH_URL="$HYBRID_ES_URL" python -m pytest tests/integration/test_client_mismatch.py
    # What can differ between client (and server) majors: connecting, the capability probe,
    # bootstrap, bulk ingest and the scroll helper, the search bodies and both fusion paths,
    # packets, traces and verify. Not training, evaluation, fuzzing, the fault node, the CLI's
    # subprocesses or the framework adapters: they run above the engine seam, in the first
    # run. TLS is the client's side: test_tls.py ran against its own HTTPS node there.
    if [ $# -eq 0 ]; then set -- "${CLIENT_MAJOR_SUITE[@]}"; fi
    export HYBRID_ES_SERVER_VERSION=8.19.21  # the disposable nodes of the reliability tests too
    "$VENV8/bin/python" -m pytest -o cache_dir=.pytest_cache/es8 "${DURATIONS[@]}" "$@"
  ) || s=$?
  "${ES8[@]}" scripts/es.sh stop >/dev/null 2>&1 || true
  return "$s"
}
second_lane() {  # [pytest args] -> OpenSearch, then Elasticsearch 8.19; the worse status
  local s=0
  if wants opensearch; then opensearch_run "$@" || s=$?; fi
  if wants elasticsearch8; then es8_run "$@" || s=$?; fi
  return "$s"
}
# Two lanes side by side: the Elasticsearch run, then the 3-node cluster's smoke test; and
# OpenSearch, then Elasticsearch 8.19. They share nothing (each its own engine, indices and
# Python process), and one run alone keeps about one of the two cores busy (its Python process;
# the engine waits for it). The second lane's output is kept and shown when both are over.
# HYBRID_ES_TEST_SERIAL=1 runs the second lane after the first, in the foreground.
if wants opensearch; then
  await_node opensearch || { echo "test.sh: OpenSearch did not start (log above)" >&2; exit 1; }
fi
if wants elasticsearch8; then
  await_node es8 || { echo "test.sh: Elasticsearch 8.19 did not start (log above)" >&2; exit 1; }
fi
SECOND_OUT="$(mktemp)"
SECOND_RUN=
if [ -z "${HYBRID_ES_TEST_SERIAL:-}" ] && { wants opensearch || wants elasticsearch8; }; then
  second_lane "$@" >"$SECOND_OUT" 2>&1 &
  SECOND_RUN=$!
fi
if wants elasticsearch; then
  echo "== pytest (Elasticsearch)"
  python -m pytest "${DURATIONS[@]}" "${ES_ARGS[@]}" || status=$?
  "${TLS_NODE[@]}" scripts/es.sh stop >/dev/null 2>&1 || true
fi
if wants cluster; then
  start_node cluster "${CLUSTER[@]}" start
  await_node cluster || { echo "test.sh: the 3-node cluster did not start (log above)" >&2; exit 1; }
  echo "== pytest (3-node Elasticsearch cluster: a node killed and restarted)"
  # Its own test only (as the mismatch test above): the pytest args are for the suites.
  HYBRID_ES_CLUSTER_URL="$(sed -n 's/^export HYBRID_ES_URL=//p' <("${CLUSTER[@]}" env))" \
    python -m pytest -o cache_dir=.pytest_cache/cluster tests/cluster || status=$?
  "${CLUSTER[@]}" stop >/dev/null 2>&1 || true
fi
if [ -n "$SECOND_RUN" ]; then
  wait "$SECOND_RUN" || status=$?
  cat "$SECOND_OUT"
else
  second_lane "$@" || status=$?
fi
rm -f "$SECOND_OUT"
exit "$status"
