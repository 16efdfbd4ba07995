#!/usr/bin/env bash
# The property tests at scale, on demand (not in CI): 10,000 tenant-isolation cases on every
# fusion path the cluster runs, and 10,000 fuzzed queries. Prints pytest's counts and the time.
#
#   scripts/long_properties.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
VENV="$(scripts/setup.sh | tail -1)"
export PATH="$VENV/bin:$PATH" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
scripts/es.sh start
eval "$(scripts/es.sh env)"
export HYPOTHESIS_PROFILE=long
start=$(date +%s)
python -m pytest -p no:cacheprovider -q --hypothesis-show-statistics \
  tests/integration/test_isolation.py::test_nothing_outside_scope_reaches_any_stage \
  tests/integration/test_fuzz.py::test_hostile_queries_end_cleanly_and_in_scope "$@"
echo "long_properties: $(( $(date +%s) - start )) s"
