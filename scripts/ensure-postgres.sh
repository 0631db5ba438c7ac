#!/usr/bin/env bash
# Make sure the PostgreSQL server binaries the tests start are installed.
# Installs Debian's postgresql with apt-get when missing (root only); the tests
# themselves start a throwaway server on 127.0.0.1 and stop it at the end.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL server not found; installing it with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
else
  echo "PostgreSQL server binaries not found (install the 'postgresql' package)" >&2
  [ "${KVCTL_REQUIRE_ALL:-0}" = "1" ] && exit 1
fi
exit 0
