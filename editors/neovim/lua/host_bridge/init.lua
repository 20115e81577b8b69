-- host_bridge for Neovim (0.7 and later): the MCP Host Bridge sidecar as an LSP client, with commands.
--
-- Starts the host_bridge sidecar (`host-bridge serve`, LSP over stdio) for the current directory, asks its
-- consent questions with vim.ui.select, reports server state changes, and adds these commands:
--
--   :McpStatus                   the MCP servers, their states and the folders shared with each
--   :McpPickResource [server]    pick a resource (all servers, or one) and open it in a read-only scratch
--                                buffer named mcp-resource://<server>/<uri>
--   :McpSharedFolders [server]   share, stop sharing or forget a folder for one server
--   :McpStop                     shut the sidecar down
--
-- Install: put editors/neovim on the runtimepath (a plugin manager does, e.g. lazy.nvim with
-- `dir = "<repo>/editors/neovim"`), then in init.lua:
--
--   require("host_bridge").setup({
--     cmd = { "host-bridge", "serve" },          -- how to start the sidecar
--     root_dir = vim.fn.getcwd(),                -- the workspace folder (default: the current directory)
--     servers = {                                -- MCP servers, in the .vscode/mcp.json "servers" format
--       fs = { type = "stdio", command = "npx", args = { "-y", "@modelcontextprotocol/server-filesystem" } },
--     },
--     read_workspace_config = true,              -- also read .vscode/mcp.json and .mcp.json (asks for trust)
--     storage_dir = nil,                         -- consent.json/audit.jsonl (default ~/.local/share/host-bridge)
--     autostart = true,                          -- start the sidecar in setup(), not on the first command
--   })
--
-- Or try it once without installing: `:lua vim.g.host_bridge = {...}` then `:luafile editors/neovim/lua/host_bridge/init.lua`.
--
-- The sidecar asks before sharing a folder with a server through window/showMessageRequest. Neovim 0.10+
-- answers that with vim.ui.select itself; 0.7-0.9 use a blocking inputlist(), so this module installs its own
-- handler that goes through vim.ui.select on every version (and so through dressing.nvim, telescope-ui-select
-- and the like). Pickers that pre-select the first item make Enter answer it: the sidecar always puts the
-- answer that shares nothing and trusts nothing first ("Not now", "Don't trust"). The protocol is
-- docs/protocol.md; docs/editors.md has the set-up and the terminal commands.

local M = {}

M.defaults = {
  cmd = { "host-bridge", "serve" },
  root_dir = nil,
  servers = {},
  read_workspace_config = true,
  storage_dir = nil,
  autostart = true,
  name = "host-bridge",
}

M.config = vim.deepcopy(M.defaults)
M.client_id = nil
M.states = {} -- server id -> last state seen in hostBridge/serverChanged

local PREFIX = "[host-bridge] "

local function notify(message, level)
  vim.schedule(function()
    vim.notify(PREFIX .. message, level or vim.log.levels.INFO)
  end)
end

-- Lua's {} encodes as a JSON array; the sidecar expects objects.
local function object(t)
  if t == nil or next(t) == nil then
    return vim.empty_dict()
  end
  return t
end

-- Client methods became `client:request()` in 0.11; the dot form is deprecated there.
local NEW_CLIENT_API = vim.fn.has("nvim-0.11") == 1

local function client_request(client, method, params, handler)
  if NEW_CLIENT_API then
    return client:request(method, params, handler)
  end
  return client.request(method, params, handler)
end

local function client_request_sync(client, method, params, timeout_ms)
  if NEW_CLIENT_API then
    return client:request_sync(method, params, timeout_ms)
  end
  return client.request_sync(method, params, timeout_ms)
end

local function is_stopped(client)
  if NEW_CLIENT_API then
    return client:is_stopped()
  end
  return client.is_stopped()
end

-- ---------------------------------------------------------------------------------------------------------
-- Handlers for what the sidecar sends

