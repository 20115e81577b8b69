"""editors/neovim (the ``host_bridge`` Lua module) in a real headless Neovim (0.7+): it loads, defines its commands,
renders resources, answers consent prompts through vim.ui.select, and drives the real sidecar
(``python -m host_bridge serve``): Enter on every question shares and trusts nothing, the status, pick and
shared-folder commands work.

Each test runs ``nvim --headless -u NONE --cmd "set rtp+=editors/neovim" -c "lua require('host_bridge').setup(…)"
-c "lua dofile(<check>)" -c "qa!"``; the check writes a JSON verdict to a file that the test reads. Skipped when
``nvim`` is not on PATH (``make tools`` installs Debian's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import REPO, SERVERS

RUNTIME = "editors/neovim"
RESOURCES_SERVER = SERVERS / "resources_server.py"
TIMEOUT = 120.0
"""Seconds one Neovim run may take (the Lua side waits at most 20 s for any one thing)."""

CHECK_TEMPLATE = """
local function check()
%s
end
local ok, result = xpcall(check, debug.traceback)
local verdict = ok and { ok = true, result = result } or { ok = false, error = tostring(result) }
vim.fn.writefile({ vim.fn.json_encode(verdict) }, os.getenv("HB_OUT"))
"""


@pytest.fixture
def nvim() -> str:
    found = shutil.which("nvim")
    if found is None:
        pytest.skip("nvim is not on PATH (Debian: apt-get install neovim; make tools): editors/neovim is not tested")
    return found


def sidecar_config(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    """vim.g.host_bridge for a sidecar run by this interpreter, on a fresh workspace and consent store."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return {
        "autostart": False,
        "cmd": [sys.executable, "-m", "host_bridge", "serve"],
        "root_dir": str(workspace),
        "storage_dir": str(tmp_path / "storage"),
        "read_workspace_config": False,
        **extra,
    }


