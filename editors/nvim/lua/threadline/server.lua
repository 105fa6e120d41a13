--- The connection to the Threadline server (threadline.transport underneath): starting and stopping it, its
--- requests, and what it sends: sessionUpdate notifications into the sessions' chats (threadline.updates), and
--- its requests (an approval, the editor's answers). The public API re-exports ensure_server, stop and request.
local config = require('threadline.config')
local fmt = require('threadline.format')
local updates = require('threadline.updates')
local S = require('threadline.state')

local M = {}

local function notify(msg, level)
  vim.notify('threadline: ' .. msg, level or vim.log.levels.INFO)
end

-- --- server updates ------------------------------------------------------------------------------------

local function session_for(id)
  return id and S.sessions[id] or nil
end

local function on_notification(method, params)
  if method ~= 'sessionUpdate' or type(params) ~= 'table' then
    return
  end
  local u = fmt.val(params.update)
  local parent = fmt.val(params.parentSessionId)
  if parent then -- a subagent's update (B-SUB-1): an indented block under its parent's task call
    local p = session_for(parent)
    if p and type(u) == 'table' then
      p.chat:child_update(fmt.str(params.parentToolCallId), u)
    end
    return
  end
  local s = session_for(fmt.val(params.sessionId))
  if not s or type(u) ~= 'table' then
    return
  end
  local seq = fmt.val(params.seq)
  if type(seq) == 'number' then -- a re-attach asks for what came after this one
    if s.seq and seq <= s.seq then
      return
    end
    s.seq = seq
  end
  updates.apply(s, u, fmt.val(params.turnId))
end

local function on_request(method, params)
  if method == 'requestApproval' then
    -- a subagent's approval (B-SUB-1) shows in its parent's chat
    local s = session_for(params and (fmt.val(params.parentSessionId) or fmt.val(params.sessionId)))
    local decision = require('threadline.approval').ask(params or {}, s and s.chat)
    return { decision = decision }
  end
  if method:match('^editor/') then
    local result, err = require('threadline.editor').answer(method, params)
    if result == nil then
      return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError, err)
    end
    return result
  end
  return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound, 'unknown method ' .. method)
end

--- The connection to the server is gone. A new server numbers its updates from 1 again: a session forgets its last
--- seq, so none is dropped as already shown; one that was attached keeps it and attaches again when shown (the same
--- daemon replays what came after it, a new one answers truncated and the transcript reloads).
local function gone(s)
  if s.attached then
    s.attached, s.reattach = nil, true
  elseif not s.reattach then
    s.seq = nil
  end
end

local function on_exit(transport, code, signal, expected)
  if S.transport ~= transport then
    return
  end
  S.transport = nil
  for _, s in pairs(S.sessions) do
    s.running, s.active = false, nil
    gone(s)
  end
  if expected then
    return
  end
  require('threadline.approval').reject_all(nil)
  local msg = ('the Threadline server stopped unexpectedly (exit code %s%s). Run :Threadline to restart it.'):format(
    tostring(code),
    (signal and signal ~= 0) and (', signal ' .. tostring(signal)) or ''
  )
  if vim.lsp.get_log_path then
    msg = msg .. '\nIts error output is in the LSP log: ' .. vim.lsp.get_log_path()
  end
  for _, s in pairs(S.sessions) do
    s.chat:error(msg)
  end
  notify(msg, vim.log.levels.ERROR)
end

-- --- server lifecycle ----------------------------------------------------------------------------------

--- The running connection, starting the server when needed. Returns transport or nil, error.
function M.ensure_server()
  if not S.configured then
    require('threadline').setup({})
  end
  if S.transport and S.transport:is_running() then
    return S.transport
  end
  local o = config.options
  local transport
  local t, err = require('threadline.transport').start({
    cmd = config.resolve_cmd(),
    env = o.cmd_env,
    cwd = o.cmd_cwd,
    init_options = config.init_options(),
    capabilities = (function()
      local editor = require('threadline.editor').capabilities()
      return editor and { experimental = { threadline = { editor = editor } } } or nil
    end)(),
    on_notification = on_notification,
    on_request = on_request,
    on_exit = function(code, signal, expected)
      on_exit(transport, code, signal, expected)
    end,
    on_ready = function(e)
      local data = e and fmt.val(e.data)
      -- A server that dies before answering is reported by on_exit.
      if e and not (type(data) == 'table' and data.code == require('threadline.transport').SERVER_EXITED) then
        notify('initialize failed: ' .. fmt.str(e.message), vim.log.levels.ERROR)
      end
    end,
  })
  if not t then
    err = ('could not start the Threadline server (%s): %s. See :checkhealth threadline'):format(
      table.concat(config.resolve_cmd(), ' '), fmt.str(err):gsub('^.-failed', 'failed'))
    return nil, err
  end
  transport = t
  S.transport = t
  return t
end

--- Stop the server (wait = true blocks until it is gone, as on VimLeavePre).
function M.stop(wait)
  local t = S.transport
  if t then
    S.transport = nil
    for _, s in pairs(S.sessions) do
      s.running, s.active = false, nil
      gone(s)
    end
    t:stop(wait, config.options.shutdown_timeout)
  end
end

--- request(method, params, callback(err, result)) on the running server (started if needed).
function M.request(method, params, callback)
  callback = callback or function() end
  local t, err = M.ensure_server()
  if not t then
    callback({ code = -32099, message = err })
    return
  end
  t:request(method, params, callback)
end

return M
