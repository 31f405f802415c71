#!/usr/bin/env bash
# Measures classification quality on held-out splits of the SpamAssassin
# corpus (examples/quality/, the one driver; tests/common/corpus.rs, the
# one reader of the corpus): Debian's SpamAssassin (rules alone, and rules
# with Bayes trained by sa-learn on the same training split) beside every
# mailproc tier (the demo's rules, the learned classifier, each model as
# the demo asks its own, and the hybrid as the demo ships it, its
# thresholds chosen on validation splits carved from the training split),
# the model variants, and the foldering split. The numbers in
# docs/quality.md come from this script.
#
#   scripts/quality.sh [SUBSET [FOLDER_LIMIT]]
#   scripts/quality.sh learned     the learned classifier alone, and after
#                                  the demo's rules: no model, no
#                                  SpamAssassin (a few seconds)
#   scripts/quality.sh linear      a linear model (logistic regression over
#                                  the classifier's features and character
#                                  n-grams) alone and averaged with the
#                                  classifier, after the demo's rules;
#                                  measured, not shipped (about 20 s)
#   scripts/quality.sh shape       the message's shape as a second judge
#                                  beside the classifier, chosen on three
#                                  validation splits against SpamAssassin
#                                  with Bayes on each; measured, not
#                                  shipped (about 3 minutes)
#       SUBSET         held-out messages each model variant that is not
#                      shipped is asked (default 20; the shipped one is
#                      asked all 500)
#       FOLDER_LIMIT   held-out messages of the folder split (default 100)
#
# Installs spamassassin with apt-get when missing (as root), builds
# examples/quality (cargo build --release, under flock like scripts/demo.sh),
# fetches the corpus and the models (scripts/fetch-corpus.sh,
# scripts/local-model.sh, cached) and serves SmolLM2-135M and Gemma 3 270M
# (one slot, two threads each, one of them busy at a time). SpamAssassin
# runs with local tests only: no network, no DNS. Everything runs at
# nice 19 (QUALITY_NICE): the machine is shared.
# About 26 minutes (1,547 s measured) on an idle 2-core machine after the
# one-time builds with no answer cached; about 30 on a day the models
# answer 20 % slower (docs/quality.md, "Where the time goes").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# `learned`, `linear` or `shape`: that measurement alone (no model; only
# `shape` runs SpamAssassin).
ONLY=
if [[ "${1:-}" =~ ^(learned|linear|shape)$ ]]; then ONLY=$1; shift; fi
SUBSET=${1:-20}
FOLDER_LIMIT=${2:-100}
NICE=${QUALITY_NICE:-19}
say() { printf 'quality: %s\n' "$*" >&2; }
die() { printf 'quality: error: %s\n' "$*" >&2; exit 1; }

# shellcheck source=lib/setup.sh
source "$ROOT/scripts/lib/setup.sh"
build() {
    if [[ -n "${QUALITY_BIN:-}" ]]; then
        BIN=$QUALITY_BIN
        [[ -x "$BIN" ]] || die "QUALITY_BIN=$BIN is not an executable"
    else
        say "building examples/quality"
        (cd "$ROOT" && cargo_locked build --release --locked --quiet --example quality)
        BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/quality"
        [[ -x "$BIN" ]] || die "no $BIN after the build"
    fi
}
# The demo's rules, word for word (scripts/demo.sh), so every tier is what
# the demo runs.
RULES=$(sed -n '/^    rules:$/,/^EOF$/p' "$ROOT/scripts/demo.sh" | sed '$d')
[[ -n "$RULES" ]] || die "could not find the rules in scripts/demo.sh"
LEARNED=$(sed -n "/# quality.sh: the account's learned settings\$/,/^EOF\$/p" "$ROOT/scripts/demo.sh" | sed '1d;$d')
[[ -n "$LEARNED" ]] || die "could not find the account's learned settings in scripts/demo.sh"
# The demo's account with its rules and learned settings, for the modes
# without models.
rules_config() {
    cat <<EOF
accounts:
  - name: demo
    imap: { host: 127.0.0.1, username: demo, password: demo }
    folders: { watch: [INBOX], allowed: [Lists, Bulk, Junk, Receipts], create: true }
$LEARNED
$RULES
EOF
}
if [[ "$ONLY" == learned || "$ONLY" == linear ]]; then
    DATA=$("$ROOT/scripts/fetch-corpus.sh")
    build
    CONFIG=$(mktemp /tmp/mailproc-quality-config.XXXXXX)
    trap 'rm -f "$CONFIG"' EXIT
    rules_config >"$CONFIG"
    nice -n "$NICE" "$BIN" "$ONLY" "$DATA" "$CONFIG"
    exit
