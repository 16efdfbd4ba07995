#!/usr/bin/env bash
# Manage a local, real Elasticsearch node (or a local cluster of several) for development and
# CI, without Docker.
#
#   scripts/es.sh [--nodes N] [--node I] start|stop|restart|status|logs [LINES]|kill|env
#
# --nodes N (default 1) runs N nodes of the same download as one cluster on loopback: its own
# instance ("cluster", unless HYBRID_ES_INSTANCE says otherwise), cluster name hybrid-es-<instance>,
# HTTP ports HYBRID_ES_PORT (default 9271) + 0..N-1 and transport ports 100 above, each node with
# its own config, data and logs under <home>/nodes/node-I, a 512m heap each unless HYBRID_ES_HEAP,
# and the same file-realm users and roles on every node. N is recorded at start, so later calls
# may give --node I or nothing instead of --nodes. Every command acts on all the nodes, or with
# --node I on node I only: `kill --node 2` SIGKILLs node 2 (a crash), `start --node 2` brings it
# back. `start` returns once all N nodes have joined and the cluster is green.
#
# Fetches Elasticsearch's integration-test distribution from Maven Central at a pinned version,
# verifies it against a pinned SHA-512, caches it outside the clone, and runs it as a non-root
# user, single node on 127.0.0.1, security on with a self-generated trial licence.
#
# Settings (environment):
#   HYBRID_ES_SERVER_VERSION  9.5.4 (default) or 8.19.21
#   HYBRID_ES_CACHE           cache root (default ~/.cache/hybrid-es)
#   HYBRID_ES_PORT            HTTP port (default 9200; with --nodes N>1 the first node's, 9271)
#   HYBRID_ES_PASSWORD        password of the built-in `elastic` user (default: hybrid-es-dev)
#   HYBRID_ES_HEAP            JVM heap of each node (default 1g; 512m with --nodes N>1)
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

say() { printf 'es.sh: %s\n' "$*" >&2; }
die() { printf 'es.sh: error: %s\n' "$*" >&2; exit 1; }
usage() {
  echo "usage: scripts/es.sh [--nodes N] [--node I] start|stop|restart|status|logs [LINES]|kill|env" >&2
  exit 2
}

