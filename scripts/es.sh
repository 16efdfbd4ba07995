#!/usr/bin/env bash
# Manage a local, real Elasticsearch node for development and CI, without Docker.
#
#   scripts/es.sh start|stop|status|logs|env
#
# Fetches Elasticsearch's integration-test distribution from Maven Central at a pinned version,
# verifies it against a pinned SHA-512, caches it outside the clone, and runs it as a non-root
# user, single node on 127.0.0.1, security on with a self-generated trial licence.
#
# Settings (environment):
#   HYBRID_ES_SERVER_VERSION  9.5.4 (default) or 8.19.21
#   HYBRID_ES_CACHE           cache root (default ~/.cache/hybrid-es)
#   HYBRID_ES_PORT            HTTP port (default 9200)
#   HYBRID_ES_PASSWORD        password of the built-in `elastic` user (default: hybrid-es-dev)
#   HYBRID_ES_HEAP            JVM heap (default 1g)
#   HYBRID_ES_INSTANCE        a name for a second, separate node from the same download
#                             (tests that kill a node use their own; default: none)
#   HYBRID_ES_EXTRA_CONFIG    extra elasticsearch.yml lines (e.g. a tiny write queue for 429 tests)
#   ES_JAVA_HOME              a JDK to run it (default: the first suitable one under /usr/lib/jvm)
set -euo pipefail

VERSION="${HYBRID_ES_SERVER_VERSION:-9.5.4}"
CACHE="${HYBRID_ES_CACHE:-$HOME/.cache/hybrid-es}"
PORT="${HYBRID_ES_PORT:-9200}"
PASSWORD="${HYBRID_ES_PASSWORD:-hybrid-es-dev}"
HEAP="${HYBRID_ES_HEAP:-1g}"
RUN_USER="hybrid-es"

# SHA-512 of each supported zip, taken when the version was pinned. Maven Central serves no
# checksum file for the 9.x integ-test zips, so the pin in this file is the trust anchor.
declare -A SHA512=(
  [9.5.4]=a75df614854ace52dd0bce977662b3792873ac077ec0af9026cd0b2a0eb119e449910f8eb8ed577d1a83c51c6ee6af71bf5004c3cf5b418c979186de8b5dd9e6
  [8.19.21]=cf6b0a93860d329937ae7f913ec5073b0c726c77639764b93fc83a304aa1dd9d4defcfa2849948eea3b0b47c2065f994908603939fc2a4774c9c4d868c5ec1dd
)

DOWNLOADS="$CACHE/downloads"
ZIP="$DOWNLOADS/elasticsearch-$VERSION.zip"
HOME_DIR="$CACHE/elasticsearch-$VERSION${HYBRID_ES_INSTANCE:+-$HYBRID_ES_INSTANCE}"
PIDFILE="$HOME_DIR/es.pid"
URL="http://127.0.0.1:$PORT"

say() { printf 'es.sh: %s\n' "$*" >&2; }
die() { printf 'es.sh: error: %s\n' "$*" >&2; exit 1; }

curl_es() { curl -s -u "elastic:$PASSWORD" --max-time 5 "$@"; }

major() { echo "${1%%.*}"; }