fi
setup_have spamassassin || setup_want spamassassin "the anchor: SpamAssassin on the same mail"
setup_have sa-learn || setup_want spamassassin "the anchor: SpamAssassin on the same mail"
setup_install quality || die "install spamassassin (apt-get install spamassassin)"
perl -MMail::SpamAssassin -e 1 2>/dev/null \
    || die "perl cannot load Mail::SpamAssassin (apt-get install spamassassin)"

DATA=$("$ROOT/scripts/fetch-corpus.sh")
build
if [[ "$ONLY" != shape ]]; then
    for m in smollm2 gemma3; do
        LOCAL_MODEL=$m "$ROOT/scripts/local-model.sh" build >/dev/null
    done
fi

DIR=$(mktemp -d /tmp/mailproc-quality.XXXXXX)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$DIR"
}
trap cleanup EXIT
# PID was waited for: no longer one of ours to stop (its number may now be
# another process's).
reaped() {
    local keep=() p
    for p in "${PIDS[@]}"; do
        [[ "$p" == "$1" ]] || keep+=("$p")
    done
    PIDS=("${keep[@]}")
}
started=$SECONDS

# One process scans every message (the rules are compiled once), as spamd
# would; the time per message is the check alone.
cat >"$DIR/sa-check.pl" <<'EOF'
use strict;
use warnings;
use Mail::SpamAssassin;
use Time::HiRes qw(time);
my ($bayes) = @ARGV;
my $sa = Mail::SpamAssassin->new({
    local_tests_only => 1,
    dont_copy_prefs => 1,
    userprefs_filename => '/dev/null',
    post_config_text => ($bayes ? "use_bayes 1\nbayes_path $bayes/bayes\n" : "use_bayes 0\n")
        . "bayes_auto_learn 0\nbayes_auto_expire 0\nuse_auto_whitelist 0\n",
});
$sa->compile_now(0);
while (my $path = <STDIN>) {
    chomp $path;
    open my $fh, '<', $path or die "$path: $!";
    my $raw = do { local $/; <$fh> };
    close $fh;
    my $t = time;
    my $msg = $sa->parse($raw);
    my $st = $sa->check($msg);
    printf "%s\t%.1f\t%d\t%.1f\n", $path, $st->get_score, $st->is_spam ? 1 : 0, (time - $t) * 1000;
    $st->finish;
    $msg->finish;
}
EOF
# sa_learn DB SPAM HAM: Bayes trained by sa-learn on the files listed,
# into DB (made when missing).
sa_learn() {
    mkdir -p "$1"
    nice -n "$NICE" sa-learn -L --dbpath "$1" --spam -f "$2" >&2
    nice -n "$NICE" sa-learn -L --dbpath "$1" --ham -f "$3" >&2
}
# sa_extend DB NAME...: DB is bayes-base's training (what the three
# validation splits' trainings share, learned once) and the spam and ham
# of the splits NAMEd (NAME-spam.txt, NAME-ham.txt), then expired. Bayes's
# counts are sums, but its expiry depends a little on the order messages
# were learned in: trained this way rather than in one go, the validation
# splits scored 0 to 3 messages of 500 differently, with the same ham in
# Junk (docs/quality.md). The held-out split's is trained in one go.
sa_extend() {
    local db=$1 n
    shift
    cp -a "$DIR/bayes-base" "$db"
    for n in "$@"; do cat "$DIR/$n-spam.txt"; done >"$db.spam.txt"
    for n in "$@"; do cat "$DIR/$n-ham.txt"; done >"$db.ham.txt"
    sa_learn "$db" "$db.spam.txt" "$db.ham.txt"
    sa_expire "$db"
}
# The expiry SpamAssassin would run at its first check (a training leaves
# ~306,000 tokens, past bayes_expiry_max_db_size), run here once and before
# any check, so the checks (auto-expire off) read one database that no
# check changes: the same scores, message for message, as one check that
# expires on its first message (compared by hand).
sa_expire() {
    nice -n "$NICE" sa-learn --dbpath "$1" --force-expire >&2
}
# sa_bayes DB LIST OUT: the check with Bayes of the files listed, one Perl
# process per half of them, one per core; nothing is learned or expired
# while checking.
sa_bayes() {
    local h p status halves=()
    split -n l/2 -d "$2" "$2.half."
    for h in "$2".half.??; do
        nice -n "$NICE" perl "$DIR/sa-check.pl" "$1" <"$h" >"$h.tsv" &
        halves+=($!)
        PIDS+=($!)
    done
    for p in "${halves[@]}"; do
        status=0
        wait "$p" || status=$?
        reaped "$p"
        ((status == 0)) || die "SpamAssassin's check with Bayes failed"
    done
    cat "$2".half.??.tsv >"$3"
    [[ $(wc -l <"$3") == $(wc -l <"$2") ]] \
        || die "SpamAssassin's check with Bayes answered $(wc -l <"$3") of $(wc -l <"$2") messages"
}

