#!/usr/bin/env bash
# CI: the reports `kbtools check` and `kbtools eval` wrote during `cargo test` (tests/it/check.rs
# and tests/it/eval_ci.rs write them to target/check-reports/), validated against their schemas:
# JUnit XML against junit-10.xsd, SARIF against the SARIF 2.1.0 schema (both fetched, pinned and
# checksummed, by validate-report.sh). Prints "N passed, M failed" for .ci/run's totals.
set -uo pipefail
cd "$(dirname "$0")/../.."
reports=target/check-reports
passed=0
failed=0
for report in junit:broken.junit.xml sarif:broken.sarif junit:eval.junit.xml; do
    kind="${report%%:*}"
    file="$reports/${report#*:}"
    if [ ! -f "$file" ]; then
        echo "$file is missing: the cargo test run writes it"
        failed=$((failed + 1))
    elif tests/check/validate-report.sh "$kind" "$file"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
