#!/usr/bin/env bash
# Manage a local, real OpenSearch node for development and CI, assembled from Maven Central.
#
#   scripts/opensearch.sh start|stop|restart|status|logs [N]|env
#   HYBRID_OS_VERSION=3.6.0 scripts/opensearch.sh start|...      (an OpenSearch 3.x node, see below)
#
# OpenSearch's integration-test distribution has the server and transport-netty4 only. This
# script fetches it and the plugins the product needs from Maven Central, each checked against a
# SHA-512 pinned below, and assembles a node that has them all: k-NN (lucene engine),
# neural-search (the hybrid query, RRF and normalization processors), the security plugin (TLS,
# users, roles with document-level security), and lang-painless + analysis-common installed as
# modules (their jars, with the plugin descriptors this script writes). It runs as a non-root
# user on Java 17-21 (OpenSearch 2.19 needs the security manager, which Java 24+ no longer has),
# single node on 127.0.0.1, HTTPS with the security plugin's demo certificates, health green.
# A killed download or unpack is redone on the next start; a finished node home is reused.
#
# OpenSearch 3.6.0 (HYBRID_OS_VERSION=3.6.0; its own downloads, home and default port 9410, so it
# runs beside a 2.19 node): the 3.x zip already ships lang-painless and analysis-common as
# modules (no module assembly), k-NN and neural-search 3.6.0.0 are native, and it runs on Java
# 21+ (the newest one found; no security manager any more). Maven Central has no security plugin
# for 3.6, so the 3.4.0.0 one is installed CROSS-VERSION: its descriptor is edited to say 3.6.0
# and the three BouncyCastle FIPS jars that 3.6 core already has in lib/ are dropped (jar hell
# otherwise). That is unsupported upstream; `start` and `status` say so. In 3.x, as in 2.19, the
# k-NN default engine is faiss, whose native libraries this zip lacks: mappings must say lucene.
#
# Settings (environment):
#   HYBRID_OS_VERSION             2.19.1 (default) or 3.6.0
#   HYBRID_ES_CACHE               cache root (default ~/.cache/hybrid-es)
#   HYBRID_OS_PORT                HTTPS port (default 9400, 9410 for 3.6.0; transport is the port + 100)
#   HYBRID_OS_PASSWORD            password of `admin` and the tenant readers (default below)
#   HYBRID_OS_HEAP                JVM heap (default 1g)
#   HYBRID_OS_INSTANCE            a name for a second, separate node from the same download
#   HYBRID_ES_FILE_TENANTS        tenants that get a reader user (default: demo-A demo-B)
#   OPENSEARCH_JAVA_HOME          a JDK 17-21 for 2.19.1 (default: the first suitable one under
#                                 /usr/lib/jvm), 21+ for 3.6.0 (default: the newest one there)
set -euo pipefail

