#!/usr/bin/env bash
# Measures the learned classifier (examples/learning.rs) on the SpamAssassin
# corpus and on a generated multi-folder mailbox: learned only at several
# min_confidence values, and model only / learned only / hybrid on the first
# MODEL_LIMIT held-out messages of each set with the real local model.
# The numbers in docs/quality.md ("The learned classifier") come from this.
#
#   scripts/learning-quality.sh [MODEL_LIMIT]     (default 100; 0: no model)
#
# Builds the example (debug profile: the timing column is an upper bound),
# fetches the corpus and serves the local model (scripts/local-model.sh,
# cached). About 5 minutes on 2 cores for 100 + 100 model calls.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIMIT=${1:-100}
say() { printf 'learning-quality: %s\n' "$*" >&2; }
die() { printf 'learning-quality: error: %s\n' "$*" >&2; exit 1; }

DATA=$("$ROOT/scripts/fetch-corpus.sh")
say "building examples/learning.rs"
(cd "$ROOT" && cargo build --locked --quiet --example learning)
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/examples/learning"
[[ -x "$BIN" ]] || die "no $BIN after the build"
if [[ "$LIMIT" == 0 ]]; then
    exec "$BIN" "$DATA"
fi

DIR=$(mktemp -d /tmp/mailproc-learning.XXXXXX)
LLM_PID=""
cleanup() {
    if [[ -n "$LLM_PID" ]]; then
        kill -TERM "$LLM_PID" 2>/dev/null || true
        wait "$LLM_PID" 2>/dev/null || true
    fi
    rm -rf "$DIR"
}
trap cleanup EXIT

: >"$DIR/llm.out"
"$ROOT/scripts/local-model.sh" serve </dev/null >"$DIR/llm.out" &
LLM_PID=$!
while (($(wc -l <"$DIR/llm.out") < 2)); do
    kill -0 "$LLM_PID" 2>/dev/null || die "scripts/local-model.sh could not serve the model"
    sleep 0.2
done
# The demo's provider settings (scripts/quality.sh); the example sets the
# allowed folders per set.
cat >"$DIR/config.yaml" <<EOC
classifier:
  concurrency: 1
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
    provider: llm
EOC
"$BIN" "$DATA" "$DIR/config.yaml" "$LIMIT"
