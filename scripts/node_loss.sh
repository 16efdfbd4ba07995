#!/usr/bin/env bash
# Node loss under load, one command: start the local 3-node Elasticsearch cluster (scripts/es.sh
# --nodes 3: instance "cluster", HTTP ports 9271-9273, 512 MB heap a node), run
# tests/cluster/test_node_loss.py on it (client threads of mixed search / packet validate /
# ingest against every node's URL; one node SIGKILLed and restarted, by default node 1 and then
# the node holding most chunk primaries), print its report, and stop the cluster again if this
# script started it.
#
#   scripts/node_loss.sh [pytest args]
#
# The report: a table on stdout (errors by kind, p50/p95/max per operation before / during /
# after each kill, the outage window), and JSON in HYBRID_ES_NODE_LOSS_REPORT (default
# ${TMPDIR:-/tmp}/hybrid-es-node-loss.json). Tunables (environment, see the test's docstring):
# HYBRID_ES_NODE_LOSS_VICTIMS (1,primaries), _CLIENTS (3), _BEFORE_S (8), _OUTAGE_S (10),
# _AFTER_S (8). Runs in minutes: each restart under load takes 1-3 min on a 2-core machine.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VENV="$(scripts/setup.sh | tail -1)"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
CLUSTER=(scripts/es.sh --nodes 3)

started=0
if ! "${CLUSTER[@]}" status >/dev/null 2>&1; then
  started=1
  "${CLUSTER[@]}" start
fi
stop() { if [ "$started" = 1 ]; then "${CLUSTER[@]}" stop >/dev/null 2>&1 || true; fi; }
trap stop EXIT

url="$(sed -n 's/^export HYBRID_ES_URL=//p' <("${CLUSTER[@]}" env))"
export HYBRID_ES_NODE_LOSS=1 HYBRID_ES_CLUSTER_URL="$url"
export HYBRID_ES_NODE_LOSS_REPORT="${HYBRID_ES_NODE_LOSS_REPORT:-${TMPDIR:-/tmp}/hybrid-es-node-loss.json}"
status=0
python -m pytest tests/cluster/test_node_loss.py -s -p no:cacheprovider "$@" || status=$?
echo "node_loss.sh: report (JSON) in $HYBRID_ES_NODE_LOSS_REPORT" >&2
exit "$status"