def run_example(nvim: str, tmp_path: Path, config: dict[str, Any], check: str) -> Any:
    """Set the module up with ``config``, run the Lua ``check`` body, return what it returns."""
    script = tmp_path / "check.lua"
    script.write_text(CHECK_TEMPLATE % check)
    out = tmp_path / "verdict.json"
    home = tmp_path / "nvim-home"
    env = {
        **os.environ,
        "HB_CONFIG": json.dumps(config),
        "HB_OUT": str(out),
        "HB_CHECK": str(script),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    command = [
        nvim,
        "--headless",
        "-u",
        "NONE",
        "-i",
        "NONE",
        "-n",
        "--cmd",
        f"set rtp+={RUNTIME}",
        "-c",
        "lua require('host_bridge').setup(vim.fn.json_decode(os.getenv('HB_CONFIG')))",
        "-c",
        "lua dofile(os.getenv('HB_CHECK'))",
        "-c",
        "qa!",
    ]
    done = subprocess.run(
        command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT
    )
    logs = "\n".join(p.read_text(errors="replace")[-4000:] for p in home.rglob("lsp.log"))
    context = f"nvim exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}\nlsp.log: {logs}"
    assert out.exists(), context
    verdict = json.loads(out.read_text())
    assert verdict["ok"], f"{verdict.get('error')}\n{context}"
    return verdict["result"]


def test_module_loads_defines_commands_and_renders_resources(nvim: str, tmp_path: Path) -> None:
    result = run_example(
        nvim,
        tmp_path,
        {"autostart": False},
        """
  local M = require("host_bridge")
  local r = {}
  r.loaded = type(M) == "table" and type(M.setup) == "function"
  r.status_command = vim.fn.exists(":McpStatus")
  r.pick_command = vim.fn.exists(":McpPickResource")
  r.folders_command = vim.fn.exists(":McpSharedFolders")
  r.not_started = M.client() == nil

  local buf = M.open_resource_buffer("srv", "test://doc/1", { uri = "test://doc/1", contents = {
    { uri = "test://doc/1", mimeType = "application/json", text = '{"a": 1}\\r\\n{"b": 2}' } } })
  r.name = vim.api.nvim_buf_get_name(buf)
  r.buftype = vim.bo[buf].buftype
  r.modifiable = vim.bo[buf].modifiable
  r.filetype = vim.bo[buf].filetype
  r.lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  r.current = vim.api.nvim_get_current_buf() == buf
  -- Opening the same resource again reuses its buffer.
  r.reused = M.open_resource_buffer("srv", "test://doc/1", { contents = { { uri = "test://doc/1", text = "new" } } })
    == buf
  r.relines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)

  local blob = M.open_resource_buffer("srv", "test://blob/1", { contents = {
    { uri = "test://blob/1", mimeType = "image/png", blob = "AAECAwQ=" } } })
  r.blob_lines = vim.api.nvim_buf_get_lines(blob, 0, -1, false)

  -- Consent prompts go through vim.ui.select; a dismissed prompt answers null.
  local prompts = {}
  local pick = 2
  vim.ui.select = function(items, opts, on_choice)
    table.insert(prompts, opts.prompt)
    on_choice(items[pick])
  end
  local params = { type = 3, message = "Share these folders?",
    actions = { { title = "Allow" }, { title = "Allow for this session" }, { title = "Deny" } } }
  local chosen = M.handlers["window/showMessageRequest"](nil, params, { method = "window/showMessageRequest" })
  r.chosen = chosen.title
  pick = 99
  r.dismissed_is_null = M.handlers["window/showMessageRequest"](nil, params, {}) == vim.NIL
  r.prompts = prompts

  local said = {}
  vim.notify = function(message) table.insert(said, message) end
  M.handlers["hostBridge/serverChanged"](nil, { id = "fs", state = "starting", sharedRoots = {} }, {})
  M.handlers["hostBridge/serverChanged"](nil, { id = "fs", state = "starting", sharedRoots = {} }, {})
  M.handlers["hostBridge/serverChanged"](nil, { id = "fs", state = "running",
    sharedRoots = { { uri = "file:///tmp/acme", name = "acme" } } }, {})
  vim.wait(1000, function() return #said >= 2 end, 10)
  r.said = said
  return r
""",
    )
    assert result["loaded"] is True
    assert result["status_command"] == 2
    assert result["pick_command"] == 2
    assert result["folders_command"] == 2
    assert result["not_started"] is True
    assert result["name"] == "mcp-resource://srv/test://doc/1"
    assert result["buftype"] == "nofile"
    assert result["modifiable"] is False
    assert result["filetype"] == "json"
    assert result["lines"] == ['{"a": 1}', '{"b": 2}']
    assert result["current"] is True
    assert result["reused"] is True and result["relines"] == ["new"]
    assert result["blob_lines"] == ["<binary 5 bytes image/png>"]
    assert result["chosen"] == "Allow for this session"
    assert result["dismissed_is_null"] is True
    assert len(result["prompts"]) == 2 and "Share these folders?" in result["prompts"][0]
    assert result["said"] == ["[host-bridge] fs: starting", "[host-bridge] fs: starting -> running (shared: acme)"]


def test_module_starts_the_sidecar_and_reads_its_status(nvim: str, tmp_path: Path) -> None:
    config = sidecar_config(tmp_path, servers={})
    result = run_example(
        nvim,
        tmp_path,
        config,
        """
  local M = require("host_bridge")
  local client = assert(M.start(), "the sidecar did not start")
  local initialized = vim.wait(20000, function() return client.initialized == true end, 20)
  local status, err
  vim.wait(20000, function()
    status, err = M.request_sync("hostBridge/status", nil, 20000)
    return err ~= nil or (status ~= nil and status.ready ~= false)
  end, 100)
  -- :McpStatus goes through the same request and reports with vim.notify.
  local said = {}
  vim.notify = function(message) table.insert(said, message) end
  vim.cmd("McpStatus")
  vim.wait(20000, function() return #said > 0 end, 20)
  return { initialized = initialized, name = client.name, status = status, err = err, said = said }
""",
    )
    assert result["initialized"] is True
    assert result["name"] == "host-bridge"
    assert result.get("err") is None
    status = result["status"]
    assert status["servers"] in ([], {})
    workspace = (tmp_path / "ws").resolve().as_uri()
    assert [c["uri"] for c in status["candidates"]] == [workspace]
    assert len(result["said"]) == 1
    assert result["said"][0].startswith("No MCP servers configured.")
    assert str((tmp_path / "ws").resolve()) in result["said"][0]


@pytest.mark.slow
def test_module_asks_consent_and_opens_a_paged_resource(nvim: str, tmp_path: Path) -> None:
    server = {"type": "stdio", "command": sys.executable, "args": [str(RESOURCES_SERVER)]}
    config = sidecar_config(tmp_path, servers={"res": server})
    result = run_example(
        nvim,
        tmp_path,
        config,
        """
  local M = require("host_bridge")
  local prompts, offered = {}, {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(prompts, opts.prompt)
    for _, item in ipairs(items) do
      if item.title == "Allow for this session" then return on_choice(item) end
    end
    local wanted
    for _, item in ipairs(items) do
      table.insert(offered, opts.format_item(item))
      if item.uri == "test://res/12" then wanted = item end
    end
    on_choice(wanted)
  end
  local said = {}
  vim.notify = function(message) table.insert(said, message) end
  assert(M.start(), "the sidecar did not start")

  local function shared()
    local status = M.request_sync("hostBridge/status", nil, 5000)
    local s = status and status.servers and status.servers[1]
    return s and s.state == "running" and #(s.sharedRoots or {}) > 0
  end
  local running = vim.wait(60000, shared, 200)

  vim.cmd("McpPickResource res")
  local name = "mcp-resource://res/test://res/12"
  local opened = vim.wait(20000, function() return M.find_buffer(name) ~= nil end, 50)
  local buf = M.find_buffer(name)
  local r = { running = running, prompts = prompts, offered = offered, opened = opened, said = said }
  if buf then
    r.lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    r.buftype = vim.bo[buf].buftype
    r.modifiable = vim.bo[buf].modifiable
    r.current = vim.api.nvim_get_current_buf() == buf
  end
  return r
""",
    )
    assert result["running"] is True, result
    assert len(result["prompts"]) >= 1 and "MCP Host Bridge: share with the MCP server 'res'" in result["prompts"][0]
    # 25 resources in pages of 10: the picker followed nextCursor to the end.
    assert len(result["offered"]) == 25, result
    assert "res  Resource 24  test://res/24" in result["offered"]
    assert result["opened"] is True, result
    assert result["lines"] == ["content of res 12"]
    assert result["buftype"] == "nofile"
    assert result["modifiable"] is False
    assert result["current"] is True
    # Asked while it starts, the server comes up already sharing the folder (no second start), and the example says so.
    assert "[host-bridge] res: starting -> running (shared: ws)" in result["said"], result


def saved_decisions(tmp_path: Path) -> list[Any]:
    path = tmp_path / "storage" / "consent.json"
    return json.loads(path.read_text()).get("roots", []) if path.exists() else []


@pytest.mark.requirement("G6")
def test_enter_on_every_question_shares_nothing_and_trusts_nothing(nvim: str, tmp_path: Path) -> None:
    """A picker that pre-selects the first item (telescope-ui-select, fzf-lua, dressing's builtin) answers it on
    Enter: the sidecar puts the answer that shares and trusts nothing first."""
    server = {"type": "stdio", "command": sys.executable, "args": [str(RESOURCES_SERVER)]}
    config = sidecar_config(tmp_path, servers={"res": server}, read_workspace_config=True)
    (tmp_path / "ws" / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"repo": {"command": sys.executable, "args": [str(RESOURCES_SERVER)]}}})
    )
    result = run_example(
        nvim,
        tmp_path,
        config,
        """
  local M = require("host_bridge")
  local questions = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(questions, { prompt = opts.prompt, first = opts.format_item(items[1]) })
    on_choice(items[1])  -- Enter
  end
  vim.notify = function() end
  assert(M.start(), "the sidecar did not start")
  local status
  vim.wait(60000, function()
    status = M.request_sync("hostBridge/status", nil, 5000)
    local states = {}
    for _, s in ipairs((status and status.servers) or {}) do states[s.id] = s.state end
    return states.res == "running" and states.repo == "stopped" and #questions >= 2
  end, 200)
  local shared = {}
  for _, s in ipairs(status.servers) do shared[s.id] = #(s.sharedRoots or {}) end
  return { questions = questions, shared = shared, states = status.servers }
""",
    )
    firsts = sorted(q["first"] for q in result["questions"])
    assert firsts == ["Don't trust", "Not now"], result
    assert result["shared"] == {"res": 0, "repo": 0}
    assert saved_decisions(tmp_path) == []


