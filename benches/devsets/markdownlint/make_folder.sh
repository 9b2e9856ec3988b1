#!/usr/bin/env bash
# Recreate the plain Markdown folder of the markdownlint dev set from the npm tarball markdownlint@0.36.1.
#   make_folder.sh DEST [TARBALL]
# DEST must not exist or be empty. Without TARBALL the script runs `npm pack markdownlint@0.36.1`
# (network). The tarball's SHA-256 is checked; the script stops on any mismatch.
# Layout: every package/<path>.md -> DEST/<path>.md (README.md, CHANGELOG.md, CONTRIBUTING.md,
# doc/md001.md ... doc/md058.md, doc/Rules.md, doc/CustomRules.md, helpers/README.md, ...).
# node_modules is skipped. Files are copied byte-for-byte; nothing inside a page is changed.
set -euo pipefail
VERSION=0.36.1
SHA256=4a1976dacd933fcf2edd0cb930bae5134119191642e8e993da1f64d21d08162d
EXPECTED=60
DEST=${1:?usage: make_folder.sh DEST [TARBALL]}
TARBALL=${2:-}
if [ -e "$DEST" ] && [ -n "$(ls -A "$DEST")" ]; then echo "make_folder.sh: $DEST exists and is not empty" >&2; exit 1; fi
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
if [ -z "$TARBALL" ]; then
  (cd "$WORK" && npm pack "markdownlint@$VERSION" >/dev/null 2>&1) || { echo "make_folder.sh: npm pack markdownlint@$VERSION failed" >&2; exit 1; }
  TARBALL="$WORK/markdownlint-$VERSION.tgz"
fi
GOT=$(sha256sum "$TARBALL" | cut -d' ' -f1)
if [ "$GOT" != "$SHA256" ]; then
  echo "make_folder.sh: SHA-256 mismatch for $TARBALL: got $GOT, want $SHA256" >&2; exit 1
fi
mkdir -p "$WORK/x" && tar xzf "$TARBALL" -C "$WORK/x"
mkdir -p "$DEST"
(cd "$WORK/x/package" && find . -path '*/node_modules' -prune -o -name '*.md' -type f -print | LC_ALL=C sort) | while read -r f; do
  f=${f#./}
  mkdir -p "$DEST/$(dirname "$f")"
  cp "$WORK/x/package/$f" "$DEST/$f"
  touch -d "2024-12-11 00:00:00 UTC" "$DEST/$f"
done
n=$(find "$DEST" -name '*.md' -type f | wc -l)
[ "$n" -eq "$EXPECTED" ] || { echo "make_folder.sh: expected $EXPECTED .md files, got $n" >&2; exit 1; }
echo "make_folder.sh: $n files in $DEST"
