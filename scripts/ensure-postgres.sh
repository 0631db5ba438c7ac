#!/usr/bin/env bash
# Make sure the PostgreSQL parts the tests use are installed: the server binaries
# (the tests start a throwaway server on 127.0.0.1 and stop it at the end) and the
# JDBC driver that bench/export.py compares kvctl's Spark export against.
# Installs Debian's packages with apt-get when missing (root only).
set -euo pipefail
missing=()
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && ! command -v pg_ctl >/dev/null 2>&1; then
  missing+=(postgresql)
fi
if [ ! -e /usr/share/java/postgresql.jar ]; then
  missing+=(libpostgresql-jdbc-java)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "missing Debian packages: ${missing[*]} (install them to run every test)" >&2
  [ "${KVCTL_REQUIRE_ALL:-0}" = "1" ] && exit 1
fi
exit 0
