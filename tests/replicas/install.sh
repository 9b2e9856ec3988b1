#!/usr/bin/env bash
# Installs Debian's nginx, HAProxy and rsync for the replica test (tests/replicas/ci.sh): the
# versions it was tested with first, else the ones the Debian mirror has now (tests/lib/apt.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
if command -v nginx >/dev/null && command -v haproxy >/dev/null && command -v rsync >/dev/null; then
    exit 0
fi
. tests/lib/apt.sh
apt_install replicas nginx-light=1.22.1-9+deb12u12 haproxy=2.6.12-1+deb12u4 rsync=3.5.0+ds1-0+deb12u1
# The packages start their services; the test runs its own instances.
service nginx stop >/dev/null 2>&1 || true
service haproxy stop >/dev/null 2>&1 || true
# (`head` closes the pipe early: not a failure.)
nginx -v >&2 || true
haproxy -v 2>&1 | head -n 1 >&2 || true
rsync --version 2>&1 | head -n 1 >&2 || true
