#!/usr/bin/env bash
# Set up everything and run the travel-copilot demo against a local, real engine:
#
#   scripts/demo.sh                       Elasticsearch (scripts/es.sh)
#   scripts/demo.sh --engine opensearch   OpenSearch 2.19 (scripts/opensearch.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
ENGINE=elasticsearch
while [ $# -gt 0 ]; do
  case "$1" in
    --engine) ENGINE="${2:-}"; shift 2 ;;
    --engine=*) ENGINE="${1#--engine=}"; shift ;;
    *) echo "demo.sh: unknown argument $1 (usage: scripts/demo.sh [--engine elasticsearch|opensearch])" >&2; exit 2 ;;
  esac
done
case "$ENGINE" in
  elasticsearch) NODE=scripts/es.sh ;;
  opensearch) NODE=scripts/opensearch.sh ;;
  *) echo "demo.sh: --engine must be elasticsearch or opensearch, not '$ENGINE'" >&2; exit 2 ;;
esac
VENV="$(scripts/setup.sh | tail -1)"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$NODE" start
eval "$("$NODE" env)"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
step "1. Bootstrap: templates, indices, capability report"
# --force: this is the demo's own local node, which may hold templates from an older checkout.
hybrid-es bootstrap --force
step "2. Ingest the travel fixture (English and Chinese; each tenant ingests its own file)"
hybrid-es ingest tests/fixtures/travel.jsonl --tenant demo-A
hybrid-es ingest tests/fixtures/travel-demo-B.jsonl --tenant demo-B
step "3. Search as demo-A, a travel agent, for the April stay (provenance table)"
hybrid-es search "KYO-H12 April roll-in shower rate" --tenant demo-A --user agent-1 \
  --group travel-agents --stay 2026-04-10..2026-04-14
step "4. The same question in Traditional Chinese (the contract is written in Simplified)"
hybrid-es search "KYO-H12 四月 無障礙淋浴間 房價" --tenant demo-A --user agent-1 \
  --group travel-agents --stay 2026-04-10..2026-04-14
step "5. Historical question: the superseded 2025 contract is admitted only now"
hybrid-es search "KYO-H12 April roll-in shower rate" --tenant demo-A --user agent-1 \
  --group travel-agents --as-of 2025-06-01 --historical
step "6. Tenant demo-B asks the same question and sees only its own contract"
hybrid-es search "KYO-H12 April roll-in shower rate" --tenant demo-B --user agent-9 \
  --stay 2026-04-10..2026-04-14

AGENT=(--tenant demo-A --user agent-1 --group travel-agents)
# Every reuse decision states the follow-up's scope: here the same stay and booking.
FOLLOW_UP=(--stay 2026-04-10..2026-04-14 --booking JPN-2026-0417)
step "7. Build the evidence packet for booking JPN-2026-0417"
hybrid-es packet build JPN-2026-0417 --query "KYO-H12 April roll-in shower rate" \
  --label KYO-H12-current-rate-and-accessibility --stay 2026-04-10..2026-04-14 \
  --booking JPN-2026-0417 --unresolved date-specific-room-availability "${AGENT[@]}"
PID=$(hybrid-es packet build JPN-2026-0417 --query "KYO-H12 April roll-in shower rate" \
  --label KYO-H12-current-rate-and-accessibility --stay 2026-04-10..2026-04-14 \
  --booking JPN-2026-0417 --unresolved date-specific-room-availability "${AGENT[@]}" --json \
  | python -c 'import json,sys; print(json.load(sys.stdin)["manifest"]["packet_id"])')
echo "(rebuilt once more so this run starts from a fresh version: $PID)"
step "8. A follow-up question reuses the packet: revalidate, then render it as model context"
hybrid-es packet render "$PID" "${AGENT[@]}" "${FOLLOW_UP[@]}" --budget 600
step "9. The contract changes (JPY 31,500 -> 33,000): the packet must be refreshed"
hybrid-es ingest tests/fixtures/travel-d1-rate-change.jsonl --tenant demo-A
hybrid-es packet validate "$PID" "${AGENT[@]}" "${FOLLOW_UP[@]}" || true
hybrid-es packet refresh "$PID" "${AGENT[@]}"
NEXT="${PID%-packet-v*}-packet-v$(( ${PID##*-packet-v} + 1 ))"
hybrid-es packet render "$NEXT" "${AGENT[@]}" "${FOLLOW_UP[@]}" --budget 600
step "10. The agent loses the travel-agents group: deny, and the context is discarded"
hybrid-es packet validate "$NEXT" --tenant demo-A --user agent-1 "${FOLLOW_UP[@]}" || true
step "11. Another tenant asks for the same packet: it does not exist for them"
hybrid-es packet show "$NEXT" --tenant demo-B --user agent-1 || true
step "Restore the fixture's original contract for the next run"
hybrid-es ingest tests/fixtures/travel.jsonl --tenant demo-A