VERSION="${HYBRID_OS_VERSION:-2.19.1}"
CACHE="${HYBRID_ES_CACHE:-$HOME/.cache/hybrid-es}"
# Per version: the artifacts, each with the SHA-512 taken when it was pinned (Maven Central serves
# SHA-1 files only, and not even those for every 3.6 zip; the pins here are the trust anchor),
# the Java range, and how the node is put together.
declare -A SHA512
case "$VERSION" in
  2.19.1)
    PLUGIN_VERSION=2.19.1.0
    SECURITY_VERSION=$PLUGIN_VERSION
    DEFAULT_PORT=9400
    JAVA_MIN=17 JAVA_MAX=21 JAVA_PICK=first
    JAVA_HELP="OpenSearch $VERSION needs Java 17 to 21 (it runs under the security manager, which Java 24+ removed) and none was found (looked at OPENSEARCH_JAVA_HOME, /usr/lib/jvm/*). Install one ('apt-get install openjdk-17-jdk-headless') or point OPENSEARCH_JAVA_HOME at it."
    ASSEMBLE_MODULES=1
    SHA512=(
      [org.opensearch.distribution.integ-test-zip:opensearch:$VERSION:zip]=0bed69daad3c80e1302a0dba083f04f5accbb94ba8451052822ec065d24432fe096e329d6971758a8a021025b0302ee5b27eb5d89506853d8be736305f407651
      [org.opensearch.plugin:opensearch-knn:$PLUGIN_VERSION:zip]=b773727c4c41d08f3e3af4726cde420b90749c55a5cc82ca5fd42a5b58f3edb002f2210b8653a597b5121d4034b428857df7bd82627b44946da7d2ad67111b28
      [org.opensearch.plugin:neural-search:$PLUGIN_VERSION:zip]=d55a01237c89f42adcf94742d2aaaa339d174d5e24bf3027e5899bde38342e1363d4367d19383e1a8da5072e871d0689d132331ed44b287d27d27a975802d605
      [org.opensearch.plugin:opensearch-security:$PLUGIN_VERSION:zip]=89db39616847243fc02392c224164828caccd445ccf85143846ad1e382362f3cf1ce22f87052631eff1fa573dd1d0e6a2e12a54fe8947674cee552b10b736b8a
      [org.opensearch.plugin:lang-painless:$VERSION:jar]=ba2fe248236b51b7ffc8a8eb9999b893161f2708215fd65d8363dc2054d6c67ec25b6c1aca13f1d580789e14ecc10a714b69ed1e2e152c61ce3c22c47aee4ec2
      [org.opensearch.plugin:opensearch-scripting-painless-spi:$VERSION:jar]=964cb4b3b8ce94a42bc7e4e699d01db7b34c68966c8fc2d5014461c2b5e98a22e53b04173f8b33e2f12cd3ec9e571f033341ea72039017551de70641442624b1
      [org.opensearch.plugin:analysis-common:$VERSION:jar]=b7eb67d3eeca0e0ed47eac2753bf2743ca5efee56874459c927c1254546622e6743edd9ed9c4993de6b7769610359db6a690a78c6a3ae60ace0612951ed8f960
      [org.antlr:antlr4-runtime:4.13.1:jar]=63eb51bfcee49c52848d8b7c3c46d8b4d367d85fb3c3db7175eaacba94e4d0c227b78e5955a0e86e575e1c6206fc2a43e5fa96fb04ad7c16e24ec94015cfc18b
      [org.ow2.asm:asm:9.7:jar]=ada37fcc95884a4d2cbc64495f5f67556c847e7724e26ccfbb15cc42a476436fa54b5d4fd4d9ed340241d848999d415e1cff07045d9e97d451c16aeed4911045
      [org.ow2.asm:asm-util:9.7:jar]=7056f5905a27a8a3bc2e2b9774d1c70378b2441779bdce218f45aa2a549d1f4e2b81d562f20bf9a8d5be96d33e30a8f9e15caeebade6287dde6cc082afb36089
      [org.ow2.asm:asm-tree:9.7:jar]=60c548f80af02ea8da5866104921ca818a8de846504faebac5cf016becba6b277a33bf594a7fd783443856310864b2ffc99aa11cd6f4e439c086734923ef823b
      [org.ow2.asm:asm-commons:9.7:jar]=64544d7515aa4582ebf40e9a5ec32cbcee3ef0e3e15448bd56e6adb583d4ff764a34bba866816e4415298da939b029384a6ccf887c70b5fe98ac23589e626f79
      [org.ow2.asm:asm-analysis:9.7:jar]=69c2a9f73262b0fe5c1758973b5406dc0639b0e1d9a82863d5bc2d664395b737e45f50789c6f7ba3c8915d7ec79858e197032066d6b8386e35d6aed6cd95a8f2
    )
    ;;
  3.6.0)
    PLUGIN_VERSION=3.6.0.0
    # The newest security plugin on Maven Central for 3.x is 3.4.0.0 (none for 3.5 or 3.6):
    # repacked for 3.6.0 in assemble(), an unsupported cross-version install.
    SECURITY_VERSION=3.4.0.0
    DEFAULT_PORT=9410
    JAVA_MIN=21 JAVA_MAX= JAVA_PICK=newest
    JAVA_HELP="OpenSearch $VERSION needs Java 21 or newer and none was found (looked at OPENSEARCH_JAVA_HOME, /usr/lib/jvm/*). Install one ('apt-get install openjdk-21-jdk-headless') or point OPENSEARCH_JAVA_HOME at it."
    ASSEMBLE_MODULES=0
    # SHA-1 checked at pinning: core and security against Maven Central's .sha1; k-NN and
    # neural-search have no .sha1 there and were checked against the recipe's recorded SHA-1
    # (docs/opensearch-3x-from-maven-central.md).
    SHA512=(
      [org.opensearch.distribution.integ-test-zip:opensearch:$VERSION:zip]=b82066a97902879c47e26608848d068c09e74d2128edee2802e622867abd451d34a366acc6519d0b40fc97acc89d61c5bb330ab8b2086cf6ffa0f9fe4b9acaa4
      [org.opensearch.plugin:opensearch-knn:$PLUGIN_VERSION:zip]=fc5152c44729e636e0efc31c97f339f18bc8401376f1ac0a404016b654ff5372c2af01b37d537f234e9c132c0c39d576f02afc5da2bc0c38fa0c82c2cb47bb42
      [org.opensearch.plugin:neural-search:$PLUGIN_VERSION:zip]=50f64822417ea5aac14c1fe3a12f592a9354a8264240b62c58bc58c7eb94f8ffa7c6e7bd8fa9dd176251c4ca297611ecd935bf008f67b79d8b1fa1d0ccbe80ba
      [org.opensearch.plugin:opensearch-security:$SECURITY_VERSION:zip]=aad7c7fb11d17fe6866d93b05a2d3eb581d43c29bd4455371943efe5cfe2f6b0c6003597e45e2dd8b676fe4f88d677e24b055207ab5d6cfc7bb57a45a608b09a
    )
    ;;
  *)
    printf 'opensearch.sh: error: %s\n' "HYBRID_OS_VERSION=$VERSION is not supported: use 2.19.1 (the default) or 3.6.0." >&2
    exit 1
    ;;
