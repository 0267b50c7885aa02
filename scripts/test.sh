#!/usr/bin/env bash
# The whole test suite: installs what the tests need (and starts a real model server), then runs
# every test of the workspace.
# This is the README's test command, and the one .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n==> %s\n' "$*"; }

# The style is enforced, first, so a format slip or a lint fails in seconds rather than after the
# whole suite: rustfmt's layout, and clippy with every warning an error (the workspace lints in
# Cargo.toml deny unwrap/expect/panic in library code).
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# One build from scratch gains nothing from incremental compilation, whose caches would take
# about 4 GB of the target directory's disk; a developer who reruns the suite can set it to 1.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
if ! cargo clippy --version >/dev/null 2>&1 || ! cargo fmt --version >/dev/null 2>&1; then
    log "installing the clippy and rustfmt components"
    rustup component add clippy rustfmt
fi
log "cargo fmt --all --check"
cargo fmt --all --check
log "cargo clippy --workspace --all-targets --all-features -- -D warnings"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

# The architecture as a Cargo fact: the contracts crate depends on no HTTP, SQL or server crate,
# and neither crate has an import cycle between its top-level modules.
log "thinkers-core depends on no HTTP, SQL or server crate (cargo tree)"
if cargo tree -p thinkers-core -e normal --prefix none --locked | grep -E '^(reqwest|hyper|sqlx|axum)[ -]'; then
    echo "ERROR: thinkers-core depends on the crate(s) above" >&2
    exit 1
fi
# Every crate still packages for crates.io, so a publishing regression fails in seconds (no verifying
# rebuild here; --allow-dirty: a working tree with edits packages too).
log "cargo package --workspace --no-verify --locked --allow-dirty"
cargo package --workspace --no-verify --locked --allow-dirty
log "the batteries stay in their crates: sqlx only in thinkers-store, the HTML and XML parsers only in thinkers-tools, rmcp only in thinkers-mcp, redis only in thinkers-redis, axum only in thinkers-host, restate-sdk only in thinkers-workflows (cargo tree)"
if cargo tree -p thinkers -p thinkers-core -e normal --all-features --prefix none --locked | grep -E '^(sqlx|html5ever|html2text|quick-xml|rmcp|redis|axum|restate-sdk)[ -]'; then
    echo "ERROR: thinkers or thinkers-core depends on the crate(s) above; the store belongs in thinkers-store, the service tools in thinkers-tools, MCP in thinkers-mcp, shared budgets in thinkers-redis, the chat host in thinkers-host, the workflow engine in thinkers-workflows" >&2
    exit 1
fi
log "no import cycle between top-level modules (scripts/module-cycles.py)"
python3 scripts/module-cycles.py

# Python SDKs for the wire-compatibility tests (the official openai and anthropic clients talk to
# thinkers-sim). Installed into a project venv so nothing leaks into the system.
setup_python() {
    if [ ! -x .venv/bin/python ]; then
        log "creating .venv"
        python3 -m venv .venv
    fi
    if ! .venv/bin/python -c 'import openai, anthropic, google.genai, boto3' 2>/dev/null; then
        log "installing the official openai, anthropic, google-genai and boto3 SDKs"
        .venv/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
    fi
    export THINKERS_TEST_PYTHON="$PWD/.venv/bin/python"
}

if [ -f scripts/requirements-test.txt ]; then
    setup_python
fi

# A real MCP server (the reference "everything" server from npm) for the MCP provider tests.
if command -v npm >/dev/null 2>&1; then
    log "MCP test server (npm: @modelcontextprotocol/server-everything)"
    THINKERS_MCP_EVERYTHING="$(bash scripts/install-mcp-test-server.sh | tail -n1)"
    export THINKERS_MCP_EVERYTHING
    # A real Restate server (npm: @restatedev/restate-server) for the `restate` engine tests.
    log "Restate server (npm: @restatedev/restate-server)"
    THINKERS_RESTATE_SERVER="$(bash scripts/install-restate-server.sh | tail -n1)"
    export THINKERS_RESTATE_SERVER
fi

# Headless Chromium and its WebDriver for the chat page's browser test
# (crates/thinkers-host/tests/host/browser.rs). Debian's packages; installed only when missing.
setup_browser() {
    if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
        log "installing Debian's chromium and chromium-driver"
        local sudo=""
        if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver
    fi
    export THINKERS_CHROMIUM=/usr/bin/chromium
    export THINKERS_CHROMEDRIVER=/usr/bin/chromedriver
}
setup_browser

# PostgreSQL and Redis for the scale-out tests (PgStore, RedisBudgets). The machines start both
# before every session and CI run; check they answer, with a plain TCP probe (the client tools
# may be absent), and say which one does not. The tests fail rather than skip when
# THINKERS_REQUIRE_SERVICES=1.
export THINKERS_TEST_PG_URL="${THINKERS_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
export THINKERS_TEST_REDIS_URL="${THINKERS_TEST_REDIS_URL:-redis://127.0.0.1:6379}"
export THINKERS_REQUIRE_SERVICES=1
probe() { # name host port
    if timeout 5 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null; then
        log "$1 answers on $2:$3"
    else
        printf '\nERROR: %s does not answer on %s:%s; the PostgreSQL/Redis tests will fail.\n' "$1" "$2" "$3" >&2
        services_missing=1
    fi
}
services_missing=0
probe PostgreSQL 127.0.0.1 5432
probe Redis 127.0.0.1 6379
if [ "$services_missing" = 1 ]; then
    echo "ERROR: start the missing service(s) above before running the tests." >&2
    exit 1
fi
if command -v pg_isready >/dev/null 2>&1; then pg_isready -h 127.0.0.1 -p 5432 || true; fi
if command -v redis-cli >/dev/null 2>&1; then redis-cli -h 127.0.0.1 -p 6379 ping || true; fi

# A real OpenAI-compatible model server for the real-model tests (crates/thinkers/tests/real_model,
# crates/thinkers-cli/tests/cli/real_model.rs): llama-cpp-python's server with SmolLM2-135M-Instruct.
# The first run on a machine compiles llama.cpp into a wheel kept in ~/.cache/thinkers (20-40
# minutes on two cores, with a line a minute); later runs reuse it and start in seconds. The
# tests fail rather than skip when THINKERS_REQUIRE_REAL_MODEL=1.
start_real_model() {
    local port started=$SECONDS
    port="${THINKERS_REAL_MODEL_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
    log "real model server: llama-cpp-python + SmolLM2-135M-Instruct on 127.0.0.1:$port"
    REAL_MODEL_PORT="$port"
    trap 'bash scripts/real-model-server.sh stop "$REAL_MODEL_PORT"' EXIT
    THINKERS_REAL_MODEL_URL="$(bash scripts/real-model-server.sh start "$port" | tail -n1)"
    export THINKERS_REAL_MODEL_URL THINKERS_REQUIRE_REAL_MODEL=1
    log "real model server answers at $THINKERS_REAL_MODEL_URL ($((SECONDS - started)) s to install and start)"
}
start_real_model

log "cargo check without default features"
cargo check -p thinkers --no-default-features --locked
log "cargo test --workspace --all-features (unit, integration and doc tests)"
cargo test --workspace --all-features --locked
