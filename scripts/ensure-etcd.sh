#!/usr/bin/env bash
# Make sure the etcd server the etcd provider's tests use is installed (the tests
# start a throwaway 3-member cluster on 127.0.0.1 and stop it at the end).
# Installs Debian's etcd-server (3.4) with apt-get when missing (root only).
set -euo pipefail
command -v etcd >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing etcd-server with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq etcd-server >/dev/null
else
  echo "missing Debian package: etcd-server (install it to run the etcd tests)" >&2
  [ "${KVCTL_REQUIRE_ALL:-0}" = "1" ] && exit 1
fi
exit 0
