#!/usr/bin/env bash
# Smoke test of a running mailproc, with curl only: after a deployment or an
# upgrade, does it answer, authenticate and obey?
#
#   scripts/smoke.sh [BASE_URL] [TOKEN]
#
# BASE_URL   default http://127.0.0.1:8080 (through a proxy: its https URL)
# TOKEN      server.auth_token, or an API key with read:stats, read:activity,
#            read:accounts and write:accounts;
#            leave it out only when the API is open (no token, no keys)
#
# Checks, one line each, `PASS name` or `FAIL name: why`:
#   health     GET /health answers 200 (or 503 when unhealthy) with a status
#   metrics    GET /metrics answers 200 with mailproc_ series
#   stats      GET /api/stats answers 200 with total_processed
#   activity   GET /api/activity answers 200 with entries
#   auth       a wrong token gets 401 (only when TOKEN is given)
#   accounts   GET /api/accounts answers 200 and lists an account
#   pause      POST /api/accounts/<first>/pause succeeds, and GET
#              /api/accounts then shows it paused
#   resume     POST /api/accounts/<first>/resume succeeds, and GET
#              /api/accounts then shows it not paused
# then `N passed, M failed`. Exit status 0 only when nothing failed.
# The account is left as it was found: running accounts are paused then
# resumed, a paused one resumed then paused again.
set -uo pipefail

BASE=${1:-http://127.0.0.1:8080}
BASE=${BASE%/}
TOKEN=${2:-}
PASSED=0
FAILED=0

command -v curl >/dev/null || { echo "smoke: curl not found (apt-get install curl)" >&2; exit 2; }

pass() { echo "PASS $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }

# req METHOD PATH [TOKEN] -> CODE (000 when nothing answered) and BODY.
# The token goes to curl on stdin (-K -), so it never shows in `ps`.
req() {
    local method=$1 path=$2 token=${3:-} out
    local args=(-s -S --max-time 10 -X "$method" -w '\n%{http_code}' -K -)
    [[ "$method" == POST ]] && args+=(--data '')
    out=$(
        if [[ -n "$token" ]]; then
            printf 'header = "Authorization: Bearer %s"\n' "$token"
        fi | curl "${args[@]}" "$BASE$path" 2>&1
    )
    CODE=${out##*$'\n'}
    BODY=${out%$'\n'*}
    [[ "$CODE" =~ ^[0-9]{3}$ ]] || CODE=000
}

# Short text of the reply for a FAIL line.
said() { printf 'HTTP %s %s' "$CODE" "$(printf '%s' "$BODY" | tr -d '\n' | cut -c1-160)"; }

req GET /health
if [[ "$CODE" =~ ^(200|503)$ && "$BODY" == *'"status":'* ]]; then
    pass health
else
    fail health "$(said)"
fi

req GET /metrics
if [[ "$CODE" == 200 && "$BODY" == *mailproc_emails_processed_total* ]]; then
    pass metrics
else
    fail metrics "$(said)"
fi

req GET /api/stats "$TOKEN"
if [[ "$CODE" == 200 && "$BODY" == *'"total_processed":'* ]]; then
    pass stats
else
    fail stats "$(said)"
fi

req GET '/api/activity?pageSize=5' "$TOKEN"
if [[ "$CODE" == 200 && "$BODY" == *'"entries":'* ]]; then
    pass activity
else
    fail activity "$(said)"
fi

if [[ -n "$TOKEN" ]]; then
    req GET /api/stats "wrong-${TOKEN}"
    if [[ "$CODE" == 401 ]]; then
        pass auth
    else
        fail auth "a wrong token got $(said)"
    fi
else
    echo "SKIP auth: no TOKEN given"
fi

req GET /api/accounts "$TOKEN"
ACCOUNT=""
if [[ "$CODE" == 200 ]]; then
    # Account names are letters, digits, - _ . (the config enforces it), so
    # the first "name" of the list needs no JSON parser.
    ACCOUNT=$(printf '%s' "$BODY" | grep -o '"name":"[A-Za-z0-9._-]*"' | head -n 1 | cut -d'"' -f4)
fi
if [[ -n "$ACCOUNT" ]]; then
    pass accounts
else
    fail accounts "no account listed: $(said)"
fi

# first_paused -> "true" or "false": the first account's "paused" (keys
# come sorted inside each account object, none nested before it).
first_paused() {
    req GET /api/accounts "$TOKEN"
    printf '%s' "$BODY" | grep -o '"paused":\(true\|false\)' | head -n 1 | cut -d: -f2
}

# control NAME COMMAND WANT_PAUSED
control() {
    local name=$1 cmd=$2 want=$3 paused
    req POST "/api/accounts/$ACCOUNT/$cmd" "$TOKEN"
    if [[ "$CODE" != 200 || "$BODY" != *'"success":true'* ]]; then
        fail "$name" "$ACCOUNT: $(said)"
        return
    fi
    paused=$(first_paused)
    if [[ "$paused" == "$want" ]]; then
        pass "$name"
    else
        fail "$name" "$ACCOUNT: accepted, but GET /api/accounts says paused=${paused:-?}: $(said)"
    fi
}

if [[ -n "$ACCOUNT" ]]; then
    # Left as found: an account the operator paused is resumed, then
    # paused again.
    if [[ "$(first_paused)" == true ]]; then
        control resume resume false
        control pause pause true
    else
        control pause pause true
        control resume resume false
    fi
else
    fail pause "no account to pause"
    fail resume "no account to resume"
fi

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
