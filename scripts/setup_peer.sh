#!/usr/bin/env bash
# Create (or reuse) the virtual environment of the Haystack peer benchmark (scripts/bench_haystack.py)
# and print its path on the last line. Not part of CI: scripts/setup.sh and scripts/test.sh do not
# use it. bench_haystack.py itself runs with the project venv and starts the peer as a worker
# process under this venv's python (benchmarks/peer_worker.py), so the two
# clients never meet in one interpreter while every query still runs back to back on both sides.
#
#   HYBRID_ES_CACHE   cache root (default ~/.cache/hybrid-es); the venv lives in $HYBRID_ES_CACHE/peer-venv
#
# Why a separate venv and not a `peer` extra: elasticsearch-haystack 7.1.0 (the newest on PyPI)
# requires `elasticsearch>=8,<9`, while hybrid-es runs the 9.x client against the 9.x cluster. The
# peer gets the 8.x client; Elasticsearch 9 answers it through REST API compatibility, which the 8.x
# client asks for by default. haystack-ai 3 no longer ships the sentence-transformers embedders and
# ranker: they come from sentence-transformers-haystack.
#
# The peer venv is an overlay of the project venv, as setup.sh's es8 lane: its own site-packages
# hold the 8.x client and the Haystack integrations, and the project venv's site-packages (torch,
# transformers, sentence-transformers, haystack-ai, numpy...) are added after them by a .pth file.
# pip sees those as installed and installs nothing twice, so both sides run the very same model
# code (and a first run takes seconds, not a torch download); only the Elasticsearch client
# differs, and the peer's shadows the project's.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${HYBRID_ES_CACHE:-$HOME/.cache/hybrid-es}"
BASE="$CACHE/venv"
PEER="$CACHE/peer-venv"
PY="${PYTHON:-python3}"
PEER_PACKAGES=(
  "haystack-ai==3.4.1"
  "elasticsearch-haystack==7.1.0"
  "sentence-transformers-haystack==2.0.0"
)

# The project venv fixes the versions; create it only when it is missing.
if [ ! -x "$BASE/bin/python" ]; then
  "$ROOT/scripts/setup.sh" >/dev/null
fi

SITE="$("$BASE/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# Reinstall when this script, pyproject.toml, the project venv's package set or the path changes.
BASE_FREEZE="$("$BASE/bin/pip" freeze --exclude-editable 2>/dev/null | sort)"
KEY="$( (cat "$0" "$ROOT/pyproject.toml"; echo "$BASE_FREEZE"; echo "$ROOT") | sha256sum | cut -c1-16)"
STAMP="$PEER/.hybrid-es-peer-$KEY"
if [ ! -f "$STAMP" ]; then
  echo "setup_peer.sh: creating $PEER (${PEER_PACKAGES[*]} over $BASE)" >&2
  rm -rf "$PEER"
  "$PY" -m venv "$PEER"
  SITEP="$("$PEER/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "import site; site.addsitedir('$SITE')" >"$SITEP/zz-hybrid-es-main-venv.pth"
  "$PEER/bin/pip" install -q "${PEER_PACKAGES[@]}" >&2
  touch "$STAMP"
fi

"$PEER/bin/python" - <<'PYCHK' >&2
from importlib.metadata import version

import elasticsearch

assert elasticsearch.__versionstr__.startswith("8."), elasticsearch.__versionstr__
names = ("haystack-ai", "elasticsearch-haystack", "sentence-transformers-haystack", "elasticsearch",
         "sentence-transformers", "transformers", "torch")
print("setup_peer.sh: " + ", ".join(f"{n} {version(n)}" for n in names))
PYCHK
echo "$PEER"