# ---- SpamAssassin ------------------------------------------------------------
# Rules alone on the held-out split; with Bayes on it (trained on the
# training split) and on each of three validation splits (each trained on
# the training split without it), which the demo's junk cut-offs and the
# shape judge are chosen against. `shape` needs only the latter.
"$BIN" lists "$DATA" "$DIR"
for f in 0 1 2; do
    "$BIN" lists "$DATA" "$DIR" "$f"
    grep -xFf "$DIR/val$f.txt" "$DIR/train-spam.txt" >"$DIR/val$f-spam.txt"
    grep -xFf "$DIR/val$f.txt" "$DIR/train-ham.txt" >"$DIR/val$f-ham.txt"
done
cat "$DIR"/val[012].txt >"$DIR/folds.txt"
grep -vxFf "$DIR/folds.txt" "$DIR/train-spam.txt" >"$DIR/base-spam.txt"
grep -vxFf "$DIR/folds.txt" "$DIR/train-ham.txt" >"$DIR/base-ham.txt"
# bg NAME CMD...: CMD in the background (its input /dev/null), its pid in
# BG[NAME]; wait_bg NAME: waits for it, dies naming it when it failed.
declare -A BG
bg() {
    local name=$1
    shift
    "$@" &
    BG[$name]=$!
    PIDS+=($!)
}
wait_bg() {
    local status=0
    wait "${BG[$1]}" || status=$?
    reaped "${BG[$1]}"
    ((status == 0)) || die "SpamAssassin's $1 failed"
}
# One Perl process at a time per core: the rules-alone check beside the
# trainings' shared part, then the held-out split's training (in one go)
# beside the validation splits' own parts; the check's time per message
# is its own either way.
t=$SECONDS
if [[ "$ONLY" != shape ]]; then
    say "SpamAssassin $(spamassassin -V | head -n 1 | awk '{print $3}'), rules alone: $(wc -l <"$DIR/test.txt") messages, beside sa-learn"
    # Not through bg: a command put in the background reads /dev/null
    # unless its own redirection says otherwise.
    nice -n "$NICE" perl "$DIR/sa-check.pl" <"$DIR/test.txt" >"$DIR/rules.tsv" &
    BG["rules-alone check"]=$!
    PIDS+=($!)
fi
say "sa-learn for the validation splits: $(wc -l <"$DIR/base-spam.txt") spam and $(wc -l <"$DIR/base-ham.txt") ham (what their trainings share), then each one's own"
sa_learn "$DIR/bayes-base" "$DIR/base-spam.txt" "$DIR/base-ham.txt"
if [[ "$ONLY" != shape ]]; then
    wait_bg "rules-alone check"
    [[ $(wc -l <"$DIR/rules.tsv") == $(wc -l <"$DIR/test.txt") ]] \
        || die "SpamAssassin's rules-alone check answered $(wc -l <"$DIR/rules.tsv") of $(wc -l <"$DIR/test.txt") messages"
    say "  rules alone beside it: $((SECONDS - t)) s"
    say "sa-learn for the held-out split: $(wc -l <"$DIR/train-spam.txt") spam and $(wc -l <"$DIR/train-ham.txt") ham"
    held_out() {
        sa_learn "$DIR/bayes" "$DIR/train-spam.txt" "$DIR/train-ham.txt"
        sa_expire "$DIR/bayes"
    }
    bg "training for the held-out split" held_out
    sa_extend "$DIR/bayes-val0" val1 val2
    sa_extend "$DIR/bayes-val1" val0 val2
    sa_extend "$DIR/bayes-val2" val0 val1
    wait_bg "training for the held-out split"
else
    bg "training for validation split 0" sa_extend "$DIR/bayes-val0" val1 val2
    sa_extend "$DIR/bayes-val1" val0 val2
    wait_bg "training for validation split 0"
    sa_extend "$DIR/bayes-val2" val0 val1
