#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment outside the clone and install hybrid-es
# with its models and dev tools. Prints the venv path on the last line.
#
#   scripts/setup.sh        the venv ($HYBRID_ES_CACHE/venv)
#   scripts/setup.sh es8    also the Elasticsearch 8.x client venv over it (venv-es8); prints that
#
#   HYBRID_ES_CACHE   cache root (default ~/.cache/hybrid-es); the venv lives in $HYBRID_ES_CACHE/venv
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${HYBRID_ES_CACHE:-$HOME/.cache/hybrid-es}"
VENV="$CACHE/venv"
PY="${PYTHON:-python3}"

"$PY" - <<'PYCHK' || { echo "setup.sh: Python 3.11+ is required (found $("$PY" --version 2>&1))" >&2; exit 1; }
import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)
PYCHK

mkdir -p "$CACHE"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup.sh: creating $VENV" >&2
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip >&2
fi
# Installing is a no-op when everything is already satisfied; the stamps skip even the resolver.
# DEPS: the dependencies of this pyproject.toml are installed. AT: and the editable install points
# at this checkout. A new clone of the same pyproject (CI's fresh clone) only repoints the
# editable install (--no-deps: seconds), instead of resolving every dependency again.
PYPROJECT_SHA="$(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)"
DEPS="$VENV/.hybrid-es-deps-$PYPROJECT_SHA"
AT="$VENV/.hybrid-es-at-$PYPROJECT_SHA-$(echo "$ROOT" | sha256sum | cut -c1-8)"
if [ ! -f "$AT" ]; then
  if [ -f "$DEPS" ]; then
    echo "setup.sh: pointing the editable install in $VENV at $ROOT" >&2
    "$VENV/bin/pip" install -q --no-deps -e "$ROOT" >&2
  else
    echo "setup.sh: installing hybrid-es[models,eval,dev] into $VENV (first run downloads torch: minutes)" >&2
    "$VENV/bin/pip" install -q -e "$ROOT[models,eval,dev]" >&2
    rm -f "$VENV"/.hybrid-es-deps-*
    touch "$DEPS"
  fi
  for stamp in "$VENV"/.hybrid-es-*; do  # another checkout's, and the one-stamp form of before
    case "${stamp##*/}" in .hybrid-es-deps-*) ;; *) rm -f "$stamp" ;; esac
  done
  touch "$AT"
fi
if [ "${1:-}" = es8 ]; then
  # The Elasticsearch 8.x client beside the main venv, for the 8.19 lane: a small venv whose own
  # site-packages hold elasticsearch-py 8 and elastic-transport 8, with the main venv's
  # site-packages (torch, hybrid-es itself...) added after them, so the 8.x client shadows the 9.x.
  VENV8="$CACHE/venv-es8"
  SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  if [ ! -f "$VENV8/.hybrid-es-es8" ]; then
    echo "setup.sh: creating $VENV8 (elasticsearch-py 8 over $VENV)" >&2
    rm -rf "$VENV8"
    "$PY" -m venv "$VENV8"
    "$VENV8/bin/pip" install -q 'elasticsearch>=8.19,<9' >&2
    SITE8="$("$VENV8/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "import site; site.addsitedir('$SITE')" > "$SITE8/zz-hybrid-es-main-venv.pth"
    touch "$VENV8/.hybrid-es-es8"
  fi
  echo "$VENV8"
  exit 0
fi
echo "$VENV"