-- window/showMessageRequest -> the chosen MessageActionItem, or vim.NIL (dismissed: nothing is shared).
function M.show_message_request(_, params)
  local actions = (params and params.actions) or {}
  if #actions == 0 then
    notify(params and params.message or "", vim.log.levels.INFO)
    return vim.NIL
  end
  local opts = {
    prompt = PREFIX .. (params.message or "") .. " ",
    format_item = function(action)
      return (action.title:gsub("\r?\n", " "))
    end,
  }
  -- 0.10+ runs server requests in a coroutine: an asynchronous vim.ui.select can resume it.
  local co, is_main = coroutine.running()
  if co and not is_main then
    vim.ui.select(actions, opts, function(choice)
      vim.schedule(function()
        coroutine.resume(co, choice or vim.NIL)
      end)
    end)
    return coroutine.yield()
  end
  -- 0.7-0.9: the answer is this function's return value; wait (processing events) for the choice.
  local done, chosen = false, nil
  vim.ui.select(actions, opts, function(choice)
    done, chosen = true, choice
  end)
  if not done then
    vim.wait(300000, function()
      return done
    end, 50)
  end
  return chosen or vim.NIL
end

local function shared_names(status)
  local names = {}
  for _, root in ipairs(status.sharedRoots or {}) do
    table.insert(names, root.name or vim.uri_to_fname(root.uri))
  end
  return names
end

-- hostBridge/serverChanged: echo state changes (not every status refresh).
function M.on_server_changed(_, status)
  if type(status) ~= "table" or not status.id then
    return
  end
  local before = M.states[status.id]
  M.states[status.id] = status.state
  if before == status.state then
    return
  end
  local message = string.format("%s: %s", status.id, status.state)
  if before then
    message = string.format("%s: %s -> %s", status.id, before, status.state)
  end
  local shared = shared_names(status)
  if status.state == "running" and #shared > 0 then
    message = message .. " (shared: " .. table.concat(shared, ", ") .. ")"
  end
  local level = vim.log.levels.INFO
  if status.state == "failed" then
    level = vim.log.levels.WARN
    if status.lastError then
      message = message .. ": " .. status.lastError
    end
  end
  notify(message, level)
end

-- hostBridge/resourceUpdated: refresh an open buffer showing that resource, else just say so.
function M.on_resource_updated(_, params)
  if type(params) ~= "table" or not params.server or not params.uri then
    return
  end
  vim.schedule(function()
    local buf = M.find_buffer(M.buffer_name(params.server, params.uri))
    if buf then
      M.read_resource(params.server, params.uri, { buf = buf })
    else
      notify(string.format("%s: %s changed", params.server, params.uri))
    end
  end)
end

function M.on_resources_changed(_, _) end

M.handlers = {
  ["window/showMessageRequest"] = function(...)
    return M.show_message_request(...)
  end,
  ["hostBridge/serverChanged"] = function(...)
    return M.on_server_changed(...)
  end,
  ["hostBridge/resourcesChanged"] = function(...)
    return M.on_resources_changed(...)
  end,
  ["hostBridge/resourceUpdated"] = function(...)
    return M.on_resource_updated(...)
  end,
}

-- ---------------------------------------------------------------------------------------------------------
-- The client

function M.client()
  if M.client_id then
    local client = vim.lsp.get_client_by_id(M.client_id)
    if client and not is_stopped(client) then
      return client
    end
    M.client_id = nil
  end
  return nil
end

function M.client_config()
  local c = M.config
  local root = c.root_dir or vim.fn.getcwd()
  local init_options = {
    servers = object(c.servers),
    readWorkspaceConfig = c.read_workspace_config ~= false,
  }
  if c.storage_dir then
    init_options.storageDir = c.storage_dir
  end
  return {
    name = c.name,
    cmd = c.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
    init_options = init_options,
    handlers = M.handlers,
    on_exit = function(code, signal)
      M.client_id = nil
      M.states = {}
      if code ~= 0 then
        notify(string.format("the sidecar exited (code %s, signal %s); see :lua print(vim.lsp.get_log_path())",
          tostring(code), tostring(signal)), vim.log.levels.WARN)
      end
    end,
  }
end

