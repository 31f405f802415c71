#!/usr/bin/env bash
# Measures spam detection on a held-out, balanced split of the SpamAssassin
# corpus (500 messages: 250 spam, 250 ham, none of them in the demo or the
# tests): the demo's rules alone, the local model alone, and rules then model;
# and the model's messages per second and latency at concurrency 1 and 2.
# The numbers in docs/quality.md come from this script.
#
#   scripts/quality.sh [LIMIT [LIMIT_AT_2]]
#                                  LIMIT messages at concurrency 1 (default
#                                  500) and LIMIT_AT_2 at 2 (default 200:
#                                  enough to measure throughput)
#
# Builds examples/quality.rs (cargo build --release) and the local model
# (scripts/local-model.sh, cached), fetches the corpus (scripts/fetch-corpus.sh)
# and runs the model once per concurrency, with as many server slots (-np).
# On 2 cores: about 17 min at concurrency 1 plus 3 at 2 for 100 (after the builds).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIMIT=${1:-500}
LIMIT_AT_2=${2:-200}
say() { printf 'quality: %s\n' "$*" >&2; }
die() { printf 'quality: error: %s\n' "$*" >&2; exit 1; }

DATA=$("$ROOT/scripts/fetch-corpus.sh")
say "building examples/quality.rs"
(cd "$ROOT" && cargo build --release --locked --quiet --example quality)
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/quality"
[[ -x "$BIN" ]] || die "no $BIN after the build"

DIR=$(mktemp -d /tmp/mailproc-quality.XXXXXX)
LLM_PID=""
cleanup() {
    if [[ -n "$LLM_PID" ]]; then
        kill -TERM "$LLM_PID" 2>/dev/null || true
        wait "$LLM_PID" 2>/dev/null || true
    fi
    rm -rf "$DIR"
}
trap cleanup EXIT

# The demo's rules, word for word, so "rules alone" is what the demo runs.
RULES=$(sed -n '/^    rules:$/,/^EOF$/p' "$ROOT/scripts/demo.sh" | sed '$d')
[[ -n "$RULES" ]] || die "could not find the rules in scripts/demo.sh"

for c in 1 2; do
    : >"$DIR/llm.out"   # there before the loop below reads it
    LOCAL_MODEL_PARALLEL=$c "$ROOT/scripts/local-model.sh" serve </dev/null >"$DIR/llm.out" &
    LLM_PID=$!
    while (($(wc -l <"$DIR/llm.out") < 2)); do
        kill -0 "$LLM_PID" 2>/dev/null || die "scripts/local-model.sh could not serve the model"
        sleep 0.2
    done
    # The demo's account and provider settings, as scripts/demo.sh writes them.
    cat >"$DIR/config.yaml" <<EOF
classifier:
  concurrency: $c
  providers:
    - name: llm
      kind: openai
      url: "$(sed -n 1p "$DIR/llm.out")"
      model: "$(sed -n 2p "$DIR/llm.out")"
      timeout: 120s
      max_body_chars: 2000
      max_tokens: 400
accounts:
  - name: demo
    imap: { host: 127.0.0.1, username: demo, password: demo }
    folders: { watch: [INBOX], allowed: [Lists, Bulk, Junk, Receipts], create: true }
    provider: llm
$RULES
EOF
    n=$LIMIT
    ((c == 1)) || n=$LIMIT_AT_2
    say "concurrency $c, $n messages"
    "$BIN" "$DIR/config.yaml" "$DATA" "$c" "$n"
    echo
    kill -TERM "$LLM_PID"
    wait "$LLM_PID" 2>/dev/null || true
    LLM_PID=""
done
