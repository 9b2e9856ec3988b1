#!/usr/bin/env bash
# Builds the packages of kbtools for this machine (docs/packaging.md): the release binary once,
# through maturin (in target/packaging/cargo, apart from the test builds' target/), the wheel that
# holds it, and the npm tarballs (npm/pack.mjs): the main package and this platform's. They all
# go to target/packaging/dist. Needs python3, node and npm, and cargo.
# Environment: KBTOOLS_PACKAGING_NICE (niceness of the build, default 0: .ci/run builds at 19
# beside the tests), PYTHON (interpreter for the venv, default python3).
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { echo "packaging-build: $*" >&2; }
VENV=target/packaging-venv
DIST=target/packaging/dist
TARGET_DIR=target/packaging/cargo

. tests/lib/venv.sh
ensure_venv "$VENV" tests/packaging/requirements.txt maturin

rm -rf "$DIST"
start=$SECONDS
# --locked: the tested Cargo.lock; maturin's audit picks the lowest manylinux tag the binary's
# glibc symbols allow, and fails if it links a library outside the manylinux set.
nice -n "${KBTOOLS_PACKAGING_NICE:-0}" "$VENV/bin/maturin" build --release --locked \
    --out "$DIST" --target-dir "$TARGET_DIR"
log "release build and wheel: $((SECONDS - start)) s"
# The npm package gets the very binary of the wheel, as in .github/workflows/release.yml.
binary=target/packaging/bin/kbtools
python3 - "$DIST" "$binary" <<'PY'
import glob, os, shutil, sys, zipfile
dist, binary = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(os.path.join(dist, "kbtools-*.whl"))
with zipfile.ZipFile(wheel) as z:
    (member,) = [n for n in z.namelist() if n.endswith(".data/scripts/kbtools")]
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    with z.open(member) as src, open(binary, "wb") as dst:
        shutil.copyfileobj(src, dst)
os.chmod(binary, 0o755)
PY
# This machine's platform package (npm/pack.mjs refuses a platform it has no package for).
node npm/pack.mjs --platform host --binary "$binary" --main --out "$DIST"
ls -l "$DIST" >&2