-- Start the sidecar (once); the client, or nil when it cannot start.
function M.start()
  local existing = M.client()
  if existing then
    return existing
  end
  local config = M.client_config()
  if vim.fn.executable(config.cmd[1]) ~= 1 then
    notify(string.format("%q is not executable; install host-bridge or set cmd", config.cmd[1]),
      vim.log.levels.ERROR)
    return nil
  end
  local ok, id
  if vim.lsp.start then
    -- 0.8+: reuses a running client with the same name and root, and attaches the current buffer.
    ok, id = pcall(vim.lsp.start, config)
  else
    ok, id = pcall(vim.lsp.start_client, config)
  end
  if not ok or not id then
    notify("could not start the sidecar: " .. tostring(id), vim.log.levels.ERROR)
    return nil
  end
  M.client_id = id
  return vim.lsp.get_client_by_id(id)
end

function M.stop()
  local client = M.client()
  if client then
    if NEW_CLIENT_API then
      client:stop()
    else
      client.stop()
    end
  end
  M.client_id = nil
end

-- Call fn(client) once the sidecar has answered `initialize` (polls without blocking the editor).
local function when_initialized(fn, tries)
  local client = M.start()
  if not client then
    return
  end
  if client.initialized then
    return fn(client)
  end
  tries = (tries or 0) + 1
  if tries > 200 then
    notify("the sidecar did not finish starting in 20 s", vim.log.levels.ERROR)
    return
  end
  vim.defer_fn(function()
    when_initialized(fn, tries)
  end, 100)
end

