# Sourced by the client-test scripts (tests/mcp/run.sh, tests/http/schemathesis.sh): a Python
# virtualenv under target/ from a pinned requirements file, rebuilt only when the requirements or
# the Python version change. Needs only python3; uses a `log` function of the caller.
#
# ensure_venv VENV REQUIREMENTS CHECK: makes VENV with a working pip — the venv module, else
# (Debian without python3-venv) that package installed with apt-get when root, else virtualenv
# from PyPI in the user's site — and installs REQUIREMENTS, unless VENV/bin/CHECK exists and
# the stamp matches. Environment: PYTHON (interpreter, default python3).

make_venv() {
    local venv="$1" python="${PYTHON:-python3}"
    rm -rf "$venv"
    if "$python" -m venv "$venv" >/dev/null 2>&1 && [ -x "$venv/bin/pip" ]; then
        return 0
    fi
    rm -rf "$venv"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        local minor
        minor="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
        log "python venv module unusable; installing python3-venv / python${minor}-venv with apt-get"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python${minor}-venv" >/dev/null 2>&1 || true
        if "$python" -m venv "$venv" >/dev/null 2>&1 && [ -x "$venv/bin/pip" ]; then
            return 0
        fi
        rm -rf "$venv"
    fi
    log "falling back to virtualenv (pip install --user virtualenv)"
    "$python" -m pip install --user --quiet --disable-pip-version-check virtualenv 2>/dev/null \
        || "$python" -m pip install --user --quiet --disable-pip-version-check --break-system-packages virtualenv
    "$python" -m virtualenv --quiet "$venv"
}

ensure_venv() {
    local venv="$1" requirements="$2" check="$3" python="${PYTHON:-python3}" want
    want="$( { "$python" -c 'import sys; print(sys.version)'; cat "$requirements"; } | sha256sum | cut -d' ' -f1)"
    if [ ! -x "$venv/bin/$check" ] || [ "$(cat "$venv/.installed" 2>/dev/null || true)" != "$want" ]; then
        log "creating $venv and installing $requirements"
        make_venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
        echo "$want" >"$venv/.installed"
    fi
}
