#!/usr/bin/env bash
# Set up everything and run the whole test suite against a real Elasticsearch:
# venv (cached), Elasticsearch (fetched from Maven Central, cached), lint, type check, pytest.
#
#   scripts/test.sh [pytest args]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VENV="$(scripts/setup.sh | tail -1)"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

scripts/es.sh start
eval "$(scripts/es.sh env)"

echo "== ruff"; ruff check hybrid_es tests scripts
echo "== mypy"; mypy hybrid_es
echo "== pytest"
python -m pytest "$@"
