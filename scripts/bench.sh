#!/usr/bin/env bash
# Benchmarks: API over 100,000 activity rows, rules-only backlog throughput,
# model throughput at concurrency 1/4/8 with a 200 ms scripted model, and
# new-mail latency through IDLE. Release build, real Dovecot, real binary.
# Usage: scripts/bench.sh [api] [rules] [model] [latency]   (default: all)
# The table is printed and written to target/bench.md (MAILPROC_BENCH_OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v dovecot >/dev/null || { echo "dovecot not found: apt-get install dovecot-imapd" >&2; exit 1; }
exec cargo test --release --locked --test bench -- "$@"
