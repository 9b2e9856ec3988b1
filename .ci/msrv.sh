#!/usr/bin/env bash
# The declared `rust-version` (Cargo.toml) holds: no locked dependency asks for a newer Rust,
# and the crate builds with that version: either it is the toolchain building this run (whose
# builds and tests are then the MSRV build), or it is installed beside it and checks every
# target. A newer toolchain with the declared one missing fails: install it
# (`rustup toolchain install VERSION --profile minimal`) or raise `rust-version`.
set -euo pipefail
cd "$(dirname "$0")/.."
msrv="$(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["package"]["rust-version"])')"
cargo metadata --format-version 1 --locked | python3 -c '
import json, sys
msrv = tuple(int(x) for x in sys.argv[1].split("."))
meta = json.load(sys.stdin)
used = {node["id"] for node in meta["resolve"]["nodes"]}
newer = sorted(
    (p["rust_version"], p["name"], p["version"])
    for p in meta["packages"]
    if p["id"] in used and p.get("rust_version")
    and tuple(int(x) for x in p["rust_version"].split(".")) > msrv + (0,) * (3 - len(msrv))
)
for rust, name, version in newer:
    print(f"msrv: {name} {version} (in Cargo.lock) asks for Rust {rust}, newer than rust-version {sys.argv[1]}")
sys.exit(1 if newer else 0)
' "$msrv"
running="$(rustc --version | awk '{print $2}')"
if [ "${running%.*}" = "$msrv" ] || [ "$running" = "$msrv" ]; then
    echo "msrv: rust-version $msrv is the toolchain of this run (rustc $running)"
elif rustup toolchain list 2>/dev/null | grep -q "^$msrv"; then
    cargo "+$msrv" check --all-targets --locked --target-dir target/msrv
    echo "msrv: every target checks with Rust $msrv"
else
    echo "msrv: rust-version is $msrv but this run has rustc $running and no $msrv toolchain;" \
        "install it (rustup toolchain install $msrv --profile minimal) or raise rust-version" >&2
    exit 1
fi
