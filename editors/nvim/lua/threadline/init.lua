--- Threadline for Neovim: the public Lua API (setup, open, resume, status, statusline, and the turn functions of
--- threadline.turns) and the sessions' glue to the chat buffers (threadline.chat): opening, resuming and attaching
--- sessions, status (its text in threadline.status). The server connection is threadline.server.
local config = require('threadline.config')
local fmt = require('threadline.format')
local status = require('threadline.status')
local updates = require('threadline.updates')

local M = {}

local S = require('threadline.state')

local function notify(msg, level)
  vim.notify('threadline: ' .. msg, level or vim.log.levels.INFO)
end

function M.setup(opts)
  config.setup(opts)
  S.configured = true
  if not S.autocmd then
    S.autocmd = vim.api.nvim_create_autocmd('VimLeavePre', {
      group = vim.api.nvim_create_augroup('threadline_exit', { clear = true }),
      callback = function()
        M.stop(true)
      end,
    })
  end
end

-- --- the server connection (threadline.server) --------------------------------------------------------

local server = require('threadline.server')
M.ensure_server, M.stop, M.request = server.ensure_server, server.stop, server.request

-- --- sessions and the chat window ----------------------------------------------------------------------

local function new_session(id, cwd)
  local s = {
    id = id,
    cwd = cwd,
    chat = require('threadline.chat').new(id, cwd),
    running = false,
    context = { used = 0, size = nil },
    pending_user = {},
    completed = {},
  }
  S.sessions[id] = s
  return s
end

local function load_context_size(s)
  M.request('getContextView', { sessionId = s.id }, function(err, r)
    if not err and type(r) == 'table' then
      updates.set_usage(s, nil, r.contextWindowTokens)
    end
  end)
end

--- Ask for the session's MCP servers (which starts them); their later changes arrive as mcpServerStatus.
function M.load_mcp_servers(s, callback)
  callback = callback or function() end
  M.request('listMcpServers', { sessionId = s.id }, function(err, r)
    if not err and type(r) == 'table' then
      updates.set_mcp_servers(s, r.servers)
    end
    callback(err, s.mcp)
  end)
end

--- Show the current session's chat buffer (and the input window) according to config.chat.position.
function M.show(s)
  s = s or S.current
  if not s or not s.chat:valid() then
    return
  end
  require('threadline.window').show(s, config.options.chat)
end

--- Make a session current and show it.
local function activate(s, show)
  local prev = S.current
  S.current = s
  if prev and prev ~= s and prev.attached then
    M.detach(prev.id) -- switching away stops following it; its turn goes on in the daemon
  end
  if show ~= false then
    M.show(s)
  end
  if s.reattach then
    s.reattach = nil
    M.attach(s.id, { cwd = s.cwd, show = false })
  end
end

