--- Read-only views: the session list (:ThreadlineSessions), the context view (:ThreadlineContext),
--- artifacts (:ThreadlineArtifact) and MCP servers (:ThreadlineMcp).
local fmt = require('threadline.format')

local M = {}

local function tl()
  return require('threadline')
end

local function scratch(name, filetype)
  local existing = vim.fn.bufnr(name)
  if existing ~= -1 and vim.api.nvim_buf_is_valid(existing) then
    pcall(vim.api.nvim_buf_delete, existing, { force = true })
  end
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = filetype
  return buf
end

local function set_lines(buf, s, e, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, s, e, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
end

local function show_buf(buf)
  vim.cmd('botright split')
  vim.api.nvim_win_set_buf(0, buf)
end

local function need_session()
  local s = tl().current()
  if not s then
    vim.notify('threadline: no session; run :Threadline first', vim.log.levels.WARN)
  end
  return s
end

-- --- :ThreadlineSessions -------------------------------------------------------------------------------

function M.format_session(info)
  return ('%s  %s  (%s msgs, %s)  %s'):format(
    fmt.str(info.updatedAt):sub(1, 16):gsub('T', ' '),
    fmt.str(info.title) ~= '' and fmt.str(info.title) or '(untitled)',
    fmt.str(info.messageCount),
    fmt.str(info.cwd),
    fmt.str(info.sessionId)
  )
end

--- List sessions (of cwd, or all with opts.all) and resume the chosen one.
function M.sessions(opts, callback)
  opts = opts or {}
  callback = callback or function() end
  local params = { limit = opts.limit or 100 }
  if not opts.all then
    params.cwd = vim.fn.fnamemodify(opts.cwd or vim.fn.getcwd(), ':p'):gsub('(.)/$', '%1')
  end
  tl().request('listSessions', params, function(err, r)
    if err then
      vim.notify('threadline: listSessions failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      callback(err)
      return
    end
    local sessions = fmt.val(r.sessions) or {}
    if #sessions == 0 then
      vim.notify('threadline: no sessions' .. (params.cwd and (' in ' .. params.cwd) or ''), vim.log.levels.INFO)
      callback(nil, nil)
      return
    end
    vim.ui.select(sessions, {
      prompt = 'Threadline sessions',
      kind = 'threadline_session',
      format_item = M.format_session,
    }, function(choice)
      if not choice then
        callback(nil, nil)
        return
      end
      tl().resume(choice.sessionId, { cwd = fmt.val(choice.cwd), totals = fmt.val(choice.totals) }, callback)
    end)
  end)
end

--- A listSessions item for :ThreadlineAttach: its state in the daemon first.
function M.format_running(info)
  local state = fmt.val(info.waitingForApproval) == true and 'waiting for approval'
    or (fmt.val(info.running) == true and 'running' or 'idle')
  return ('[%s, %s attached]  %s'):format(state, fmt.str(fmt.val(info.attachedClients) or 0), M.format_session(info))
end

--- :ThreadlineAttach: pick a session the daemon has (running ones first) and follow it live.
function M.attach(opts, callback)
  opts = opts or {}
  callback = callback or function() end
  tl().request('listSessions', { limit = opts.limit or 100 }, function(err, r)
    if err then
      vim.notify('threadline: listSessions failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      callback(err)
      return
    end
    local sessions = {}
    for _, info in ipairs(fmt.val(r.sessions) or {}) do
      if opts.all or fmt.val(info.running) == true or fmt.val(info.waitingForApproval) == true then
        sessions[#sessions + 1] = info
      end
    end
    if #sessions == 0 then
      vim.notify('threadline: no running sessions (:ThreadlineAttach! lists all)', vim.log.levels.INFO)
      callback(nil, nil)
      return
    end
    vim.ui.select(sessions, {
      prompt = 'Threadline: attach to',
      kind = 'threadline_session',
      format_item = M.format_running,
    }, function(choice)
      if not choice then
        callback(nil, nil)
        return
      end
      tl().attach(choice.sessionId, { cwd = fmt.val(choice.cwd) }, callback)
    end)
  end)
end

-- --- :ThreadlineContext --------------------------------------------------------------------------------

local function content_text(content)
  content = fmt.val(content)
  if type(content) == 'table' then
    local parts = {}
    for _, p in ipairs(content) do
      if type(p) == 'table' and p.type == 'text' then
        parts[#parts + 1] = fmt.str(p.text)
      else
        parts[#parts + 1] = '[' .. fmt.str(type(p) == 'table' and p.type or p) .. ']'
      end
    end
    return table.concat(parts, '\n')
  end
  return fmt.str(content)
end

--- Lines of a getContextView result (pure; tested through the command).
function M.context_lines(session_id, v)
  local lines = {
    ('Threadline context view — session %s'):format(session_id),
    ('mode: %s'):format(fmt.str(v.mode)),
    ('tokens: %s estimated / %s threshold (window %s, keep recent %s)'):format(
      fmt.str(v.estimatedTokens),
      fmt.str(v.thresholdTokens),
      fmt.str(v.contextWindowTokens),
      fmt.str(v.keepRecentTokens)
    ),
    ('messages: %d sent, built from %s stored; %s tool outputs compacted'):format(
      #(fmt.val(v.messages) or {}),
      fmt.str(v.transcriptMessages),
      fmt.str(v.compactedToolOutputs)
    ),
  }
  vim.list_extend(lines, require('threadline.plans').breakdown_lines(v))
  local summary = fmt.val(v.summary)
  if summary then
    lines[#lines + 1] = 'summary:'
    vim.list_extend(lines, fmt.prefixed('  ', summary))
  end
  for i, m in ipairs(fmt.val(v.messages) or {}) do
    local head = ('[%d] %s'):format(i, fmt.str(m.role))
    if fmt.val(m.tool_call_id) then
      head = head .. ' (tool_call_id ' .. fmt.str(m.tool_call_id) .. ')'
    end
    lines[#lines + 1] = ''
    lines[#lines + 1] = head
    vim.list_extend(lines, fmt.prefixed('  ', content_text(m.content)))
    for _, tc in ipairs(fmt.val(m.tool_calls) or {}) do
      local fn = fmt.val(tc['function']) or {}
      lines[#lines + 1] = ('  -> %s %s (%s)'):format(fmt.str(fn.name), fmt.arguments(fn.arguments, 400), fmt.str(tc.id))
    end
  end
  return lines
end

function M.context(callback)
  callback = callback or function() end
  local s = need_session()
  if not s then
    return callback({ message = 'no session' })
  end
  tl().request('getContextView', { sessionId = s.id }, function(err, v)
    if err then
      vim.notify('threadline: getContextView failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      return callback(err)
    end
    local buf = scratch('threadline-context://' .. s.id, 'threadline_context')
    set_lines(buf, 0, -1, M.context_lines(s.id, v))
    show_buf(buf)
    callback(nil, buf)
  end)
end

-- --- :ThreadlineArtifact -------------------------------------------------------------------------------

local MORE = '-- more: press <CR> or ]] to load lines '

--- Open an artifact read-only; further pages of artifact_page_lines lines load on <CR>/]] at the end.
function M.artifact(artifact_id, callback)
  callback = callback or function() end
  local s = need_session()
  if not s then
    return callback({ message = 'no session' })
  end
  local page = require('threadline.config').options.artifact_page_lines
  local buf = scratch('threadline-artifact://' .. artifact_id, 'threadline_artifact')
  local state = { loaded = 0, total = nil, loading = false }

  local function load_next(done)
    if state.loading then
      return
    end
    state.loading = true
    local start = state.loaded + 1
    tl().request('readArtifact', {
      sessionId = s.id,
      artifactId = artifact_id,
      lineRange = { start = start, ['end'] = start + page - 1 },
    }, function(err, r)
      state.loading = false
      if err then
        vim.notify('threadline: readArtifact failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
        return done and done(err)
      end
      if not vim.api.nvim_buf_is_valid(buf) then
        return
      end
      state.total = tonumber(fmt.val(r.totalLines)) or 0
      local lines = fmt.lines(fmt.val(r.content) or '')
      if #lines == 1 and lines[1] == '' and state.total == 0 then
        lines = {}
      end
      local first = state.loaded == 0
      state.loaded = math.min(state.total, state.loaded + math.max(#lines, 1))
      -- Replace the "more" line (or the empty first line) with the page.
      local count = vim.api.nvim_buf_line_count(buf)
      set_lines(buf, first and 0 or count - 1, -1, lines)
      if state.loaded < state.total then
        set_lines(buf, -1, -1, { ('%s%d-%d of %d --'):format(MORE, state.loaded + 1,
          math.min(state.total, state.loaded + page), state.total) })
      end
      vim.b[buf].threadline_artifact = { id = artifact_id, loaded = state.loaded, total = state.total }
      return done and done(nil, buf)
    end)
  end

  local function more()
    if state.total and state.loaded < state.total then
      load_next()
    end
  end
  vim.keymap.set('n', '<CR>', more, { buffer = buf, desc = 'Threadline: load more of the artifact' })
  vim.keymap.set('n', ']]', more, { buffer = buf, desc = 'Threadline: load more of the artifact' })
  show_buf(buf)
  load_next(function(err, b)
    callback(err, b)
  end)
  return buf
end

-- --- :ThreadlineMcp -------------------------------------------------------------------------------------

--- One line per MCP server: name, transport, origin, state, tool count and the reason of a failure.
function M.mcp_lines(servers)
  local names = vim.tbl_keys(servers or {})
  table.sort(names)
  if #names == 0 then
    return { 'no MCP servers for this session' }
  end
  local lines = {}
  for _, name in ipairs(names) do
    local srv = servers[name]
    local line = ('%s [%s%s]: %s'):format(name, srv.transport or '?', srv.origin and (', ' .. srv.origin) or '', srv.state)
    if srv.tools and srv.tools > 0 then
      line = line .. (', %d tools'):format(srv.tools)
    end
    if srv.reason then
      line = line .. ' (' .. fmt.str(srv.reason) .. ')'
    end
    lines[#lines + 1] = line
  end
  return lines
end

function M.mcp(callback)
  callback = callback or function() end
  local s = need_session()
  if not s then
    return callback({ message = 'no session' })
  end
  tl().load_mcp_servers(s, function(err, servers)
    if err then
      vim.notify('threadline: listMcpServers failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      return callback(err)
    end
    local buf = scratch('threadline-mcp://' .. s.id, 'threadline_mcp')
    set_lines(buf, 0, -1, M.mcp_lines(servers))
    show_buf(buf)
    callback(nil, buf)
  end)
end

return M
