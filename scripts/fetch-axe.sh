#!/usr/bin/env bash
# Fetch axe-core (MPL-2.0), the accessibility engine tests/browser.rs runs
# on every dashboard page, once, from the npm registry, and print the path
# of its axe.min.js:
#   ${MAILPROC_CACHE:-$HOME/.cache/mailproc}/axe-core-<version>/axe.min.js
# Idempotent: a complete earlier download is reused. Needs npm (for
# `npm pack`) and tar. Progress goes to stderr; stdout carries only the path.
set -euo pipefail

VERSION="4.14.1"
CACHE="${MAILPROC_CACHE:-$HOME/.cache/mailproc}/axe-core-$VERSION"
JS="$CACHE/axe.min.js"

if [[ -s "$JS" ]]; then
    printf '%s\n' "$JS"
    exit 0
fi

command -v npm >/dev/null || { echo "fetch-axe: npm not found (apt-get install npm)" >&2; exit 1; }

mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetch-axe: downloading axe-core@$VERSION ..." >&2
# --ignore-scripts: we only want the tarball; nothing from it is executed here.
tarball=$(cd "$tmp" && npm pack --silent --ignore-scripts "axe-core@$VERSION" | tail -n 1)
[[ -f "$tmp/$tarball" ]] || { echo "fetch-axe: npm pack produced no tarball" >&2; exit 1; }
tar -xzf "$tmp/$tarball" -C "$tmp" package/axe.min.js
[[ -s "$tmp/package/axe.min.js" ]] || { echo "fetch-axe: the tarball has no axe.min.js" >&2; exit 1; }
mv "$tmp/package/axe.min.js" "$JS.part"
mv "$JS.part" "$JS"
printf '%s\n' "$JS"