--- open({ cwd = ..., new = bool, show = bool, worktree = NAME|true }, callback(err, session_id)): starts the server if needed,
--- creates a session, opens the chat buffer (filetype threadline).
function M.open(opts, callback)
  opts = opts or {}
  callback = callback or function() end
  local cwd = vim.fn.fnamemodify(opts.cwd or vim.fn.getcwd(), ':p'):gsub('(.)/$', '%1')
  local cur = S.current
  if cur and not opts.new and cur.cwd == cwd and cur.chat:valid() then
    M.ensure_server()
    activate(cur, opts.show)
    callback(nil, cur.id)
    return
  end
  local model = require('threadline.models').take_next() -- picked by :ThreadlineModel before any session
  local params = { cwd = cwd, title = opts.title, approvalPolicy = config.options.approval_policy, model = model }
  params.worktree = opts.worktree -- a new git worktree and branch (docs/WORKTREES.md)
  M.request('createSession', params, function(err, r)
    if err then
      local data = fmt.val(err.data)
      if not (type(data) == 'table' and data.code == require('threadline.transport').SERVER_EXITED) then
        notify('could not create a session: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      end
      callback(err)
      return
    end
    local worktree = fmt.val(r.worktree)
    local s = new_session(r.sessionId, type(worktree) == 'table' and worktree.path or cwd)
    s.model = model
    M.set_sandbox(s, fmt.val(r.sandbox), config.options.approval_policy)
    activate(s, opts.show)
    load_context_size(s)
    M.load_mcp_servers(s)
    require('threadline.plans').load_commands(s)
    callback(nil, s.id)
  end)
end

--- resume(session_id, { cwd = ... }, callback): load a stored session's history and make it current.
function M.resume(session_id, opts, callback)
  opts = opts or {}
  callback = callback or function() end
  local s = S.sessions[session_id]
  if s and s.chat:valid() then
    M.ensure_server()
    activate(s, opts.show)
    callback(nil, s.id)
    return
  end
  s = new_session(session_id, opts.cwd)
  if type(opts.totals) == 'table' then -- listSessions' stored totals, until the next usage update
    updates.set_cost(s, opts.totals.costUsd)
  end
  local items = {}
  local function page(after)
    M.request('readTranscript', { sessionId = session_id, afterSeq = after, limit = 200 }, function(err, r)
      if err then
        s.chat:error(err)
        callback(err)
        return
      end
      vim.list_extend(items, fmt.val(r.items) or {})
      local next_seq = fmt.val(r.nextSeq)
      if next_seq and #(fmt.val(r.items) or {}) > 0 then
        page(next_seq)
        return
      end
      -- Past compactions and applied edits' diffs come from the stored events; without them the history still renders.
      M.request('readEvents', { sessionId = session_id, kinds = { 'contextCompacted', 'fileDiff' }, limit = 1000 }, function(e, ev)
        local events = (not e and fmt.val(ev.events)) or {}
        require('threadline.checkpoints').remember_stored(s, events)
        s.chat:transcript(items, events)
        s.chat:append({ '', ('── resumed: %d messages loaded'):format(#items) })
        load_context_size(s)
        require('threadline.plans').load_commands(s)
        callback(nil, s.id)
      end)
    end)
  end
  activate(s, opts.show)
  page(nil)
end

--- attach(session_id, { cwd = ... }, callback): follow a session the daemon runs (use_daemon). Its kept updates
--- replay into a fresh chat buffer, then live ones stream as for a local session; an approval that waited is
--- asked on attach. When the daemon no longer keeps the start, the stored transcript loads instead.
function M.attach(session_id, opts, callback)
  opts = opts or {}
  callback = callback or function() end
  local s = S.sessions[session_id]
  local function detach_on_close(x)
    vim.api.nvim_create_autocmd('BufWipeout', { buffer = x.chat.buf, once = true, callback = function()
      M.detach(session_id)
    end })
  end
  if not (s and s.chat:valid()) then
    s = new_session(session_id, opts.cwd)
    detach_on_close(s)
  end
  activate(s, opts.show)
  M.request('attachSession', { sessionId = session_id, sinceSeq = s.seq or 0 }, function(err, r)
    if err then
      s.chat:error(err)
      callback(err)
      return
    end
    s.running = fmt.val(r.running) == true
    if fmt.val(r.truncated) ~= true then
      s.attached = true
    else
      -- The replay started late: reload the stored transcript in a new buffer, then follow from the current seq.
      pcall(vim.api.nvim_buf_delete, s.chat.buf, { force = true })
      S.sessions[session_id] = nil
      M.resume(session_id, { cwd = opts.cwd, show = opts.show }, function(e)
        local fresh = S.sessions[session_id]
        if fresh then
          fresh.seq, fresh.attached, fresh.running = fmt.val(r.seq), true, s.running
          detach_on_close(fresh)
        end
        callback(e, session_id)
      end)
      return
    end
    load_context_size(s)
    callback(nil, session_id)
  end)
end

--- detach(session_id): stop following a session; its running turn goes on in the daemon.
function M.detach(session_id)
  local s = S.sessions[session_id]
  if s and s.attached and S.transport and S.transport:is_running() then
    s.attached = nil
    M.request('detachSession', { sessionId = session_id }, function() end)
  end
end

-- --- turns (threadline.turns) ---------------------------------------------------------------------------

local turns = require('threadline.turns')
for _, name in ipairs({ 'submit', '_run_turn', 'steer', 'queue', 'compact', 'rewind', 'diff', 'cancel' }) do
  M[name] = turns[name]
end

--- The running connection or nil (internal; threadline.turns asks before cancelling).
function M._transport()
  return S.transport
end

-- --- sandbox (B-SBX-1/2) -----------------------------------------------------------------------------

--- sandbox_label(policy, sandbox) -> "autoEdit · sandbox: workspace-write" (threadline.status).
M.sandbox_label = status.sandbox_label

--- Keep the session's sandbox status (createSession/updateSession) and show it, beside the policy, in its chat.
function M.set_sandbox(s, sb, policy)
  s.sandbox = type(sb) == 'table' and sb or nil
  s.policy = policy
  s.chat:append({ '── ' .. M.sandbox_label(policy, s.sandbox) })
end

-- --- status ------------------------------------------------------------------------------------------

--- status() -> { state = "idle"|"running"|"stopped", session_id, context = { used, size, cached?, input?, cost? } }
--- context.used is the size of the last request sent to the model, never a cumulative count; cached and input
--- are that request's cached and total input tokens (B-CACHE-5; cached is nil when the provider reports none);
--- cost is the session's cost so far in USD (nil when no price is known). sandbox is the session's
--- { mode, enforced, mechanism, network, reason? } from createSession, policy its approval policy (nil: default).
--- compacting is the size in tokens of the request the server is compacting now (contextCompacting), else nil.
function M.status()
  local s = S.current
  local state = 'stopped'
  if S.transport and S.transport:is_running() then
    state = (s and s.running) and 'running' or 'idle'
  end
  return {
    state = state,
    session_id = s and s.id or nil,
    policy = s and s.policy or nil,
    sandbox = s and s.sandbox or nil,
    compacting = s and s.compacting or nil,
    context = {
      used = s and s.context.used or 0,
      size = s and s.context.size or nil,
      cached = s and s.context.cached or nil,
      input = s and s.context.input or nil,
      cost = s and s.context.cost or nil,
      budget_source = s and s.context.budget_source or nil,
      budget_tokens = s and s.context.budget_tokens or nil,
    },
  }
end

--- statusline() -> the status line text of status() (threadline.status.line), e.g. "TL 12.3k/64k".
function M.statusline()
  return status.line(M.status())
end

--- The current session table (internal; used by the commands).
function M.current()
  return S.current
end

return M
