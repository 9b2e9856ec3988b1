#!/usr/bin/env bash
# Measures `kbtools index` on every hostile-bundle case at full size (issue 7, item 1): a 50 MB
# single-line page, 200,000 tiny files, directories nested 1,000 deep, symbolic link loops and
# links out, hostile names, YAML bombs and 10 MB frontmatter, damaged _index/_graph records.
#
#   bash tests/hostile/measure.sh            # builds the release binary if needed
#
# The bundles are written by the ignored test `generate_full_size_cases` of
# tests/slow/hostile_bundles.rs (the same generators as the CI tests) into a temporary folder, which
# is deleted at the end (about 1.2 GB while it runs). Each case is indexed into a fresh index
# folder by the release binary under `/usr/bin/time -f "%e %M"` (wall seconds, peak RSS in KiB of
# the kbtools process: GNU time forks it from its own small process, so the figure is kbtools'
# own). Prints a Markdown table. The checks of the CI tests at full size:
# `KBTOOLS_HOSTILE_FULL=1 KBTOOLS_HOSTILE_BIN=target/release/kbtools cargo test --test slow hostile_bundles:: -- --test-threads=1`.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ ! -x target/release/kbtools || -n "${KBTOOLS_REBUILD:-}" ]]; then
  CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1} cargo build --release --bin kbtools
fi
[[ -x /usr/bin/time ]] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
KBTOOLS_HOSTILE_OUT="$work/cases" CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1} \
  cargo test --test slow -- --ignored hostile_bundles::generate_full_size_cases --exact >/dev/null

echo "| case | files | wall s | peak RSS MiB | diagnostics | exit |"
echo "|---|---|---|---|---|---|"
for case_dir in "$work"/cases/*/; do
  case=$(basename "$case_dir")
  bundle="$case_dir/bundle"
  files=$(find "$bundle" -type f | wc -l)
  index="$work/index-$case"
  set +e
  /usr/bin/time -o "$work/time-$case" -f "%e %M" \
    target/release/kbtools index "$bundle" --index "$index" -q >"$work/out-$case" 2>"$work/err-$case"
  code=$?
  set -e
  read -r secs kib <"$work/time-$case"
  diags=$(grep -o '"diagnostics":[0-9]*' "$work/out-$case" | cut -d: -f2 || true)
  echo "| $case | $files | $secs | $((kib / 1024)) | ${diags:-?} | $code |"
  rm -rf "$index"
done