NODES="" NODE="" ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) [ $# -ge 2 ] || usage; NODES=$2; shift 2 ;;
    --nodes=*) NODES=${1#*=}; shift ;;
    --node) [ $# -ge 2 ] || usage; NODE=$2; shift 2 ;;
    --node=*) NODE=${1#*=}; shift ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
set -- "${ARGS[@]+"${ARGS[@]}"}"
[ -z "$NODES" ] || [[ "$NODES" =~ ^[1-9]$ ]] || die "--nodes takes a number from 1 to 9, not '$NODES'"
[ -z "$NODE" ] || [[ "$NODE" =~ ^[1-9]$ ]] || die "--node takes a node number from 1 to 9, not '$NODE'"
# A cluster: --nodes N>1, or --node I (of the cluster recorded at its start).
MULTI=0
if [ "${NODES:-1}" -gt 1 ] || [ -n "$NODE" ]; then MULTI=1; fi

VERSION="${HYBRID_ES_SERVER_VERSION:-9.5.4}"
CACHE="${HYBRID_ES_CACHE:-$HOME/.cache/hybrid-es}"
PORT="${HYBRID_ES_PORT:-9200}"
PASSWORD="${HYBRID_ES_PASSWORD:-hybrid-es-dev}"
HEAP="${HYBRID_ES_HEAP:-1g}"
LICENSE="${HYBRID_ES_LICENSE:-trial}"
RUN_USER="hybrid-es"
TLS="${HYBRID_ES_TLS:-0}"
if [ "$TLS" = 1 ]; then
  [ "$MULTI" = 0 ] || die "HYBRID_ES_TLS=1 is for a single node; the local cluster (--nodes) speaks plain HTTP"
  HYBRID_ES_INSTANCE="${HYBRID_ES_INSTANCE:-tls}"
  PORT="${HYBRID_ES_PORT:-9243}"
fi
if [ "$MULTI" = 1 ]; then
  HYBRID_ES_INSTANCE="${HYBRID_ES_INSTANCE:-cluster}"
  PORT="${HYBRID_ES_PORT:-9271}"
  HEAP="${HYBRID_ES_HEAP:-512m}"
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
CERTS="$HOME_DIR/config/certs"
COUNT_FILE="$HOME_DIR/nodes/count"
FORMED="$HOME_DIR/nodes/formed"
if [ "$MULTI" = 1 ] && [ -z "$NODES" ]; then
  NODES=$(cat "$COUNT_FILE" 2>/dev/null) \
    || die "no cluster was started in $HOME_DIR: give its size with --nodes N"
fi
NODES="${NODES:-1}"
[ -z "$NODE" ] || [ "$NODE" -le "$NODES" ] || die "--node $NODE: the cluster has $NODES nodes"

# The node that the functions below act on (use_node I): its name, folders, ports and URL. A
# single node keeps the layout it always had: config, data and logs right in the home folder.
use_node() {
  local i=$1
  if [ "$MULTI" = 0 ]; then
    NODE_NAME=hybrid-es-node-1 CLUSTER_NAME=hybrid-es-dev
    CONF="$HOME_DIR/config" DATA="$HOME_DIR/data" LOGS="$HOME_DIR/logs"
    PIDFILE="$HOME_DIR/es.pid" START_OUT="$HOME_DIR/start.out"
    HTTP_PORT=$PORT
  else
    local dir="$HOME_DIR/nodes/node-$i"
    NODE_NAME="hybrid-es-$HYBRID_ES_INSTANCE-$i" CLUSTER_NAME="hybrid-es-$HYBRID_ES_INSTANCE"
    CONF="$dir/config" DATA="$dir/data" LOGS="$dir/logs"
    PIDFILE="$dir/es.pid" START_OUT="$dir/start.out"
    HTTP_PORT=$((PORT + i - 1))
  fi
  TRANSPORT_PORT=$((HTTP_PORT + 100))
  URL="$([ "$TLS" = 1 ] && echo https || echo http)://127.0.0.1:$HTTP_PORT"
}
use_node 1
SECURITY_CONF="$CONF"

# The nodes a command acts on: --node I, or all of them.
targets() { if [ -n "$NODE" ]; then echo "$NODE"; else seq 1 "$NODES"; fi; }

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

# How the node finds its cluster: alone (single-node discovery), or the other nodes' transport
# ports, and until the cluster has once formed (FORMED, written when a start saw it whole) the
# master-eligible nodes that bootstrap it; left out after that, as Elasticsearch asks. (To start
# afresh, delete the instance's nodes folder.)
discovery_config() {
  if [ "$MULTI" = 0 ]; then echo "discovery.type: single-node"; return 0; fi
  local i seeds=() names=()
  for i in $(seq 1 "$NODES"); do
    seeds+=("\"127.0.0.1:$((PORT + 100 + i - 1))\"")
    names+=("\"hybrid-es-$HYBRID_ES_INSTANCE-$i\"")
  done
  (IFS=,; echo "discovery.seed_hosts: [${seeds[*]}]")
  if [ ! -f "$FORMED" ]; then
    (IFS=,; echo "cluster.initial_master_nodes: [${names[*]}]")
  fi
}

configure() {
  local cfg="$CONF" http_tls discovery
  if [ ! -d "$cfg" ]; then  # a cluster's node: its own copy of the distribution's config
    rm -rf "$cfg.partial"; mkdir -p "$(dirname "$cfg")"
    cp -r "$HOME_DIR/config" "$cfg.partial"
    rm -f "$cfg.partial"/{elasticsearch.keystore,users,users_roles,roles.yml}
    mv "$cfg.partial" "$cfg"
  fi
  http_tls="$(http_tls_config)"
  discovery="$(discovery_config)"
  cat >"$cfg/elasticsearch.yml" <<YML
# Written by hybrid-es scripts/es.sh; rewritten on every start.
cluster.name: $CLUSTER_NAME
node.name: $NODE_NAME
$discovery
network.host: 127.0.0.1
http.port: $HTTP_PORT
transport.port: $TRANSPORT_PORT
path.data: $DATA
path.logs: $LOGS
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
    # The other nodes of a cluster may be running, writing and deleting files under it (segment
    # merges): a file that vanishes during the walk is no error; any other failure is.
    local chowned
    chowned=$(chown -R "$RUN_USER:" "$HOME_DIR" 2>&1) \
      || ! grep -v 'No such file or directory' <<<"$chowned" | grep -q . \
      || die "could not give $HOME_DIR to $RUN_USER: $chowned"
    # the user must be able to reach the cache directory
    local d="$HOME_DIR"
    while [ "$d" != "/" ]; do chmod o+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done
  fi
  if [ "$MULTI" = 1 ] && [ "$CONF" != "$SECURITY_CONF" ]; then
    copy_security_files "$CONF"  # made once, on the first node (seconds of JVM each)
    return 0
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

# A cluster's keystore (the bootstrap password) and file realm (users, roles) are made in the
# first node's config (SECURITY_CONF) and copied to every other node: the same users everywhere.
SECURITY_FILES="elasticsearch.keystore users users_roles roles.yml"
copy_security_files() {  # config folder
  local f
  [ "$1" = "$SECURITY_CONF" ] && return 0
  for f in $SECURITY_FILES; do
    cp "$SECURITY_CONF/$f" "$1/$f.new"
    [ "$(id -u)" = 0 ] && chown "$RUN_USER:" "$1/$f.new"
    mv "$1/$f.new" "$1/$f"  # whole: a running node reloads the realm files
  done
  return 0
}

# HYBRID_ES_TLS=1: a file-based service-account token (elastic/fleet-server), a credential that
# goes out as "Authorization: Bearer", for the bearer-token tests (this zip has no security index
# for API keys or OAuth2 tokens). Its value: config/certs/service-token.
service_token() {
  grep -q '^elastic/fleet-server/hybrid-es:' "$CONF/service_tokens" 2>/dev/null \
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
    runuser -u "$RUN_USER" -- env ES_JAVA_HOME="$JAVA" ES_PATH_CONF="$CONF" "$@"
  else
    env ES_JAVA_HOME="$JAVA" ES_PATH_CONF="$CONF" "$@"
  fi
}

# File-realm users and roles, rendered from es_templates/roles. They need no security index, which
# the integ-test zip cannot create (its mapping needs analysis-common), so document-level security
# and least privilege are testable here for real. Users (password $PASSWORD): reader-<tenant> with
# that tenant's reader role, rx-reader-<tenant> with the same role over the test suite's reader
# layout, and hybrid-es-admin, hybrid-es-ingest, hybrid-es-app, hybrid-es-trace-reader and
# hybrid-es-source-reader (an index sync's source credential, on legacy-*), each with the role of
# its name. Also run on a node that is already up: the node reloads both files,
# so roles.yml is replaced whole and only missing users are added.
DEPLOYMENT_ROLES="hybrid-es-admin hybrid-es-ingest hybrid-es-app hybrid-es-trace-reader"
provision_file_realm() {
  local cfg="$CONF" roles
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
# The source credential of an index sync (hybrid-es ingest --from-index), on the test suite's
# source indices (legacy-*): read and view_index_metadata there, nothing else.
source = (roles / "hybrid-es-source-reader.json").read_text(encoding="utf-8")
line("hybrid-es-source-reader", json.loads(source.replace("{{source_index}}", "legacy-*")))
def index_part(tenant):  # hybrid_es.tenancy.index_part: '_' -> '__', a capital X -> '_x'
    return "".join("__" if c == "_" else "_" + c.lower() if c.isupper() else c for c in tenant)
# Each reader role names exactly its tenant's own indices (hybrid_es.cluster.templates.render_role):
# hybrid-es-tenant-reader-<tenant> in the default layout, hybrid-es-rx-reader-<tenant> in the test
# suite's reader layout (tests/security/test_reader_matrix.py), so that a wildcard from the matrix's
# reader reaches nothing that other tests write into the default layout.
LAYOUTS = (("hybrid-es-tenant-reader", "hybrid-es-chunks", "hybrid-es-corpus-state"),
           ("hybrid-es-rx-reader", "hybrid-es-chunks-rx", "hybrid-es-corpus-state-rx"))
for tenant in sys.argv[3:]:
    for prefix, chunks, state in LAYOUTS:
        line(f"{prefix}-{tenant}",
             json.loads(template.replace("{{tenant}}", tenant)
                        .replace("{{chunks_index}}", f"{chunks}-t-{index_part(tenant)}")
                        .replace("{{corpus_state_index}}", state)))
PY
  mv "$cfg/roles.yml.new" "$cfg/roles.yml"
  touch "$cfg/users" "$cfg/users_roles"
  [ "$(id -u)" = 0 ] && chown "$RUN_USER:" "$cfg/roles.yml" "$cfg/users" "$cfg/users_roles"
  local tenant pairs=()
  for tenant in ${HYBRID_ES_FILE_TENANTS:-demo-A demo-B}; do
    pairs+=("reader-$tenant:hybrid-es-tenant-reader-$tenant" "rx-reader-$tenant:hybrid-es-rx-reader-$tenant")
  done
  for role in $DEPLOYMENT_ROLES hybrid-es-source-reader; do pairs+=("$role:$role"); done
  add_users "${pairs[@]}"
}

# Add the users (user:role pairs) that the users file lacks. The tool hashes the password for the
# first (each call starts a JVM: seconds); the others share that salted hash, since every user
# here has the same password. Both files are replaced whole: a running node reloads them.
add_users() {
  local cfg="$CONF" pair missing=() hash
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

# The cluster's health as the first node that answers reports it; that node becomes the current
# one (use_node). Fails when none answers.
cluster_health() {
  local i out
  for i in $(seq 1 "$NODES"); do
    use_node "$i"
    out=$(health) || continue
    if [[ "$out" == *'"status"'* ]]; then echo "$out"; return 0; fi
  done
  use_node 1
  return 1
}

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

log_file() { echo "$LOGS/$CLUSTER_NAME.log"; }

# Start the current node as a daemon; its server writes its pid file itself.
launch() {
  local cmd=("$HOME_DIR/bin/elasticsearch" -d -p "$PIDFILE")
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$RUN_USER" -- env ES_JAVA_HOME="$JAVA" ES_PATH_CONF="$CONF" "${cmd[@]}" >"$START_OUT" 2>&1 || true
  else
    ES_JAVA_HOME="$JAVA" ES_PATH_CONF="$CONF" "${cmd[@]}" >"$START_OUT" 2>&1 || true
  fi
}

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
  if port_taken "$HTTP_PORT"; then
    die "port $HTTP_PORT on 127.0.0.1 is already in use by another process. Stop it, or choose another port with HYBRID_ES_PORT=9201."
  fi
  JAVA=$(find_java)
  fetch
  unpack
  configure
  rm -f "$PIDFILE"
  say "starting Elasticsearch $VERSION (java: $JAVA) at $URL"
  launch
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
  tail -20 "$START_OUT" >&2 2>/dev/null || true
  tail -40 "$(log_file)" >&2 2>/dev/null || true
  die "start failed (full log: $(log_file))"
}

# --nodes N start [--node I]: start the nodes that are not running (all at once: a node waits
# for the others to form the cluster), then wait until all N have joined and the cluster is green.
cluster_start() {
  local i launched=() launchers=() ports expected=$NODES
  for i in $(seq 1 "$NODES"); do  # a node not asked for and down: the cluster will lack it
    [[ " $(targets | tr '\n' ' ') " == *" $i "* ]] && continue
    use_node "$i"
    running_pid >/dev/null || { say "note: node $i is not running (start it too for a whole cluster)"; expected=$((expected - 1)); }
  done
  [ "$expected" -gt $((NODES / 2)) ] \
    || die "$expected of $NODES nodes would be up: a master needs a majority ($((NODES / 2 + 1))). Start more (or all) of them."
  for i in $(targets); do
    use_node "$i"
    if pid=$(running_pid); then say "node $i already running (pid $pid) at $URL"; continue; fi
    for ports in "$HTTP_PORT" "$TRANSPORT_PORT"; do
      port_taken "$ports" && die "port $ports on 127.0.0.1 (node $i) is already in use by another process. Stop it, or move the cluster with HYBRID_ES_PORT (its nodes use that port + 0..$((NODES - 1)) and 100 above)."
    done
    launched+=("$i")
  done
  JAVA=$(find_java)
  fetch
  unpack
  mkdir -p "$HOME_DIR/nodes"
  [ -f "$COUNT_FILE" ] && [ -n "$NODE" ] || echo "$NODES" >"$COUNT_FILE"
  # The keystore and file realm: made on node 1 when it starts, else brought up to date there.
  use_node 1
  if [[ " ${launched[*]} " == *" 1 "* ]]; then
    configure
  elif [ -f "$SECURITY_CONF/elasticsearch.keystore" ]; then
    provision_file_realm
  else
    die "node 1 of this cluster was never started: start the whole cluster (--nodes $NODES start)"
  fi
  for i in $(seq 1 "$NODES"); do
    use_node "$i"
    if [[ " ${launched[*]} " == *" $i "* ]]; then
      [ "$i" = 1 ] || configure
    elif [ -d "$CONF" ]; then
      copy_security_files "$CONF"
    fi
  done
  if [ ${#launched[@]} -gt 0 ]; then
    say "starting node(s) ${launched[*]} of a $NODES-node Elasticsearch $VERSION cluster (java: $JAVA, heap $HEAP each; HTTP ports $PORT-$((PORT + NODES - 1)))"
  fi
  for i in "${launched[@]+"${launched[@]}"}"; do
    use_node "$i"
    rm -f "$PIDFILE"
    launch &
    launchers+=("$!")
  done
  local h="" k dead="" deadline=$((SECONDS + ${HYBRID_ES_START_TIMEOUT:-240}))
  while [ $SECONDS -lt $deadline ]; do
    h=$(cluster_health) || h=""
    if [[ "$h" == *"\"number_of_nodes\":$expected,"* && "$h" == *'"status":"green"'* ]]; then
      wait "${launchers[@]+"${launchers[@]}"}" 2>/dev/null || true
      touch "$FORMED"
      say "ready: $h"
      cluster_health >/dev/null && ensure_license
      return 0
    fi
    # A node whose launcher has returned and whose server is not running has died.
    for k in "${!launched[@]}"; do
      kill -0 "${launchers[$k]}" 2>/dev/null && continue
      use_node "${launched[$k]}"
      running_pid >/dev/null || { dead="${launched[$k]}"; break 2; }
    done
    sleep 1
  done
  wait "${launchers[@]+"${launchers[@]}"}" 2>/dev/null || true
  if [ -n "$dead" ]; then
    use_node "$dead"
    say "node $dead did not start. Last lines of its output and log:"
  else
    say "the cluster did not get $expected nodes joined and green in time (${HYBRID_ES_START_TIMEOUT:-240}s; HYBRID_ES_START_TIMEOUT): ${h:-no node answers}"
    [ -n "$h" ] && say "(a yellow cluster with every node joined has a replica that cannot be allocated: GET _cluster/allocation/explain)"
    use_node "${launched[0]:-1}"
  fi
  tail -20 "$START_OUT" >&2 2>/dev/null || true
  tail -40 "$(log_file)" >&2 2>/dev/null || true
  die "start failed (full log: $(log_file))"
}

cmd_stop() {
  local i pid stopping=()
  for i in $(targets); do
    use_node "$i"
    if pid=$(running_pid); then
      if [ "$MULTI" = 1 ]; then say "stopping node $i (pid $pid)"; else say "stopping pid $pid"; fi
      kill "$pid"
      stopping+=("$pid")
    else
      if [ "$MULTI" = 1 ]; then say "node $i: not running"; else say "not running"; fi
    fi
    rm -f "$PIDFILE"
  done
  for pid in "${stopping[@]+"${stopping[@]}"}"; do  # in parallel: each has 60 s
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -9 "$pid" 2>/dev/null || true
  done
}

# SIGKILL: a crash, not a shutdown (tests of node loss); `start` brings the node back.
cmd_kill() {
  local i pid
  for i in $(targets); do
    use_node "$i"
    if pid=$(running_pid); then
      say "killing node $i (pid $pid) with SIGKILL"
      kill -9 "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      rm -f "$PIDFILE"
    else
      say "node $i: not running"
    fi
  done
}

cmd_status() {
  if [ "$MULTI" = 0 ]; then
    if pid=$(running_pid); then
      echo "running (pid $pid, version $VERSION) at $URL"
      health; echo
    else
      echo "not running (version $VERSION, home $HOME_DIR)"
      return 3
    fi
    return 0
  fi
  local i pid up=0 n=0
  echo "cluster hybrid-es-$HYBRID_ES_INSTANCE: $NODES nodes, version $VERSION, home $HOME_DIR"
  for i in $(targets); do
    use_node "$i"
    n=$((n + 1))
    if pid=$(running_pid); then
      up=$((up + 1))
      echo "node $i ($NODE_NAME): running (pid $pid) at $URL"
    else
      echo "node $i ($NODE_NAME): not running"
    fi
  done
  if [ "$up" -gt 0 ]; then cluster_health || echo "no node answers"; echo; fi
  [ "$up" = "$n" ] || return 3
}

cmd_logs() {
  local i
  for i in $(targets); do
    use_node "$i"
    [ "$MULTI" = 0 ] || echo "== node $i: $(log_file)"
    tail -n "${1:-50}" "$(log_file)"
  done
}

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

start() { if [ "$MULTI" = 1 ]; then cluster_start; else cmd_start; fi; }

case "${1:-}" in
  start) start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; start ;;
  status) cmd_status ;;
  logs) shift; cmd_logs "$@" ;;
  kill) cmd_kill ;;
  env) use_node "${NODE:-1}"; cmd_env ;;
  *) usage ;;
esac
