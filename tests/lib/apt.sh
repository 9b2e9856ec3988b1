# Installing Debian packages for a test, sourced by its install script. `apt_install WHO PKG=VER…`
# installs each package at the version it was tested with first, else at the one the Debian
# mirror has now (a security update replaces the old package there), saying so; it needs root
# or sudo, and says so when it has neither. WHO names the caller in its messages.

apt_install() {
    local who="$1"
    shift
    local as_root=()
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null; then
            as_root=(sudo -n)
        else
            echo "$who: neither root nor sudo is available to install: apt-get install ${*%%=*}" >&2
            return 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${as_root[@]}" apt-get update -qq >/dev/null || true
    local pinned package
    for pinned in "$@"; do
        package="${pinned%%=*}"
        if ! "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$pinned" >/dev/null; then
            echo "$who: $pinned is no longer on the mirror; installing the current $package" >&2
            "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$package" >/dev/null
        fi
    done
}
