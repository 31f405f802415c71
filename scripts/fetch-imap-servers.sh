#!/usr/bin/env bash
# Fetch Cyrus IMAP 3.6 and Courier-IMAP 5.0 from Debian's packages once,
# unpacked (not installed) into a private directory, and print it:
#   ${MAILPROC_CACHE:-$HOME/.cache/mailproc}/imap-servers
# which holds cyrus/root and courier/root, each a `dpkg -x` of its packages
# (root/usr/..., root/etc/...). tests/common/cyrus.rs and courier.rs run them
# from there on free loopback ports.
#
# Why unpacked: cyrus-imapd, courier-imap and dovecot-imapd all provide
# imap-server and conflict as packages, and installing them would start
# system services. Their shared libraries do not conflict: those are
# installed with apt-get by scripts/test.sh (SERVER_LIBS below, also printed
# by `fetch-imap-servers.sh --libs`).
#
# Idempotent: a complete earlier unpack of the same versions is reused.
# Needs apt-get (download only; works without root when the package lists
# are there) and dpkg-deb. Progress goes to stderr; stdout carries only the
# directory, so callers can write DIR=$(scripts/fetch-imap-servers.sh).
set -euo pipefail

CYRUS_PKGS=(cyrus-imapd cyrus-common sasl2-bin)
COURIER_PKGS=(courier-imap courier-base courier-authlib courier-authdaemon courier-authlib-userdb)
# Libraries the unpacked binaries load (ldd), beyond a Debian 12 base.
SERVER_LIBS=(libsasl2-modules libsasl2-modules-db libdb5.3 libical3 libicu72 libjansson4
    libpcre3 libpq5 libwrap0 libxapian30 libxml2 libcourier-unicode4 libgamin0
    libgdbm6 libgnutls30 libidn12 libltdl7 perl)

if [[ "${1:-}" == --libs ]]; then
    printf '%s\n' "${SERVER_LIBS[@]}"
    exit 0
fi

CACHE="${MAILPROC_CACHE:-$HOME/.cache/mailproc}/imap-servers"
say() { printf 'fetch-imap-servers: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

command -v apt-get >/dev/null || die "apt-get not found (Debian or Ubuntu needed)"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (apt-get install dpkg)"
mkdir -p "$CACHE"

# Several test binaries may ask at once: one fetch, the others wait.
exec 9>"$CACHE/.lock"
flock 9

# The candidate version of each package, e.g. "cyrus-imapd=3.6.1-4+deb12u5",
# from one apt-cache call; fails when one has none.
versions() {
    local out
    out=$(apt-cache policy "$@" 2>/dev/null | awk '
        /^[^ ]/ { sub(/:$/, "", $1); pkg = $1 }
        /^  Candidate:/ && $2 != "(none)" { print pkg "=" $2 }')
    [[ $(grep -c . <<<"$out") -eq $# ]] || return 1
    printf '%s\n' "$out"
}

unpack() { # NAME PACKAGES...
    local name=$1 want stamp tmp deb
    shift
    if ! want=$(versions "$@"); then
        say "no candidate for $* in the package lists; running apt-get update"
        apt-get update -qq >&2 || die "apt-get update failed (run as root)"
        want=$(versions "$@") || die "Debian has no package for one of: $*"
    fi
    stamp="$CACHE/$name/.complete"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$CACHE/$name/root" ]]; then
        return 0
    fi
    say "downloading $name: $(echo $want)"
    tmp=$(mktemp -d "$CACHE/.fetch-$name.XXXXXX")
    # shellcheck disable=SC2064
    trap "rm -rf '$tmp'" RETURN
    # apt-get download writes into the current directory.
    (cd "$tmp" && apt-get download -q $want >&2) || die "apt-get download $want failed"
    mkdir "$tmp/root"
    for deb in "$tmp"/*.deb; do
        dpkg-deb -x "$deb" "$tmp/root" || die "dpkg-deb -x $deb failed"
    done
    rm -rf "$CACHE/$name"
    mkdir -p "$CACHE/$name"
    mv "$tmp/root" "$CACHE/$name/root"
    printf '%s\n' "$want" >"$stamp"
    say "$name unpacked into $CACHE/$name/root"
}

unpack cyrus "${CYRUS_PKGS[@]}"
unpack courier "${COURIER_PKGS[@]}"
printf '%s\n' "$CACHE"
