--- The chat buffer of one session: appends what the server streams (user turns, assistant text, tool calls
--- with their status, folded results, approvals, compaction notices, errors); a resumed session's stored history
--- is drawn by history.lua in the same shapes. Knows nothing about RPC.
local fmt = require('threadline.format')

local M = {}

local Chat = {}
Chat.__index = Chat

local ns = vim.api.nvim_create_namespace('threadline_chat')

--- Fold expression for chat buffers: fold bodies are the lines that start with format.FOLD.
function M.foldexpr(lnum)
  local line = vim.fn.getline(lnum)
  if line:sub(1, #fmt.FOLD) == fmt.FOLD then
    return '1'
  end
  return '0'
end

function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart):sub(#fmt.FOLD + 1)
  local n = vim.v.foldend - vim.v.foldstart + 1
  return ('  ┆ %d line%s: %s'):format(n, n == 1 and '' or 's', first)
end

--- Set the fold options on a window showing a chat buffer.
function M.setup_window(win)
  local wo = vim.wo[win]
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'threadline.chat'.foldexpr(v:lnum)"
  wo.foldtext = "v:lua.require'threadline.chat'.foldtext()"
  wo.foldlevel = 0
  wo.foldminlines = 0 -- one-line results fold too
  wo.foldenable = true
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = 'no'
end

function M.new(session_id, cwd)
  local buf = vim.api.nvim_create_buf(false, true)
  local name = 'threadline://' .. session_id
  pcall(vim.api.nvim_buf_set_name, buf, name)
  local bo = vim.bo[buf]
  bo.buftype = 'nofile'
  bo.bufhidden = 'hide'
  bo.swapfile = false
  bo.modifiable = false
  bo.filetype = 'threadline'
  vim.b[buf].threadline_session = session_id
  -- A turn's menu: rewind its files (or files and conversation) to before the turn under the cursor.
  vim.keymap.set('n', 'gR', function()
    require('threadline').rewind()
  end, { buffer = buf, desc = 'Threadline: rewind to before this turn' })
  local self = setmetatable({
    buf = buf,
    session_id = session_id,
    stream = nil, -- { kind = "assistant"|"reasoning", row = first row, text = accumulated }
    tools = {}, -- toolCallId -> { mark = extmark id, head = text of the line }
    turns = {}, -- { mark = extmark on a turn's "## You" header, turn_id } in order (a turn's menu: :ThreadlineRewind)
    unmarked = {}, -- headers of messages sent from here, waiting for their turn id: { mark, text }
    assistant_header = false,
    streamed = false, -- an assistantDelta arrived since the last assistantMessage
  }, Chat)
  self:_set_lines(0, -1, { ('Threadline session %s'):format(session_id), ('cwd: %s'):format(cwd or '?') })
  return self
end

function Chat:valid()
  return vim.api.nvim_buf_is_valid(self.buf)
end

function Chat:_set_lines(s, e, lines)
  if not self:valid() then
    return
  end
  -- Windows that showed the last line keep following the output.
  local follow = {}
  local count = vim.api.nvim_buf_line_count(self.buf)
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= count - 1 then
      follow[#follow + 1] = win
    end
  end
  vim.bo[self.buf].modifiable = true
  vim.api.nvim_buf_set_lines(self.buf, s, e, false, lines)
  vim.bo[self.buf].modifiable = false
  local last = vim.api.nvim_buf_line_count(self.buf)
  for _, win in ipairs(follow) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  end
end

--- Append lines at the end; closes any open stream.
function Chat:append(lines)
  self.stream = nil
  if type(lines) == 'string' then
    lines = fmt.lines(lines)
  end
  self:_set_lines(-1, -1, lines)
end

function Chat:lines()
  return vim.api.nvim_buf_get_lines(self.buf, 0, -1, false)
end

--- Streamed text (assistantDelta / reasoningDelta), appended in place as it arrives. Only the open last line
--- and the new lines are rewritten, so a long reply costs the size of each delta, not of the whole text.
function Chat:stream_text(kind, text)
  if text == nil or text == '' then
    return
  end
  if not self.stream or self.stream.kind ~= kind then
    if kind == 'assistant' then
      self:_assistant_header()
      self.streamed = true
    else
      self:append({ '  ~ reasoning' })
    end
    local prefix = kind == 'reasoning' and fmt.FOLD or ''
    self:_set_lines(-1, -1, { prefix })
    self.stream = { kind = kind, prefix = prefix, row = vim.api.nvim_buf_line_count(self.buf) - 1, last = '' }
  end
  local st = self.stream
  local parts = vim.split(text, '\n', { plain = true })
  parts[1] = st.last .. parts[1]
  st.last = parts[#parts]
  local rows = {}
  for i, p in ipairs(parts) do
    rows[i] = st.prefix .. p:gsub('\r$', '')
  end
  self:_set_lines(st.row, st.row + 1, rows)
  st.row = st.row + #parts - 1
  self.stream = st
end

function Chat:_assistant_header()
  if not self.assistant_header then
    self:append({ '', '## Assistant' })
    self.assistant_header = true
  elseif not self.stream then
    self:append({ '' })
  end
end

--- A user message; turn_id marks the header as that turn's start (steered = sent into a running turn).
function Chat:user(text, turn_id, steered)
  self.assistant_header = false
  self:append({ '', steered and '## You (steered into the running turn)' or '## You' })
  local mark = vim.api.nvim_buf_set_extmark(self.buf, ns, vim.api.nvim_buf_line_count(self.buf) - 1, 0, {})
  self:append(fmt.lines(text))
  if turn_id then
    table.insert(self.turns, { mark = mark, turn_id = turn_id })
  elseif not steered then
    table.insert(self.unmarked, { mark = mark, text = fmt.str(text) })
  end
end

--- The turn of a message shown when it was sent: its header becomes the turn's start.
function Chat:mark_turn(text, turn_id)
  for i, u in ipairs(self.unmarked) do
    if u.text == text then
      table.remove(self.unmarked, i)
      table.insert(self.turns, { mark = u.mark, turn_id = turn_id })
      return
    end
  end
end

--- The turn whose messages include buffer row (1-based), or nil.
function Chat:turn_at(row)
  local best, best_row
  for _, t in ipairs(self.turns) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, t.mark, {})
    if pos and pos[1] and pos[1] + 1 <= row and (not best_row or pos[1] > best_row) then
      best, best_row = t.turn_id, pos[1]
    end
  end
  return best
end

--- assistantMessage: the full text of one model answer (shown only when it was not streamed).
function Chat:assistant_message(u)
  local content = fmt.str(u.content)
  if not self.streamed and content ~= '' then
    self:_assistant_header()
    self:append(fmt.lines(content))
  end
  self.streamed = false
  self.stream = nil
  if u.interrupted == true then
    self:append({ '  [interrupted]' })
  end
end

function Chat:tool_call(u)
  self.stream = nil
  local id = fmt.str(u.toolCallId)
  self:append({ fmt.tool_line(u.tool, u.arguments, 'running') })
  local row = vim.api.nvim_buf_line_count(self.buf) - 1
  local mark = vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, {})
  self.tools[id] = { mark = mark, tool = u.tool, args = u.arguments }
end

function Chat:tool_result(u)
  local id = fmt.str(u.toolCallId)
  local t = self.tools[id]
  local status = fmt.str(u.status)
  if t then
    local pos = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, t.mark, {})
    if pos and pos[1] then
      self:_set_lines(pos[1], pos[1] + 1, { fmt.tool_line(t.tool, t.args, status) })
    end
  else
    self:append({ fmt.tool_line(u.tool, nil, status) })
  end
  local body = fmt.prefixed(fmt.FOLD, u.content)
  if #body == 0 then
    body = { fmt.FOLD }
  end
  self:append(body)
  local artifact = fmt.val(u.artifactId)
  if artifact then
    self:append({ ('    full output: :ThreadlineArtifact %s'):format(artifact) })
  end
  if type(fmt.val(u.diff)) == 'table' and status == 'ok' then
    self:append({ ('    diff: :ThreadlineDiff %s (gR there rewinds this edit)'):format(id) })
  end
