#!/usr/bin/env bash
# Install real MCP servers from the registries in the layouts users install them with, for tests/compat.
# Everything is pinned: Python packages by tests/compat/python-constraints.txt, npm packages by version and by
# --before (no dependency published after that date). Idempotent: a finished layout is not made again.
# Usage: tests/compat/layouts.sh DIR PYTHON [STEP...] (only these steps: tools, npm-global, venv, pipx, uv-tool;
# make compat-fast makes only the venv, which make test needs).
set -euo pipefail
dir=$1
python=$2
shift 2
only=" $* "
here=$(cd "$(dirname "$0")" && pwd)
constraints=$here/python-constraints.txt
npm_before=2026-11-01
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

step() {
  [ "$only" = "  " ] || [[ "$only" == *" $1 "* ]] || return 1
  [ -e "$dir/.$1.done" ] && return 1
  echo "compat layouts: $1"
  return 0
}
done_() { touch "$dir/.$1.done"; }

# The package runners themselves (pipx, uv), in a venv of their own outside every home.
if step tools; then
  "$python" -m venv "$dir/tools"
  "$dir/tools/bin/pip" install --quiet --disable-pip-version-check -c "$constraints" pipx uv
  done_ tools
fi

# npm install -g --prefix ~/.npm-global (a user prefix: bin/ links into lib/node_modules).
if step npm-global; then
  home=$dir/npm-home
  mkdir -p "$home"
  HOME=$home npm install --global --prefix "$home/.npm-global" --before=$npm_before --no-audit --no-fund \
    --loglevel=error @modelcontextprotocol/server-memory@2026.8.31
  done_ npm-global
fi

# A venv with a console script (and python -m).
if step venv; then
  home=$dir/venv-home
  mkdir -p "$home"
  "$python" -m venv "$home/venvs/git"
  "$home/venvs/git/bin/pip" install --quiet --disable-pip-version-check -c "$constraints" mcp-server-git
  done_ venv
fi

# pipx install (~/.local/share/pipx/venvs, linked from ~/.local/bin).
if step pipx; then
  home=$dir/pipx-home
  mkdir -p "$home"
  env -u PIPX_HOME -u PIPX_BIN_DIR -u XDG_DATA_HOME -u XDG_STATE_HOME HOME="$home" "$dir/tools/bin/pipx" install --quiet --pip-args="-c $constraints" \
    mcp-server-git==2026.10.19
  done_ pipx
fi

# uv tool install (~/.local/share/uv/tools, linked from ~/.local/bin).
if step uv-tool; then
  home=$dir/uv-home
  mkdir -p "$home"
  env -u UV_TOOL_DIR -u UV_TOOL_BIN_DIR -u UV_CACHE_DIR -u XDG_DATA_HOME -u XDG_BIN_HOME HOME="$home" \
    "$dir/tools/bin/uv" tool install --quiet -c "$constraints" --python "$python" mcp-server-git==2026.10.19
  done_ uv-tool
fi
