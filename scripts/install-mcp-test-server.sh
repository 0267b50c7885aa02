#!/usr/bin/env bash
# Installs the MCP server the `mcp` integration tests talk to: the reference "everything" server
# from the npm registry, into the project-local folder .mcp-test/ (ignored by git).
#
# Idempotent: a second run with the package already present installs nothing and only prints the
# command. Once installed, the server runs offline (plain `node`, no downloads at start).
#
# The last line printed is the command that starts the server: as printed it speaks MCP over
# stdio; with the argument `streamableHttp` (and the port in the PORT environment variable) it
# serves streamable HTTP on /mcp instead. scripts/test.sh exports that line as
# THINKERS_MCP_EVERYTHING so the tests can find the server; the tests split it on whitespace.
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX="$PWD/.mcp-test"
PACKAGE="@modelcontextprotocol/server-everything"
VERSION="${THINKERS_MCP_EVERYTHING_VERSION:-2026.8.31}"
ENTRY="$PREFIX/node_modules/$PACKAGE/dist/index.js"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "install-mcp-test-server: node and npm are required" >&2
    exit 1
fi

installed_version() {
    node -e "try { console.log(require('$PREFIX/node_modules/$PACKAGE/package.json').version) } catch (e) { }"
}

if [ ! -f "$ENTRY" ] || [ "$(installed_version)" != "$VERSION" ]; then
    echo "install-mcp-test-server: installing $PACKAGE@$VERSION into $PREFIX" >&2
    mkdir -p "$PREFIX"
    # Keep the whole folder out of git without touching the repository's .gitignore.
    printf '*\n' > "$PREFIX/.gitignore"
    npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "$PACKAGE@$VERSION" >&2
fi

if [ ! -f "$ENTRY" ]; then
    echo "install-mcp-test-server: $ENTRY is missing after the install" >&2
    exit 1
fi

echo "node $ENTRY"