esac
PORT="${HYBRID_OS_PORT:-$DEFAULT_PORT}"
PASSWORD="${HYBRID_OS_PASSWORD:-Hybrid-es_dev-2026!}"
HEAP="${HYBRID_OS_HEAP:-1g}"
RUN_USER="hybrid-es"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

DOWNLOADS="$CACHE/downloads/opensearch-$VERSION"
HOME_DIR="$CACHE/opensearch-$VERSION${HYBRID_OS_INSTANCE:+-$HYBRID_OS_INSTANCE}"
PIDFILE="$HOME_DIR/opensearch.pid"
URL="https://127.0.0.1:$PORT"
CA="$HOME_DIR/config/root-ca.pem"

say() { printf 'opensearch.sh: %s\n' "$*" >&2; }
die() { printf 'opensearch.sh: error: %s\n' "$*" >&2; exit 1; }

# Empty unless the security plugin is from another OpenSearch version (3.6.0 only).
cross_version_note() {
  [ "$SECURITY_VERSION" = "$PLUGIN_VERSION" ] && return 0
  echo "note: security plugin $SECURITY_VERSION installed cross-version on OpenSearch $VERSION (repacked: descriptor edited, duplicate BouncyCastle FIPS jars dropped); unsupported upstream"
}

curl_os() { curl -s --max-time 5 --cacert "$CA" -u "admin:$PASSWORD" "$@"; }

