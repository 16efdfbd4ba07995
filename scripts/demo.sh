#!/usr/bin/env bash
# Set up everything and run the travel-copilot demo against a local, real Elasticsearch.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VENV="$(scripts/setup.sh | tail -1)"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
scripts/es.sh start
eval "$(scripts/es.sh env)"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
step "1. Bootstrap: templates, indices, capability report"
hybrid-es bootstrap
step "2. Ingest the travel fixture (English and Chinese; two tenants)"
hybrid-es ingest tests/fixtures/travel.jsonl
step "3. Search as demo-A, a travel agent, for the April stay (provenance table)"
hybrid-es search "KYO-H12 April roll-in shower rate" --tenant demo-A --user agent-1 \
  --group travel-agents --stay 2026-04-10..2026-04-14
step "4. The same question in Chinese"
hybrid-es search "KYO-H12 四月 无障碍淋浴间 房价" --tenant demo-A --user agent-1 \
  --group travel-agents --stay 2026-04-10..2026-04-14 --embedder minilm
step "5. Historical question: the superseded 2025 contract is admitted only now"
hybrid-es search "KYO-H12 April roll-in shower rate" --tenant demo-A --user agent-1 \
  --group travel-agents --as-of 2025-06-01 --historical
step "6. Tenant demo-B asks the same question and sees only its own contract"
hybrid-es search "KYO-H12 April roll-in shower rate" --tenant demo-B --user agent-9 \
  --stay 2026-04-10..2026-04-14