end

--- A subagent's progress (B-SUB-1), indented under the task call that runs it; tasks are numbered in the order
--- they first report, so parallel ones stay apart.
function Chat:child_update(parent_call, u)
  self.children = self.children or { n = 0 }
  local n = self.children[parent_call]
  if not n then
    self.children.n = self.children.n + 1
    n = self.children.n
    self.children[parent_call] = n
  end
  local kind, line = fmt.str(u.kind), nil
  if kind == 'toolCall' then
    line = fmt.val(u.title) and fmt.str(u.title) or fmt.str(u.tool)
  elseif kind == 'toolResult' and fmt.str(u.status) ~= 'ok' then
    line = ('%s %s'):format(fmt.str(u.tool), fmt.STATUS[fmt.str(u.status)] or fmt.str(u.status))
  elseif kind == 'turnStarted' then
    line = 'subagent started'
  elseif kind == 'turnCompleted' then
    line = 'subagent finished: ' .. fmt.str(u.stopReason)
  end
  if line then
    self.stream = nil
    self:append({ ('    ↳ [task %d] %s'):format(n, line) })
  end
end

function Chat:artifact_created(u)
  self:append({
    ('    artifact %s: %s lines, %s bytes (:ThreadlineArtifact %s)'):format(
      fmt.str(u.artifactId),
      fmt.str(u.totalLines),
      fmt.str(u.totalBytes),
      fmt.str(u.artifactId)
    ),
  })