# A suitable OPENSEARCH_JAVA_HOME wins; otherwise the first (2.19) or the newest (3.x) suitable
# JDK under /usr/lib/jvm.
find_java() {
  local candidates=() best="" best_v=0
  [ -n "${OPENSEARCH_JAVA_HOME:-}" ] && candidates+=("$OPENSEARCH_JAVA_HOME")
  for d in /usr/lib/jvm/*; do [ -d "$d" ] && candidates+=("$d"); done
  for home in "${candidates[@]}"; do
    [ -x "$home/bin/java" ] || continue
    local v
    v=$("$home/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
    v="${v%%.*}"
    if [ -n "$v" ] && [ "$v" -ge "$JAVA_MIN" ] && { [ -z "$JAVA_MAX" ] || [ "$v" -le "$JAVA_MAX" ]; }; then
      if [ "$JAVA_PICK" = first ] || [ "$home" = "${OPENSEARCH_JAVA_HOME:-}" ]; then echo "$home"; return 0; fi
      if [ "$v" -gt "$best_v" ]; then best="$home" best_v="$v"; fi
    fi
  done
  [ -n "$best" ] && { echo "$best"; return 0; }
  die "$JAVA_HELP"
}

file_of() {  # group:artifact:version:type -> artifact-version.type
  local IFS=:
  read -r _ artifact version type <<<"$1"
  echo "$artifact-$version.$type"
}

fetch() {
  mkdir -p "$DOWNLOADS"
  command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch OpenSearch from Maven Central. Install it ('apt-get install maven') and retry."
  local coord file tmp
  for coord in "${!SHA512[@]}"; do
    file="$DOWNLOADS/$(file_of "$coord")"
    if [ -f "$file" ] && echo "${SHA512[$coord]}  $file" | sha512sum -c --status; then continue; fi
    rm -f "$file"
    say "fetching $coord from Maven Central ..."
    tmp=$(mktemp -d "$DOWNLOADS/.fetch.XXXXXX")
    if ! mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
        -Dartifact="$coord" -DoutputDirectory="$tmp" >"$tmp/mvn.log" 2>&1; then
      tail -20 "$tmp/mvn.log" >&2
      rm -rf "$tmp"
      die "Maven could not fetch $coord (see above)."
    fi
    if ! echo "${SHA512[$coord]}  $tmp/$(file_of "$coord")" | sha512sum -c --status; then
      rm -rf "$tmp"
      die "checksum mismatch for $coord: refusing to run it. Delete $DOWNLOADS and retry; if it persists, the artifact changed upstream."
    fi
    mv "$tmp/$(file_of "$coord")" "$file"   # atomic: a killed fetch leaves only a temp dir
    rm -rf "$tmp"
  done
}

descriptor() {  # name classname description extended -> plugin-descriptor.properties
  cat <<EOF
description=$3
version=$VERSION
name=$1
classname=$2
java.version=11
opensearch.version=$VERSION
custom.foldername=
extended.plugins=$4
has.native.controller=false
EOF
}

# UNSUPPORTED UPSTREAM: the security plugin of another OpenSearch version made installable. Its
# descriptor's opensearch.version is set to ours (opensearch-plugin refuses a mismatch), and the
# BouncyCastle FIPS jars that core already ships in lib/ (byte-identical) are dropped ("jar hell"
# otherwise). Writes $work/opensearch-security-$SECURITY_VERSION-for-$VERSION.zip.
repack_security() {
  local work="$1" os="$2" dir="$1/security-repack" jar
  local out="$work/opensearch-security-$SECURITY_VERSION-for-$VERSION.zip"
  say "WARNING: installing security plugin $SECURITY_VERSION cross-version on OpenSearch $VERSION (repacked; unsupported upstream)"
  mkdir -p "$dir"
  unzip -q "$DOWNLOADS/opensearch-security-$SECURITY_VERSION.zip" -d "$dir"
  local from="${SECURITY_VERSION%.*}"
  grep -qx "opensearch.version=$from" "$dir/plugin-descriptor.properties" \
    || die "the security $SECURITY_VERSION descriptor does not say opensearch.version=$from: not repacking it"
  sed -i "s/^opensearch\.version=$from\$/opensearch.version=$VERSION/" "$dir/plugin-descriptor.properties"
  for jar in bc-fips-2.1.2.jar bcpkix-fips-2.1.9.jar bcutil-fips-2.1.4.jar; do
    cmp -s "$dir/$jar" "$os/lib/$jar" \
      || die "$jar of security $SECURITY_VERSION is not the one in OpenSearch $VERSION's lib/: not repacking it"
    rm -f "$dir/$jar"
  done
  if command -v zip >/dev/null; then
    (cd "$dir" && zip -q -r "$out" .)
  elif [ -x "$JAVA/bin/jar" ]; then
    "$JAVA/bin/jar" --create --no-manifest --file "$out" -C "$dir" .
  else
    die "repacking the security plugin needs zip (or a JDK's jar tool): 'apt-get install zip'"
  fi
  rm -rf "$dir"
}

assemble() {
  [ -f "$HOME_DIR/.assembled" ] && return 0
  local work="$HOME_DIR.partial" d="$DOWNLOADS"
  rm -rf "$HOME_DIR" "$work"
  mkdir -p "$work"
  if [ "$ASSEMBLE_MODULES" = 1 ]; then
    say "assembling OpenSearch $VERSION with k-NN, neural-search, security, painless, analysis-common"
  else
    say "assembling OpenSearch $VERSION with k-NN, neural-search, security $SECURITY_VERSION (painless, analysis-common: modules of the zip)"
  fi
  unzip -q "$d/opensearch-$VERSION.zip" -d "$work"
  local os="$work/opensearch-$VERSION"
  local security_zip="$d/opensearch-security-$SECURITY_VERSION.zip"
  if [ "$ASSEMBLE_MODULES" = 1 ]; then
    # lang-painless and analysis-common as modules: the jars plus the descriptors they lack.
    mkdir -p "$os/modules/lang-painless" "$os/modules/analysis-common"
    cp "$d/lang-painless-$VERSION.jar" "$d/opensearch-scripting-painless-spi-$VERSION.jar" \
       "$d/antlr4-runtime-4.13.1.jar" "$d"/asm*-9.7.jar "$os/modules/lang-painless/"
    descriptor lang-painless org.opensearch.painless.PainlessPlugin \
      "An easy, safe and fast scripting language for OpenSearch" "" \
      >"$os/modules/lang-painless/plugin-descriptor.properties"
    printf 'grant {\n  permission java.lang.RuntimePermission "createClassLoader";\n  permission java.lang.RuntimePermission "getClassLoader";\n};\n' \
      >"$os/modules/lang-painless/plugin-security.policy"
    cp "$d/analysis-common-$VERSION.jar" "$os/modules/analysis-common/"
    descriptor analysis-common org.opensearch.analysis.common.CommonAnalysisPlugin \
      'Adds "built in" analyzers to OpenSearch.' lang-painless \
      >"$os/modules/analysis-common/plugin-descriptor.properties"
  fi
  if [ "$SECURITY_VERSION" != "$PLUGIN_VERSION" ]; then
    repack_security "$work" "$os"
    security_zip="$work/opensearch-security-$SECURITY_VERSION-for-$VERSION.zip"
  fi
  local plugin zip
  for plugin in opensearch-knn neural-search opensearch-security; do
    zip="$d/$plugin-$PLUGIN_VERSION.zip"
    [ "$plugin" = opensearch-security ] && zip="$security_zip"
    OPENSEARCH_JAVA_HOME="$JAVA" "$os/bin/opensearch-plugin" install --batch \
      "file://$zip" >"$work/install-$plugin.log" 2>&1 \
      || { tail -20 "$work/install-$plugin.log" >&2; die "could not install $plugin"; }
  done
  # TLS and the admin user from the security plugin's own demo installer: certificates made for
  # 127.0.0.1 (root-ca.pem signs them), HTTPS on, the admin password from the environment.
  OPENSEARCH_JAVA_HOME="$JAVA" OPENSEARCH_INITIAL_ADMIN_PASSWORD="$PASSWORD" \
    bash "$os/plugins/opensearch-security/tools/install_demo_configuration.sh" -y -i -s \
    >"$work/install-demo.log" 2>&1 || { tail -20 "$work/install-demo.log" >&2; die "the security demo installer failed"; }
  mv "$os" "$HOME_DIR"
  rm -rf "$work"
  touch "$HOME_DIR/.assembled"
}

configure() {
  local cfg="$HOME_DIR/config"
  # The demo installer appended the security settings; ours go in a marked block, rewritten on
  # every start.
  sed -i '/^# >>> hybrid-es$/,/^# <<< hybrid-es$/d' "$cfg/opensearch.yml"
  cat >>"$cfg/opensearch.yml" <<YML
# >>> hybrid-es
cluster.name: hybrid-es-os
node.name: hybrid-es-os-1
discovery.type: single-node
network.host: 127.0.0.1
http.port: $PORT
transport.port: $((PORT + 100))
path.data: $HOME_DIR/data
path.logs: $HOME_DIR/logs
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
# <<< hybrid-es
YML
  mkdir -p "$cfg/jvm.options.d"
  printf -- '-Xms%s\n-Xmx%s\n' "$HEAP" "$HEAP" >"$cfg/jvm.options.d/heap.options"
  if [ "$(id -u)" = 0 ]; then
    id -u "$RUN_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER"
    chown -R "$RUN_USER:" "$HOME_DIR"
    local d="$HOME_DIR"
    while [ "$d" != "/" ]; do chmod o+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done
  fi
}

running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

health() { curl_os "$URL/_cluster/health" 2>/dev/null; }

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

log_file() { echo "$HOME_DIR/logs/hybrid-es-os.log"; }

# After the security index exists: a single node keeps every index at zero replicas (the audit
# log's daily indices included), and each tenant gets a reader user (roles come from
# `hybrid-es bootstrap --tenant T`, which maps them to these users).
provision() {
  curl_os -XPUT "$URL/_index_template/hybrid-es-single-node" -H 'Content-Type: application/json' \
    -d '{"index_patterns":["security-auditlog-*"],"priority":1,"template":{"settings":{"index.number_of_replicas":0}}}' >/dev/null
  curl_os -XPUT "$URL/security-auditlog-*/_settings" -H 'Content-Type: application/json' \
    -d '{"index.number_of_replicas":0}' >/dev/null || true
  local tenant
  for tenant in ${HYBRID_ES_FILE_TENANTS:-demo-A demo-B}; do
    curl_os -XPUT "$URL/_plugins/_security/api/internalusers/reader-$tenant" \
      -H 'Content-Type: application/json' \
      -d "{\"password\": \"$PASSWORD\", \"backend_roles\": [\"hybrid-es-tenant-$tenant\"]}" >/dev/null
  done
}

