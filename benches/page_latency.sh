#!/usr/bin/env bash
# The search page's latency (benches/page_latency.mjs): the time from Enter to the first result
# on screen in Debian's chromium, over `kbtools serve` of SciFact (the shared evaluation data) or
# another bundle; each round asks five SciFact questions, and the median, min and max over every
# search are printed. Installs chromium and playwright-core as the browser test does
# (tests/web/setup.sh). Measure a release build on a quiet machine:
#   cargo build --release && bash benches/page_latency.sh [--binary PATH] [--bundle DIR] [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "page-latency: $*" >&2; }
. tests/web/setup.sh

web_setup
exec node benches/page_latency.mjs "$@"
