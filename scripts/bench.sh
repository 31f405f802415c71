#!/usr/bin/env bash
# Benchmarks, each against its target and, for the rules backlog, against
# imapfilter on the same messages: the rules backlog side by side, model
# throughput, new-mail latency, HTTP under wrk, and footprint. Release build,
# real Dovecot, real binary, real SQLite.
# Usage: scripts/bench.sh [rules] [model] [latency] [http] [footprint] [api]
#        (default: all). MAILPROC_BENCH_N=500 shrinks the rules backlog.
# Writes docs/benchmarks.md (MAILPROC_BENCH_OUT to write elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."

# Tools, installed when missing (Debian/Ubuntu).
need=()
command -v dovecot >/dev/null || need+=(dovecot-imapd)
command -v imapfilter >/dev/null || need+=(imapfilter)
command -v wrk >/dev/null || need+=(wrk)
command -v npm >/dev/null || need+=(npm)
if ((${#need[@]})); then
    echo "bench: installing ${need[*]}" >&2
    if [[ $(id -u) -eq 0 ]]; then sudo=(); else sudo=(sudo); fi
    "${sudo[@]}" apt-get install -y "${need[@]}" >/dev/null ||
        { "${sudo[@]}" apt-get update >/dev/null && "${sudo[@]}" apt-get install -y "${need[@]}" >/dev/null; }
fi

MAILPROC_CORPUS=$(scripts/fetch-corpus.sh)
export MAILPROC_CORPUS
export MAILPROC_BENCH_OUT=${MAILPROC_BENCH_OUT:-$PWD/docs/benchmarks.md}
exec cargo test --release --locked --test bench -- "$@"
