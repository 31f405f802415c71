#!/usr/bin/env bash
# Benchmarks, each against its target and, for the rules backlog, against
# imapfilter on the same messages: the rules backlog side by side, model
# throughput, new-mail latency, HTTP under wrk, footprint, and hostile
# clients (each attack of tests/common/attacks.rs alone and all at once,
# and 100 wrong logins). Release build, real Dovecot, real binary, real
# SQLite. `scale` (asked for by name only, about 15 minutes): 1,000
# accounts on one Dovecot (start, idle, a Dovecot restart, new mail by
# LMTP at 10 a second for 5 minutes), and the rules backlog at 5,000,
# 20,000 and 100,000 messages side by side with imapfilter.
# Usage: scripts/bench.sh [rules] [model] [threads] [latency] [http] [footprint] [api] [hostile] [scale]
#        (default: all but scale). MAILPROC_BENCH_N=500 shrinks the rules
#        backlog; for scale, MAILPROC_BENCH_ACCOUNTS (1000, 0 skips),
#        MAILPROC_BENCH_IDLE_S (60), MAILPROC_BENCH_MAIL_S (300),
#        MAILPROC_BENCH_RATE (10) and MAILPROC_BENCH_SIZES
#        (5000,20000,100000; empty skips) shrink it. MAILPROC_BENCH_FORMS
#        (e.g. 2) limits the imapfilter forms of `rules` and scale's first size,
#        MAILPROC_BENCH_LOG=FILE keeps mailproc's debug log (FILE.<size>).
# Writes docs/benchmarks.md (MAILPROC_BENCH_OUT to write elsewhere); a part
# run alone rewrites its own section (hostile, scale) or the main table,
# and keeps the rest.
set -euo pipefail
cd "$(dirname "$0")/.."

# The parts asked for (none: all); flags go to the bench binary.
parts=()
for a in "$@"; do [[ $a == -* ]] || parts+=("$a"); done
wants() { ((${#parts[@]} == 0)) || [[ " ${parts[*]} " == *" $1 "* ]]; }
named() { [[ " ${parts[*]} " == *" $1 "* ]]; }

# Tools the parts asked for need, installed when missing (Debian/Ubuntu).
# `hostile` needs none: it runs only mailproc and its own clients.
need=()
if wants rules || wants model || wants threads || wants latency || wants http || wants footprint || named scale; then
    command -v dovecot >/dev/null || need+=(dovecot-imapd)
fi
if wants rules || named scale; then
    command -v imapfilter >/dev/null || need+=(imapfilter)
    command -v npm >/dev/null || need+=(npm)
fi
if named scale; then
    # Mail for the 1,000 accounts arrives by LMTP, as from an MTA.
    [[ -x /usr/lib/dovecot/lmtp ]] || need+=(dovecot-lmtpd)
fi
if wants http; then
    command -v wrk >/dev/null || need+=(wrk)
fi
if ((${#need[@]})); then
    echo "bench: installing ${need[*]}" >&2
    if [[ $(id -u) -eq 0 ]]; then sudo=(); else sudo=(sudo); fi
    "${sudo[@]}" apt-get install -y "${need[@]}" >/dev/null ||
        { "${sudo[@]}" apt-get update >/dev/null && "${sudo[@]}" apt-get install -y "${need[@]}" >/dev/null; }
fi

if wants rules || named scale; then
    MAILPROC_CORPUS=$(scripts/fetch-corpus.sh)
    export MAILPROC_CORPUS
fi
export MAILPROC_BENCH_OUT=${MAILPROC_BENCH_OUT:-$PWD/docs/benchmarks.md}
# Built under the shared cargo lock (MAILPROC_CARGO_LOCK, see
# scripts/lib/setup.sh), run without it: a run of many minutes must not
# keep other checkouts on the machine from building.
# shellcheck source=lib/setup.sh
source scripts/lib/setup.sh
bin=$(cargo_locked bench --locked --bench bench --no-run --message-format=json |
    grep '"name":"bench"' | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1) || true
[[ -n "$bin" && -x "$bin" ]] || { echo "bench: building the benchmarks failed" >&2; exit 1; }
exec "$bin" "$@"