find_java() {
  local need=17
  [ "$(major "$VERSION")" -ge 9 ] && need=21
  local candidates=()
  [ -n "${ES_JAVA_HOME:-}" ] && candidates+=("$ES_JAVA_HOME")
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
  for d in /usr/lib/jvm/*; do [ -d "$d" ] && candidates+=("$d"); done
  for home in "${candidates[@]}"; do
    [ -x "$home/bin/java" ] || continue
    local v
    v=$("$home/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
    v="${v%%.*}"
    if [ -n "$v" ] && [ "$v" -ge "$need" ]; then echo "$home"; return 0; fi
  done
  die "Elasticsearch $VERSION needs Java $need or newer and none was found (looked at ES_JAVA_HOME, JAVA_HOME, /usr/lib/jvm/*). Install one (e.g. 'apt-get install temurin-21-jdk' or openjdk-21-jdk) or point ES_JAVA_HOME at it."
}

fetch() {
  [ -n "${SHA512[$VERSION]:-}" ] || die "version $VERSION is not pinned in scripts/es.sh (pinned: ${!SHA512[*]}). Add its SHA-512 there first."
  mkdir -p "$DOWNLOADS"
  if [ -f "$ZIP" ] && echo "${SHA512[$VERSION]}  $ZIP" | sha512sum -c --status; then return 0; fi
  rm -f "$ZIP"
  command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch Elasticsearch from Maven Central. Install it ('apt-get install maven') and retry."
  say "fetching Elasticsearch $VERSION integ-test zip from Maven Central ..."
  local tmp
  tmp=$(mktemp -d "$DOWNLOADS/.fetch.XXXXXX")
  if ! mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
      -Dartifact="org.elasticsearch.distribution.integ-test-zip:elasticsearch:$VERSION:zip" \
      -DoutputDirectory="$tmp" >"$tmp/mvn.log" 2>&1; then
    tail -20 "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    die "Maven could not fetch org.elasticsearch.distribution.integ-test-zip:elasticsearch:$VERSION:zip (see above)."
  fi
  if ! echo "${SHA512[$VERSION]}  $tmp/elasticsearch-$VERSION.zip" | sha512sum -c --status; then
    rm -rf "$tmp"
    die "checksum mismatch for elasticsearch-$VERSION.zip: refusing to run it. Delete $DOWNLOADS and retry; if it persists, the artifact changed upstream."
  fi
  mv "$tmp/elasticsearch-$VERSION.zip" "$ZIP"   # atomic: a killed fetch leaves only a temp dir
  rm -rf "$tmp"
}

unpack() {
  [ -f "$HOME_DIR/.unpacked" ] && return 0
  rm -rf "$HOME_DIR" "$HOME_DIR.partial"
  say "unpacking into $HOME_DIR"
  mkdir -p "$HOME_DIR.partial"
  unzip -q "$ZIP" -d "$HOME_DIR.partial"
  mv "$HOME_DIR.partial/elasticsearch-$VERSION" "$HOME_DIR"
  rm -rf "$HOME_DIR.partial"
  touch "$HOME_DIR/.unpacked"
}

configure() {
  local cfg="$HOME_DIR/config"
  cat >"$cfg/elasticsearch.yml" <<YML
# Written by hybrid-es scripts/es.sh; rewritten on every start.
cluster.name: hybrid-es-dev
node.name: hybrid-es-node-1
discovery.type: single-node
network.host: 127.0.0.1
http.port: $PORT
transport.port: $((PORT + 100))
path.data: $HOME_DIR/data
path.logs: $HOME_DIR/logs
cluster.routing.allocation.disk.threshold_enabled: false
xpack.security.enabled: true
xpack.security.autoconfiguration.enabled: false
xpack.security.http.ssl.enabled: false
xpack.security.transport.ssl.enabled: false
xpack.license.self_generated.type: trial
action.destructive_requires_name: false
${HYBRID_ES_EXTRA_CONFIG:-}
YML
  mkdir -p "$cfg/jvm.options.d"
  printf -- '-Xms%s\n-Xmx%s\n' "$HEAP" "$HEAP" >"$cfg/jvm.options.d/heap.options"
  if [ "$(id -u)" = 0 ]; then
    id -u "$RUN_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER"
    chown -R "$RUN_USER:" "$HOME_DIR"
    # the user must be able to reach the cache directory
    local d="$HOME_DIR"
    while [ "$d" != "/" ]; do chmod o+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done
  fi
  # The bootstrap password seeds the `elastic` user on first start of a fresh data directory.
  local ks="$HOME_DIR/bin/elasticsearch-keystore"
  [ -f "$cfg/elasticsearch.keystore" ] || as_es "$ks" create >/dev/null
  printf '%s' "$PASSWORD" | as_es "$ks" add -x -f bootstrap.password >/dev/null
  provision_file_realm
}

# Run an Elasticsearch tool as the user that owns the node's files (the tools refuse to change a
# file's owner, so root must not run them directly).
as_es() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$RUN_USER" -- env ES_JAVA_HOME="$JAVA" "$@"
  else
    env ES_JAVA_HOME="$JAVA" "$@"
  fi
}

# File-realm users and roles, one reader per tenant, rendered from es_templates/roles. They need no
# security index, which the integ-test zip cannot create (its mapping needs analysis-common), so
# document-level security is testable here for real. Users: reader-<tenant>, password $PASSWORD.
provision_file_realm() {
  local cfg="$HOME_DIR/config" users="$HOME_DIR/bin/elasticsearch-users"
  local template
  template="$(cd "$(dirname "$0")/.." && pwd)/es_templates/roles/hybrid-es-tenant-reader.json"
  python3 - "$template" ${HYBRID_ES_FILE_TENANTS:-demo-A demo-B} >"$cfg/roles.yml" <<'PY'
import json, sys
template = open(sys.argv[1], encoding="utf-8").read()
print("# Written by scripts/es.sh from es_templates/roles: one role a line, its body in JSON flow style.")
for tenant in sys.argv[2:]:
    role = json.loads(template.replace("{{tenant}}", tenant))
    role.pop("description", None)
    print(f"hybrid-es-tenant-reader-{tenant}: {json.dumps(role)}")
PY
  : >"$cfg/users"; : >"$cfg/users_roles"
  [ "$(id -u)" = 0 ] && chown "$RUN_USER:" "$cfg/roles.yml" "$cfg/users" "$cfg/users_roles"
  for tenant in ${HYBRID_ES_FILE_TENANTS:-demo-A demo-B}; do
    as_es "$users" useradd "reader-$tenant" -p "$PASSWORD" -r "hybrid-es-tenant-reader-$tenant" >/dev/null
  done
}

running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

health() { curl_es "$URL/_cluster/health" 2>/dev/null; }

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

log_file() { echo "$HOME_DIR/logs/hybrid-es-dev.log"; }

cmd_start() {
  if pid=$(running_pid); then
    if health | grep -qE '"status":"(green|yellow)"'; then say "already running (pid $pid) at $URL"; return 0; fi
  fi
  if port_taken "$PORT"; then
    die "port $PORT on 127.0.0.1 is already in use by another process. Stop it, or choose another port with HYBRID_ES_PORT=9201."
  fi
  JAVA=$(find_java)
  fetch
  unpack
  configure
  rm -f "$PIDFILE"
  say "starting Elasticsearch $VERSION (java: $JAVA) at $URL"
  local launch=("$HOME_DIR/bin/elasticsearch" -d -p "$PIDFILE")
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$RUN_USER" -- env ES_JAVA_HOME="$JAVA" "${launch[@]}" >"$HOME_DIR/start.out" 2>&1 || true
  else
    ES_JAVA_HOME="$JAVA" "${launch[@]}" >"$HOME_DIR/start.out" 2>&1 || true
  fi
  local started=$SECONDS deadline=$((SECONDS + ${HYBRID_ES_START_TIMEOUT:-180}))
  while [ $SECONDS -lt $deadline ]; do
    if health | grep -qE '"status":"(green|yellow)"'; then
      say "ready: $(health)"
      return 0
    fi
    # The launcher writes the pid file a few seconds in: only its absence after that is a death.
    if [ $((SECONDS - started)) -gt 20 ] && ! running_pid >/dev/null; then break; fi
    sleep 1
  done
  say "Elasticsearch did not become healthy. Last lines of its output and log:"
  tail -20 "$HOME_DIR/start.out" >&2 2>/dev/null || true
  tail -40 "$(log_file)" >&2 2>/dev/null || true
  die "start failed (full log: $(log_file))"
}

cmd_stop() {
  if pid=$(running_pid); then
    say "stopping pid $pid"
    kill "$pid"
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
  else
    say "not running"
  fi
  rm -f "$PIDFILE"
}

cmd_status() {
  if pid=$(running_pid); then
    echo "running (pid $pid, version $VERSION) at $URL"
    health; echo
  else
    echo "not running (version $VERSION, home $HOME_DIR)"
    return 3
  fi
}

cmd_logs() { tail -n "${1:-50}" "$(log_file)"; }

cmd_env() {
  echo "export HYBRID_ES_URL=$URL"
  echo "export HYBRID_ES_USERNAME=elastic"
  echo "export HYBRID_ES_PASSWORD=$PASSWORD"
  echo "unset HYBRID_ES_CA_CERTS"  # this node speaks plain HTTP (a CA left by opensearch.sh env)
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  logs) shift; cmd_logs "$@" ;;
  env) cmd_env ;;
  *) echo "usage: scripts/es.sh start|stop|restart|status|logs [N]|env" >&2; exit 2 ;;
esac