end

function Chat:approval(p)
  local lines = { ('  ? approval needed: %s'):format(fmt.str(p.title ~= nil and p.title or p.tool)) }
  if fmt.val(p.outsideSandbox) == true then -- B-SBX-3: marked plainly
    lines[1] = '  ! OUTSIDE THE SANDBOX — approval needed: ' .. fmt.str(p.title ~= nil and p.title or p.tool)
  end
  -- The detail holds the whole command, then the model's reason quoted as its words: shown as sent, never the
  -- raw `reason` field (its text could pass for a line of ours)
  for _, l in ipairs(fmt.lines(p.detail)) do
    lines[#lines + 1] = '    ' .. l
  end
  self:append(lines)
end

function Chat:approval_decision(decision)
  self:append({ ('  → %s'):format(fmt.decision(decision)) })
end

function Chat:compacted(u)
  local lines = {
    ('── context compacted (%s): %s → %s tokens'):format(
      fmt.str(u.mode),
      fmt.tokens(u.beforeTokens),
      fmt.tokens(u.afterTokens)
    ),
  }
  vim.list_extend(lines, fmt.prefixed(fmt.FOLD, u.summary))
  self:append(lines)
end

function Chat:turn_completed(stop_reason, err)
  self.assistant_header = false
  self.streamed = false
  if stop_reason == 'cancelled' then
    self:append({ '  [cancelled]' })
  elseif stop_reason == 'maxIterations' then
    self:append({ '  [stopped: the turn reached the maximum number of steps]' })
  elseif stop_reason == 'error' then
    self:error(err)
  end
end

--- Errors shown plainly: "Error: <message> (<code>)".
function Chat:error(err)
  err = fmt.val(err)
  local msg, code
  if type(err) == 'table' then
    msg = fmt.str(err.message)
    local data = fmt.val(err.data)
    code = fmt.val(err.code)
    if type(data) == 'table' and fmt.val(data.code) then
      code = data.code
    end
  else
    msg = fmt.str(err)
  end
  if msg == '' then
    msg = 'unknown error'
  end
  local lines = fmt.lines(msg)
  lines[1] = 'Error: ' .. lines[1] .. (code and (' (' .. tostring(code) .. ')') or '')
  table.insert(lines, 1, '')
  self:append(lines)
end

function Chat:notice(level, message)
  local lines = fmt.lines(message)
  lines[1] = ('[%s] %s'):format(fmt.str(level), lines[1] or '')
  self:append(lines)
end

--- History from readTranscript items and their stored events (history.lua).
function Chat:transcript(items, events)
  require('threadline.history').render(self, items, events)
end

M.Chat = Chat
return M
