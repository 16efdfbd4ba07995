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
#   HYBRID_ES_LICENSE         trial (default) or basic: the self-generated licence. A trial node
#                             asked for basic is moved to basic at start (there is no way back
#                             to trial on the same data directory: use its own HYBRID_ES_INSTANCE)
#   HYBRID_ES_TLS             1: serve HTTPS, on a node of its own (instance "tls", port 9243,
#                             unless HYBRID_ES_INSTANCE/HYBRID_ES_PORT say otherwise), with a CA
#                             and node certificate made by scripts/make_certs.py (trustme) into
#                             its config/certs; `env` then prints HYBRID_ES_CA_CERTS
#   ES_JAVA_HOME              a JDK to run it (default: the first suitable one under /usr/lib/jvm)
set -euo pipefail

VERSION="${HYBRID_ES_SERVER_VERSION:-9.5.4}"
CACHE="${HYBRID_ES_CACHE:-$HOME/.cache/hybrid-es}"
PORT="${HYBRID_ES_PORT:-9200}"
PASSWORD="${HYBRID_ES_PASSWORD:-hybrid-es-dev}"
HEAP="${HYBRID_ES_HEAP:-1g}"
LICENSE="${HYBRID_ES_LICENSE:-trial}"
RUN_USER="hybrid-es"
TLS="${HYBRID_ES_TLS:-0}"
if [ "$TLS" = 1 ]; then
  HYBRID_ES_INSTANCE="${HYBRID_ES_INSTANCE:-tls}"
  PORT="${HYBRID_ES_PORT:-9243}"
fi

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
URL="$([ "$TLS" = 1 ] && echo https || echo http)://127.0.0.1:$PORT"
CERTS="$HOME_DIR/config/certs"

say() { printf 'es.sh: %s\n' "$*" >&2; }
die() { printf 'es.sh: error: %s\n' "$*" >&2; exit 1; }

curl_es() {
  if [ "$TLS" = 1 ]; then set -- --cacert "$CERTS/ca.pem" "$@"; fi
  curl -s -u "elastic:$PASSWORD" --max-time 5 "$@"
}

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

# HYBRID_ES_TLS=1: the node's HTTPS settings, its certificates made once (kept across restarts,
# so that a CA file a client holds stays valid) by a Python that has trustme.
http_tls_config() {
  if [ "$TLS" != 1 ]; then echo "xpack.security.http.ssl.enabled: false"; return 0; fi
  if [ ! -f "$CERTS/node.pem" ]; then
    local py="" candidate
    for candidate in "${HYBRID_ES_PYTHON:-}" python3 "$CACHE/venv/bin/python"; do
      if [ -n "$candidate" ] && "$candidate" -c 'import trustme' 2>/dev/null; then py="$candidate"; break; fi
    done
    [ -n "$py" ] || die "HYBRID_ES_TLS=1 makes its certificates with the Python package trustme, which no Python here has (tried HYBRID_ES_PYTHON, python3, $CACHE/venv/bin/python). Run scripts/setup.sh, or pip install trustme."
    "$py" "$(cd "$(dirname "$0")" && pwd)/make_certs.py" "$CERTS" >&2 || die "could not make the certificates (see above)"
  fi
  cat <<TLSYML
xpack.security.http.ssl.enabled: true
xpack.security.http.ssl.certificate: certs/node.pem
xpack.security.http.ssl.key: certs/node-key.pem
xpack.security.http.ssl.certificate_authorities: ["certs/ca.pem"]
TLSYML
}

configure() {
  local cfg="$HOME_DIR/config" http_tls
  http_tls="$(http_tls_config)"
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
$http_tls
xpack.security.transport.ssl.enabled: false
xpack.license.self_generated.type: $LICENSE
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
  : >"$cfg/users"; : >"$cfg/users_roles"  # a fresh start: only the users named below
  provision_file_realm
  [ "$TLS" = 1 ] && service_token
  return 0
}