fi
say "  trained in $((SECONDS - t)) s"
t=$SECONDS
if [[ "$ONLY" != shape ]]; then
    sa_bayes "$DIR/bayes" "$DIR/test.txt" "$DIR/bayes.tsv"
fi
for f in 0 1 2; do
    sa_bayes "$DIR/bayes-val$f" "$DIR/val$f.txt" "$DIR/val$f.tsv"
done
say "SpamAssassin with Bayes: $((SECONDS - t)) s"

# ---- the message's shape (`shape`) -------------------------------------------
if [[ "$ONLY" == shape ]]; then
    rules_config >"$DIR/config.yaml"
    nice -n "$NICE" "$BIN" shape "$DATA" "$DIR/config.yaml" "$DIR"
    say "done in $((SECONDS - started)) s"
    exit
fi

# ---- the models --------------------------------------------------------------
serve() { # NAME MODEL: serves it, appends its provider to the config
    : >"$DIR/$1.out"
    LOCAL_MODEL=$2 LOCAL_MODEL_NICE=$NICE LOCAL_MODEL_LOG="$DIR/$1.log" \
        "$ROOT/scripts/local-model.sh" serve </dev/null >"$DIR/$1.out" &
    PIDS+=($!)
    while (($(wc -l <"$DIR/$1.out") < 2)); do
        kill -0 "${PIDS[-1]}" 2>/dev/null || die "scripts/local-model.sh could not serve $2"
        sleep 0.2
    done
    cat >>"$DIR/providers.yaml" <<EOF
    - name: $1
      kind: openai
      url: "$(sed -n 1p "$DIR/$1.out")"
      model: "$(sed -n 2p "$DIR/$1.out")"
      timeout: 120s
      max_body_chars: 2000
      max_tokens: 400
EOF
}
: >"$DIR/providers.yaml"
serve smol smollm2
serve gemma gemma3

# The demo's account and provider settings, as scripts/demo.sh writes them
# (its provider is "llm": the local model it serves), and its rules (above).
ACCOUNT=$(sed -n "/# quality.sh: the account's model settings\$/,/^EOF\$/p" "$ROOT/scripts/demo.sh" | sed '1d;$d')
[[ -n "$ACCOUNT" ]] || die "could not find the account's model settings in scripts/demo.sh"
LLM=$(sed -n '/# quality.sh: the local provider$/,/^EOF$/p' "$ROOT/scripts/demo.sh" | sed '1d;$d')
[[ -n "$LLM" ]] || die "could not find the local provider's settings in scripts/demo.sh"
DEMO_MODEL=$(sed -n 's/^DEMO_LOCAL_MODEL=\([a-z0-9]*\).*/\1/p' "$ROOT/scripts/demo.sh")
case "$DEMO_MODEL" in
    smollm2) DEMO_PROVIDER=smol ;;
    gemma3) DEMO_PROVIDER=gemma ;;
    *) die "scripts/demo.sh names no DEMO_LOCAL_MODEL" ;;
esac
cat >"$DIR/config.yaml" <<EOF
classifier:
  concurrency: 1
  providers:
$(cat "$DIR/providers.yaml")
    - name: llm
      kind: openai
      url: "$(sed -n 1p "$DIR/$DEMO_PROVIDER.out")"
      model: "$(sed -n 2p "$DIR/$DEMO_PROVIDER.out")"
      timeout: 120s
$LLM
accounts:
  - name: demo
    imap: { host: 127.0.0.1, username: demo, password: demo }
    folders: { watch: [INBOX], allowed: [Lists, Bulk, Junk, Receipts], create: true }
$LEARNED
$ACCOUNT
$RULES
EOF
say "models: smol $(sed -n 2p "$DIR/smol.out"), gemma $(sed -n 2p "$DIR/gemma.out"); the demo's: $DEMO_MODEL"
# Model answers are kept between runs, keyed by the model, how it is asked,
# the examples shown and the message (QUALITY_CACHE; empty: none kept).
CACHE_FILE=${QUALITY_CACHE-${MAILPROC_CACHE:-$HOME/.cache/mailproc}/quality-answers.tsv}
QUALITY_CACHE=$CACHE_FILE nice -n "$NICE" "$BIN" measure "$DIR/config.yaml" "$DATA" "$DIR" "$SUBSET" "$FOLDER_LIMIT"
say "done in $((SECONDS - started)) s after the builds"
