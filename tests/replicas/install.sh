#!/usr/bin/env bash
# Installs Debian's nginx, HAProxy and rsync for the replica test (tests/replicas/ci.sh): the versions
# it was tested with first, else the ones the Debian mirror has now (a security update replaces
# the old package there). Needs root or sudo; says so when it has neither.
set -euo pipefail
declare -A PINNED=([nginx-light]=1.22.1-9+deb12u12 [haproxy]=2.6.12-1+deb12u4
    [rsync]=3.5.0+ds1-0+deb12u1)
if command -v nginx >/dev/null && command -v haproxy >/dev/null && command -v rsync >/dev/null; then
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null; then
    as_root=(sudo -n)
else
    echo "replicas: nginx, haproxy or rsync is missing and neither root nor sudo is available: apt-get install nginx-light haproxy rsync" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq >/dev/null || true
for package in nginx-light haproxy rsync; do
    if ! "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$package=${PINNED[$package]}" >/dev/null; then
        echo "replicas: $package ${PINNED[$package]} is no longer on the mirror; installing the current one" >&2
        "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$package" >/dev/null
    fi
done
# The packages start their services; the test runs its own instances.
"${as_root[@]}" service nginx stop >/dev/null 2>&1 || true
"${as_root[@]}" service haproxy stop >/dev/null 2>&1 || true
# (`head` closes the pipe early: not a failure.)
nginx -v >&2 || true
haproxy -v 2>&1 | head -n 1 >&2 || true
rsync --version 2>&1 | head -n 1 >&2 || true
