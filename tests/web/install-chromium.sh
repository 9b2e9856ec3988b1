#!/usr/bin/env bash
# Installs Debian's chromium for the browser test (tests/web/run.sh): the version this was
# tested with first, else the one the Debian mirror has now (tests/lib/apt.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/apt.sh
apt_install install-chromium chromium=156.0.8078.114-1~deb12u1
chromium --version >&2
