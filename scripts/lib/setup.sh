# shellcheck shell=bash
# What a fresh Debian or Ubuntu machine lacks, installed once, for
# scripts/test.sh and scripts/demo.sh.
#
#   source scripts/lib/setup.sh
#   setup_have CMD                 true when CMD is on PATH (or in /usr/sbin, /sbin)
#   setup_have_pkg PACKAGE         true when dpkg has PACKAGE installed
#   setup_want PACKAGE REASON      queue PACKAGE (once), with why it is needed
#   setup_want_build               queue what building mailproc needs
#   setup_install NAME             apt-get update (once) and install the queue,
#                                  saying what and why; NAME prefixes messages
#   cargo_locked ARGS...           cargo under flock (MAILPROC_CARGO_LOCK)
#
# Installs need root and apt-get; without them the message lists what to
# install. DEBIAN_FRONTEND=noninteractive, --no-install-recommends.

export PATH="$PATH:/usr/sbin:/sbin"

SETUP_NEED=()
SETUP_WHY=()

setup_have() { command -v "$1" >/dev/null 2>&1; }

setup_have_pkg() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]]
}

setup_want() {
    [[ " ${SETUP_NEED[*]} " == *" $1 "* ]] && return 0
    SETUP_NEED+=("$1")
    SETUP_WHY+=("$1 ($2)")
}

# The Rust toolchain itself is not packaged here (rustup); these are the C
# pieces its build of mailproc needs: a linker, the bundled SQLite, and the
# OpenSSL bindings found through pkg-config.
setup_want_build() {
    setup_have cc || setup_want gcc "links mailproc, builds the bundled SQLite"
    [[ -e /usr/include/stdio.h ]] || setup_want libc6-dev "C headers and libraries for the build"
    setup_have pkg-config || setup_want pkg-config "finds OpenSSL for the build"
    if ! { setup_have pkg-config && pkg-config --exists openssl; }; then
        setup_want libssl-dev "OpenSSL headers for the build"
    fi
}

setup_install() {
    local name=${1:-setup} w i
    ((${#SETUP_NEED[@]})) || return 0
    if ((EUID != 0)); then
        echo "$name: error: missing ${SETUP_NEED[*]}; run as root to install them (or install them yourself)" >&2
        return 1
    fi
    if ! setup_have apt-get; then
        echo "$name: error: missing ${SETUP_NEED[*]} and there is no apt-get to install them" >&2
        return 1
    fi
    echo "$name: installing with apt-get:" >&2
    for w in "${SETUP_WHY[@]}"; do echo "$name:   $w" >&2; done
    apt-get update -qq
    # (Read whole, not piped to `grep -q`: under pipefail, grep leaving
    # early could fail apt-cache with SIGPIPE and hide the package.)
    local policy pkg
    for pkg in chromium chromium-driver; do
        policy=$(apt-cache policy "$pkg" 2>/dev/null || true)
        if [[ " ${SETUP_NEED[*]} " == *" $pkg "* && "$policy" != *"Candidate: "[0-9]* ]]; then
            # Ubuntu ships Chromium only as a snap, which apt cannot install here.
            echo "$name: no $pkg package here: the tests that need it will fail and say so" >&2
            for i in "${!SETUP_NEED[@]}"; do [[ "${SETUP_NEED[$i]}" == "$pkg" ]] && unset 'SETUP_NEED[i]'; done
            SETUP_NEED=("${SETUP_NEED[@]}")
        fi
    done
    if ((${#SETUP_NEED[@]})); then
        # dovecot-imapd and prometheus start their own services where an
        # init system runs; the scripts use neither.
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${SETUP_NEED[@]}" >/dev/null
        echo "$name: installed ${SETUP_NEED[*]}" >&2
    fi
    SETUP_NEED=()
    SETUP_WHY=()
}

# cargo under `flock`, so that checkouts sharing one machine build in turn:
# MAILPROC_CARGO_LOCK names the lock file (default /tmp/cargo.lock; empty:
# no lock). Never call this while holding that lock already.
cargo_locked() {
    local lock=${MAILPROC_CARGO_LOCK-/tmp/cargo.lock}
    if [[ -n "$lock" ]] && setup_have flock; then
        # -o: the lock stays with flock itself, not with cargo and what it
        # starts (a test's Dovecot that outlives it must not hold the lock).
        flock -o "$lock" cargo "$@"
    else
        cargo "$@"
    fi
}