# HYBRID_ES_TLS=1: a file-based service-account token (elastic/fleet-server), a credential that
# goes out as "Authorization: Bearer", for the bearer-token tests (this zip has no security index
# for API keys or OAuth2 tokens). Its value: config/certs/service-token.
service_token() {
  grep -q '^elastic/fleet-server/hybrid-es:' "$HOME_DIR/config/service_tokens" 2>/dev/null \
    && [ -s "$CERTS/service-token" ] && return 0
  local out
  as_es "$HOME_DIR/bin/elasticsearch-service-tokens" delete elastic/fleet-server hybrid-es >/dev/null 2>&1 || true
  out=$(as_es "$HOME_DIR/bin/elasticsearch-service-tokens" create elastic/fleet-server hybrid-es)
  printf '%s\n' "${out##* = }" >"$CERTS/service-token"
  [ "$(id -u)" = 0 ] && chown "$RUN_USER:" "$CERTS/service-token"
  chmod 600 "$CERTS/service-token"
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

# File-realm users and roles, rendered from es_templates/roles. They need no security index, which
# the integ-test zip cannot create (its mapping needs analysis-common), so document-level security
# and least privilege are testable here for real. Users (password $PASSWORD): reader-<tenant> with
# that tenant's reader role, and hybrid-es-admin, hybrid-es-ingest and hybrid-es-app, each with
# the role of its name. Also run on a node that is already up: the node reloads both files, so
# roles.yml is replaced whole and only missing users are added.
DEPLOYMENT_ROLES="hybrid-es-admin hybrid-es-ingest hybrid-es-app"
provision_file_realm() {
  local cfg="$HOME_DIR/config" roles
  roles="$(cd "$(dirname "$0")/.." && pwd)/es_templates/roles"
  python3 - "$roles" "$DEPLOYMENT_ROLES" ${HYBRID_ES_FILE_TENANTS:-demo-A demo-B} >"$cfg/roles.yml.new" <<'PY'
import json, pathlib, sys
roles = pathlib.Path(sys.argv[1])
template = (roles / "hybrid-es-tenant-reader.json").read_text(encoding="utf-8")
print("# Written by scripts/es.sh from es_templates/roles: one role a line, its body in JSON flow style.")
def line(name, role):
    role.pop("description", None)
    print(f"{name}: {json.dumps(role)}")
for name in sys.argv[2].split():
    line(name, json.loads((roles / f"{name}.json").read_text(encoding="utf-8")))
for tenant in sys.argv[3:]:
    line(f"hybrid-es-tenant-reader-{tenant}", json.loads(template.replace("{{tenant}}", tenant)))
PY
  mv "$cfg/roles.yml.new" "$cfg/roles.yml"
  touch "$cfg/users" "$cfg/users_roles"
  [ "$(id -u)" = 0 ] && chown "$RUN_USER:" "$cfg/roles.yml" "$cfg/users" "$cfg/users_roles"
  local tenant pairs=()
  for tenant in ${HYBRID_ES_FILE_TENANTS:-demo-A demo-B}; do
    pairs+=("reader-$tenant:hybrid-es-tenant-reader-$tenant")
  done
  for role in $DEPLOYMENT_ROLES; do pairs+=("$role:$role"); done
  add_users "${pairs[@]}"
}

# Add the users (user:role pairs) that the users file lacks. The tool hashes the password for the
# first (each call starts a JVM: seconds); the others share that salted hash, since every user
# here has the same password. Both files are replaced whole: a running node reloads them.
add_users() {
  local cfg="$HOME_DIR/config" pair missing=() hash
  for pair in "$@"; do grep -q "^${pair%%:*}:" "$cfg/users" || missing+=("$pair"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  as_es "$HOME_DIR/bin/elasticsearch-users" useradd "${missing[0]%%:*}" -p "$PASSWORD" \
    -r "${missing[0]#*:}" >/dev/null
  hash=$(grep "^${missing[0]%%:*}:" "$cfg/users" | cut -d: -f2-)
  cp "$cfg/users" "$cfg/users.new"; cp "$cfg/users_roles" "$cfg/users_roles.new"
  for pair in "${missing[@]:1}"; do
    echo "${pair%%:*}:$hash" >>"$cfg/users.new"
    echo "${pair#*:}:${pair%%:*}" >>"$cfg/users_roles.new"
  done
  [ "$(id -u)" = 0 ] && chown "$RUN_USER:" "$cfg/users.new" "$cfg/users_roles.new"
  mv "$cfg/users.new" "$cfg/users"; mv "$cfg/users_roles.new" "$cfg/users_roles"
}

# HYBRID_ES_LICENSE=basic on a node whose licence is another: move it to basic (the setting only
# chooses the licence that a fresh data directory generates).
ensure_license() {
  [ "$LICENSE" = basic ] || return 0
  curl_es "$URL/_license" | grep -q '"type" *: *"basic"' && return 0
  say "moving the licence to basic"
  curl_es -XPOST "$URL/_license/start_basic?acknowledge=true" >/dev/null
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
    if health | grep -qE '"status":"(green|yellow)"'; then
      say "already running (pid $pid) at $URL"
      JAVA=$(find_java)
      provision_file_realm
      ensure_license
      return 0
    fi
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
      ensure_license
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
  if [ "$TLS" = 1 ]; then
    echo "export HYBRID_ES_CA_CERTS=$CERTS/ca.pem"
  else
    echo "unset HYBRID_ES_CA_CERTS"  # this node speaks plain HTTP (a CA left by opensearch.sh env)
  fi
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