@pytest.mark.slow
def test_shared_folders_command_stops_sharing_and_stop_ends_the_sidecar(nvim: str, tmp_path: Path) -> None:
    server = {"type": "stdio", "command": sys.executable, "args": [str(RESOURCES_SERVER)]}
    config = sidecar_config(tmp_path, servers={"res": server})
    result = run_example(
        nvim,
        tmp_path,
        config,
        """
  local M = require("host_bridge")
  local want = "Allow"
  vim.ui.select = function(items, opts, on_choice)
    for _, item in ipairs(items) do
      local label = opts.format_item and opts.format_item(item) or item
      if label == want or (type(label) == "string" and label:find("[shared]", 1, true)) then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  vim.notify = function() end
  local client = assert(M.start(), "the sidecar did not start")
  local function shared()
    local status = M.request_sync("hostBridge/status", nil, 5000)
    local s = status and status.servers and status.servers[1]
    return s and s.state == "running" and #(s.sharedRoots or {})
  end
  local before = vim.wait(60000, function() return shared() == 1 end, 200)
  want = "Stop sharing it (deny)"
  vim.cmd("McpSharedFolders res")
  local after = vim.wait(30000, function() return shared() == 0 end, 200)
  vim.cmd("McpStop")
  local stopped = vim.wait(10000, function() return client.is_stopped() end, 50)
  return { before = before, after = after, stopped = stopped }
""",
    )
    assert result == {"before": True, "after": True, "stopped": True}
    assert [(r["serverId"], r["decision"]) for r in saved_decisions(tmp_path)] == [("res", "deny")]