cmd_start() {
  if pid=$(running_pid); then
    if health | grep -qE '"status":"(green|yellow)"'; then say "already running (pid $pid) at $URL"; return 0; fi
  fi
  if port_taken "$PORT"; then
    die "port $PORT on 127.0.0.1 is already in use by another process. Stop it, or choose another port with HYBRID_OS_PORT=9401."
  fi
  JAVA=$(find_java)
  fetch
  assemble
  configure
  rm -f "$PIDFILE"
  say "starting OpenSearch $VERSION (java: $JAVA) at $URL"
  local note
  note=$(cross_version_note)
  [ -z "$note" ] || say "$note"
  local launch=("$HOME_DIR/bin/opensearch" -d -p "$PIDFILE")
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$RUN_USER" -- env OPENSEARCH_JAVA_HOME="$JAVA" \
      OPENSEARCH_INITIAL_ADMIN_PASSWORD="$PASSWORD" "${launch[@]}" >"$HOME_DIR/start.out" 2>&1 || true
  else
    OPENSEARCH_JAVA_HOME="$JAVA" OPENSEARCH_INITIAL_ADMIN_PASSWORD="$PASSWORD" \
      "${launch[@]}" >"$HOME_DIR/start.out" 2>&1 || true
  fi
  local started=$SECONDS deadline=$((SECONDS + ${HYBRID_OS_START_TIMEOUT:-240}))
  while [ $SECONDS -lt $deadline ]; do
    if health | grep -qE '"status":"(green|yellow)"'; then
      provision
      say "ready: $(health)"
      return 0
    fi
    # The launcher writes the pid file a few seconds in: only its absence after that is a death.
    if [ $((SECONDS - started)) -gt 20 ] && ! running_pid >/dev/null; then break; fi
    sleep 1
  done
  say "OpenSearch did not become healthy. Last lines of its output and log:"
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
    echo "running (pid $pid, OpenSearch $VERSION) at $URL"
    cross_version_note
    health; echo
  else
    echo "not running (OpenSearch $VERSION, home $HOME_DIR)"
    cross_version_note
    return 3
  fi
}

cmd_logs() { tail -n "${1:-50}" "$(log_file)"; }

cmd_env() {
  echo "export HYBRID_ES_URL=$URL"
  echo "export HYBRID_ES_USERNAME=admin"
  echo "export HYBRID_ES_PASSWORD='$PASSWORD'"
  echo "export HYBRID_ES_CA_CERTS=$CA"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  logs) shift; cmd_logs "$@" ;;
  env) cmd_env ;;
  *) echo "usage: scripts/opensearch.sh start|stop|restart|status|logs [N]|env" >&2; exit 2 ;;
esac