-- Send a hostBridge/* request; callback(result) on success, errors are reported.
function M.request(method, params, callback)
  when_initialized(function(client)
    client_request(client, method, object(params), function(err, result)
      if err then
        notify(string.format("%s failed: %s", method, err.message or vim.inspect(err)), vim.log.levels.ERROR)
        return
      end
      callback(result)
    end)
  end)
end

-- The synchronous form: result, err (for scripts and tests). Blocks the editor up to timeout_ms.
function M.request_sync(method, params, timeout_ms)
  timeout_ms = timeout_ms or 10000
  local client = M.start()
  if not client then
    return nil, "the sidecar is not running"
  end
  if not vim.wait(timeout_ms, function()
    return client.initialized == true or is_stopped(client)
  end, 20) or not client.initialized then
    return nil, "the sidecar did not finish starting"
  end
  local response, err = client_request_sync(client, method, object(params), timeout_ms)
  if not response then
    return nil, err
  end
  if response.err then
    return nil, response.err.message or vim.inspect(response.err)
  end
  return response.result, nil
end

-- ---------------------------------------------------------------------------------------------------------
-- :McpStatus

function M.status_lines(result)
  local lines = {}
  local servers = (result and result.servers) or {}
  if #servers == 0 then
    table.insert(lines, "No MCP servers configured.")
  end
  for _, s in ipairs(servers) do
    table.insert(lines, string.format("%s  %s  (%s, %s)", s.id, s.state, s.transport or "?", s.source or "?"))
    local shared = {}
    for _, root in ipairs(s.sharedRoots or {}) do
      table.insert(shared, vim.uri_to_fname(root.uri))
    end
    table.insert(lines, "  shared: " .. (#shared > 0 and table.concat(shared, ", ") or "nothing"))
    if s.lastError then
      table.insert(lines, "  error: " .. s.lastError)
    end
  end
  local candidates = (result and result.candidates) or {}
  if #candidates > 0 then
    table.insert(lines, "Folders that can be shared:")
    for _, c in ipairs(candidates) do
      table.insert(lines, string.format("  %s  %s  [%s]", c.name or "", vim.uri_to_fname(c.uri),
        table.concat(c.kinds or {}, ", ")))
    end
  end
  return lines
end

-- The sidecar answers at once; while it is still reading the workspace the answer says ready = false and is
-- asked again shortly (at most 50 times).
function M.status(attempt)
  attempt = attempt or 1
  M.request("hostBridge/status", nil, function(result)
    if result.ready == false and attempt < 50 then
      vim.defer_fn(function() M.status(attempt + 1) end, 200)
      return
    end
    vim.notify(table.concat(M.status_lines(result), "\n"), vim.log.levels.INFO)
  end)
end

-- ---------------------------------------------------------------------------------------------------------
-- :McpPickResource

-- Every resource, following nextCursor; callback(items, warnings).
function M.list_all_resources(server, callback)
  local items, warnings, seen = {}, {}, {}
  local function page(cursor)
    local params = { server = server, cursor = cursor }
    M.request("hostBridge/listResources", params, function(result)
      vim.list_extend(items, result.items or {})
      vim.list_extend(warnings, result.warnings or {})
      local next_cursor = result.nextCursor
      if next_cursor and next_cursor ~= vim.NIL and not seen[next_cursor] then
        seen[next_cursor] = true
        page(next_cursor)
      else
        callback(items, warnings)
      end
    end)
  end
  page(nil)
end

function M.buffer_name(server, uri)
  return "mcp-resource://" .. server .. "/" .. uri
end

function M.find_buffer(name)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_name(buf) == name then
      return buf
    end
  end
  return nil
end

local FILETYPES = {
  ["application/json"] = "json",
  ["application/xml"] = "xml",
  ["text/xml"] = "xml",
  ["text/html"] = "html",
  ["text/css"] = "css",
  ["text/csv"] = "csv",
  ["text/markdown"] = "markdown",
  ["text/x-markdown"] = "markdown",
  ["application/yaml"] = "yaml",
  ["application/x-yaml"] = "yaml",
  ["text/yaml"] = "yaml",
  ["text/x-yaml"] = "yaml",
  ["application/toml"] = "toml",
  ["text/javascript"] = "javascript",
  ["application/javascript"] = "javascript",
  ["application/typescript"] = "typescript",
  ["text/x-python"] = "python",
  ["text/x-lua"] = "lua",
  ["text/x-rust"] = "rust",
  ["text/x-go"] = "go",
  ["text/x-c"] = "c",
  ["text/x-sh"] = "sh",
  ["application/x-sh"] = "sh",
  ["application/sql"] = "sql",
  ["text/x-diff"] = "diff",
}

function M.filetype_for(mime)
  if type(mime) ~= "string" then
    return nil
  end
  mime = mime:lower():gsub(";.*$", ""):gsub("%s+", "")
  if FILETYPES[mime] then
    return FILETYPES[mime]
  end
  if mime:match("%+json$") then
    return "json"
  end
  if mime:match("%+xml$") then
    return "xml"
  end
  return nil
end

-- Decoded size of a base64 string, without decoding it.
local function base64_size(blob)
  local clean = blob:gsub("[^%w%+/=]", "")
  local padding = #(clean:match("=*$"))
  return math.floor(#clean / 4) * 3 - padding
end

-- The lines and filetype for a hostBridge/readResource result.
function M.render(result)
  local lines, filetype = {}, nil
  local contents = (result and result.contents) or {}
  for i, content in ipairs(contents) do
    if #contents > 1 then
      if i > 1 then
        table.insert(lines, "")
      end
      table.insert(lines, string.format("--- %s%s", content.uri or "",
        content.mimeType and ("  (" .. content.mimeType .. ")") or ""))
    end
    if type(content.text) == "string" then
      for _, line in ipairs(vim.split(content.text, "\n", { plain = true })) do
        table.insert(lines, (line:gsub("\r$", "")))
      end
      filetype = filetype or M.filetype_for(content.mimeType)
    elseif type(content.blob) == "string" then
      table.insert(lines, string.format("<binary %d bytes %s>", base64_size(content.blob),
        content.mimeType or "application/octet-stream"))
    end
  end
  if #contents == 0 then
    table.insert(lines, "<no contents>")
  end
  return lines, filetype
end

-- Show a readResource result in the read-only scratch buffer for server/uri; the buffer number.
function M.open_resource_buffer(server, uri, result, opts)
  opts = opts or {}
  local name = M.buffer_name(server, uri)
  local buf = opts.buf or M.find_buffer(name)
  if not buf then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  local lines, filetype = M.render(result)
  local bo = vim.bo[buf]
  bo.buftype = "nofile"
  bo.swapfile = false
  bo.modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  bo.modifiable = false
  bo.modified = false
  if filetype then
    bo.filetype = filetype
  end
  if not opts.buf then
    vim.api.nvim_set_current_buf(buf)
  end
  return buf
end

function M.read_resource(server, uri, opts)
  M.request("hostBridge/readResource", { server = server, uri = uri }, function(result)
    M.open_resource_buffer(server, uri, result, opts)
  end)
end

function M.pick_resource(server)
  M.list_all_resources(server, function(items, warnings)
    for _, warning in ipairs(warnings) do
      notify(warning, vim.log.levels.WARN)
    end
    if #items == 0 then
      notify("no resources" .. (server and (" from " .. server) or ""))
      return
    end
    vim.ui.select(items, {
      prompt = "MCP resource",
      format_item = function(item)
        return string.format("%s  %s  %s", item.server, item.title or item.name, item.uri)
      end,
    }, function(item)
      if item then
        M.read_resource(item.server, item.uri)
      end
    end)
  end)
end

-- ---------------------------------------------------------------------------------------------------------
-- :McpSharedFolders

-- What can be done with a folder, least exposure first (a picker that pre-selects takes the first on Enter).
M.folder_actions = {
  { title = "Leave it as it is", decision = nil },
  { title = "Stop sharing it (deny)", decision = "deny" },
  { title = "Forget my decision (ask again)", decision = "forget" },
  { title = "Share it for this session", decision = "allowSession" },
  { title = "Share it", decision = "allow" },
}

-- hostBridge/setConsent; callback(result).
function M.set_consent(server, uri, decision, callback)
  M.request("hostBridge/setConsent", { server = server, uri = uri, decision = decision }, function(result)
    local path = vim.uri_to_fname(uri)
    notify(string.format("%s: %s for %s%s", path, result.applied or "?", server,
      result.message and result.message ~= vim.NIL and (" (" .. result.message .. ")") or ""))
    if callback then
      callback(result)
    end
  end)
end

local function pick_folder(server, status)
  local entry
  for _, s in ipairs(status.servers or {}) do
    if s.id == server then
      entry = s
    end
  end
  if not entry then
    notify("no server " .. server, vim.log.levels.WARN)
    return
  end
  local shared = {}
  for _, root in ipairs(entry.sharedRoots or {}) do
    shared[root.uri] = true
  end
  vim.ui.select(status.candidates or {}, {
    prompt = "Folder for " .. server,
    format_item = function(c)
      return string.format("%s %s", shared[c.uri] and "[shared]" or "[not shared]", vim.uri_to_fname(c.uri))
    end,
  }, function(candidate)
    if not candidate then
      return
    end
    vim.ui.select(M.folder_actions, {
      prompt = vim.uri_to_fname(candidate.uri),
      format_item = function(action)
        return action.title
      end,
    }, function(action)
      if action and action.decision then
        M.set_consent(server, candidate.uri, action.decision)
      end
    end)
  end)
end

function M.shared_folders(server)
  M.request("hostBridge/status", nil, function(status)
    if server then
      return pick_folder(server, status)
    end
    local ids = {}
    for _, s in ipairs(status.servers or {}) do
      table.insert(ids, s.id)
    end
    if #ids == 0 then
      notify("no MCP servers configured")
      return
    end
    vim.ui.select(ids, { prompt = "MCP server" }, function(id)
      if id then
        pick_folder(id, status)
      end
    end)
  end)
end

-- ---------------------------------------------------------------------------------------------------------
-- Setup

function M.setup(opts)
  -- Shallow on purpose: a given cmd or servers table replaces the default as a whole.
  M.config = vim.tbl_extend("force", vim.deepcopy(M.defaults), opts or {})
  vim.api.nvim_create_user_command("McpStatus", function()
    M.status()
  end, { desc = "host_bridge: MCP servers, states and shared folders" })
  vim.api.nvim_create_user_command("McpPickResource", function(args)
    M.pick_resource(args.args ~= "" and args.args or nil)
  end, { nargs = "?", desc = "host_bridge: open an MCP resource in a scratch buffer" })
  vim.api.nvim_create_user_command("McpSharedFolders", function(args)
    M.shared_folders(args.args ~= "" and args.args or nil)
  end, { nargs = "?", desc = "host_bridge: share, stop sharing or forget a folder for a server" })
  vim.api.nvim_create_user_command("McpStop", function()
    M.stop()
  end, { desc = "host_bridge: shut the sidecar down" })
  if M.config.autostart then
    M.start()
  end
  return M
end

-- `:luafile` passes no module name: set up right away (from vim.g.host_bridge) and make `require` find it.
if ... == nil then
  package.loaded["host_bridge"] = M
  M.setup(vim.g.host_bridge or {})
end

return M
