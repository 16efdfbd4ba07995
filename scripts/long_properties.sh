#!/usr/bin/env bash
# The property tests at scale, on demand (not in CI): 10,000 tenant-isolation cases on every
# fusion path the cluster runs, 10,000 fuzzed queries, 10,000 fuzzed JSON-lines files through the
# loaders, and 10,000 cases of the id/name/date validators. Prints pytest's counts and the time.
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
  tests/integration/test_fuzz.py::test_hostile_queries_end_cleanly_and_in_scope \
  tests/unit/test_loader_fuzz.py::test_every_hostile_line_is_refused_by_its_number_and_every_valid_line_loads \
  tests/unit/test_validators.py::test_every_validator_matches_the_whole_value_and_every_entry_point_agrees \
  "$@"
echo "long_properties: $(( $(date +%s) - start )) s"
