#!/usr/bin/env bash
# Installs the Restate server the `restate` engine tests run (crates/thinkers-cli/tests/cli/restate/):
# the single binary shipped in the npm package @restatedev/restate-server (its platform package
# @restatedev/restate-server-linux-x64 holds the binary), into a cache outside the checkout
# (~/.cache/thinkers/restate, or $THINKERS_CACHE/restate).
#
# Idempotent: with the pinned version already installed it installs nothing. Once installed the
# server runs offline (no download at start).
#
# The last line printed is the path of the `restate-server` binary; scripts/test.sh exports it
# as THINKERS_RESTATE_SERVER.
set -euo pipefail

PREFIX="${THINKERS_CACHE:-$HOME/.cache/thinkers}/restate"
PACKAGE="@restatedev/restate-server"
VERSION="${THINKERS_RESTATE_SERVER_VERSION:-1.7.12}"

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) PLATFORM="linux-x64" ;;
    Linux-aarch64) PLATFORM="linux-arm64" ;;
    Darwin-arm64) PLATFORM="darwin-arm64" ;;
    Darwin-x86_64) PLATFORM="darwin-x64" ;;
    *) echo "install-restate-server: no restate-server package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
BINARY="$PREFIX/node_modules/$PACKAGE-$PLATFORM/bin/restate-server"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "install-restate-server: node and npm are required" >&2
    exit 1
fi

installed_version() {
    node -e "try { console.log(require('$PREFIX/node_modules/$PACKAGE/package.json').version) } catch (e) { }"
}

if [ ! -x "$BINARY" ] || [ "$(installed_version)" != "$VERSION" ]; then
    echo "install-restate-server: installing $PACKAGE@$VERSION into $PREFIX" >&2
    mkdir -p "$PREFIX"
    npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "$PACKAGE@$VERSION" >&2
fi

if [ ! -x "$BINARY" ]; then
    echo "install-restate-server: $BINARY is missing after the install" >&2
    exit 1
fi

echo "$BINARY"
