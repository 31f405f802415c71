#!/usr/bin/env bash
# Benchmarks, each against its target and, for the rules backlog, against
# imapfilter on the same messages: the rules backlog side by side, model
# throughput, new-mail latency, HTTP under wrk, footprint, and hostile
# clients (each attack of tests/common/attacks.rs alone and all at once,
# and 100 wrong logins). Release build, real Dovecot, real binary, real
# SQLite.
# Usage: scripts/bench.sh [rules] [model] [threads] [latency] [http] [footprint] [api] [hostile]
#        (default: all). MAILPROC_BENCH_N=500 shrinks the rules backlog.
# Writes docs/benchmarks.md (MAILPROC_BENCH_OUT to write elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."

# The parts asked for (none: all); flags go to the bench binary.
parts=()
for a in "$@"; do [[ $a == -* ]] || parts+=("$a"); done
wants() { ((${#parts[@]} == 0)) || [[ " ${parts[*]} " == *" $1 "* ]]; }

# Tools the parts asked for need, installed when missing (Debian/Ubuntu).
# `hostile` needs none: it runs only mailproc and its own clients.
need=()
if wants rules || wants model || wants threads || wants latency || wants http || wants footprint; then
    command -v dovecot >/dev/null || need+=(dovecot-imapd)
fi
if wants rules; then
    command -v imapfilter >/dev/null || need+=(imapfilter)
    command -v npm >/dev/null || need+=(npm)
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

if wants rules; then
    MAILPROC_CORPUS=$(scripts/fetch-corpus.sh)
    export MAILPROC_CORPUS
fi
export MAILPROC_BENCH_OUT=${MAILPROC_BENCH_OUT:-$PWD/docs/benchmarks.md}
exec cargo test --release --locked --test bench -- "$@"
