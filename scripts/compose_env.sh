#!/usr/bin/env bash
# Write the .env that docker-compose.yml needs: a strong random password for each user of the
# compose stack. Compose refuses to start without it.
#
#   scripts/compose_env.sh [--force] [FILE]
#
# FILE defaults to .env next to docker-compose.yml. It is written with mode 0600 (only you may
# read it), and .gitignore keeps it out of git. An existing file is never replaced unless you
# say so: --force, or "y" at the prompt when run from a terminal. A stack that already ran with
# the old passwords is best started over with the new ones: docker compose down -v (this
# deletes its data), then docker compose up -d.
#
# Each password is 24 bytes from /dev/urandom as 48 hex digits (192 bits): letters and digits
# only, so that it needs no quoting in .env, in JSON or in a shell.
set -euo pipefail

VARS=(ELASTIC_PASSWORD KIBANA_SYSTEM_PASSWORD TRACE_READER_PASSWORD)

say() { printf 'compose_env.sh: %s\n' "$*" >&2; }
usage() { echo "usage: scripts/compose_env.sh [--force] [FILE]" >&2; exit 2; }

FORCE=0 FILE=""
while [ $# -gt 0 ]; do
  case "$1" in
    -f|--force) FORCE=1 ;;
    -h|--help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) usage ;;
    *) [ -z "$FILE" ] || usage; FILE=$1 ;;
  esac
  shift
done
FILE=${FILE:-"$(cd "$(dirname "$0")/.." && pwd)/.env"}

if [ -e "$FILE" ] && [ "$FORCE" != 1 ]; then
  if [ -t 0 ]; then
    printf 'compose_env.sh: %s exists. Replace its passwords with new ones? [y/N] ' "$FILE" >&2
    read -r answer || answer=""
    case "$answer" in y|Y|yes|YES) ;; *) say "kept $FILE unchanged"; exit 1 ;; esac
  else
    say "$FILE exists: kept unchanged. Rerun with --force to replace it with new passwords."
    exit 1
  fi
fi

password() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }

# Written beside the target and renamed over it: the file never exists with other permissions
# or half written.
umask 077
tmp=$(mktemp "$FILE.XXXXXX")
trap 'rm -f "$tmp"' EXIT
{
  echo "# The passwords of the hybrid-es compose stack (docker-compose.yml), written by"
  echo "# scripts/compose_env.sh. Keep this file private; it is git-ignored."
  for var in "${VARS[@]}"; do
    value=$(password)
    [ ${#value} -eq 48 ] || { say "could not read /dev/urandom"; exit 1; }
    echo "$var=$value"
  done
} >"$tmp"
chmod 600 "$tmp"
mv -f "$tmp" "$FILE"
trap - EXIT
say "wrote $FILE (mode 0600): ${VARS[*]}"
say "next: docker compose up -d; Kibana trace readers log in as hybrid-es-trace-reader (TRACE_READER_PASSWORD)"
