--- Issue 33 in Neovim: the agent's plan as a checklist in the chat buffer, `/` completion in the input buffer
--- from listCommands, and what fills the context (getContextView's breakdown and compactions) for
--- :ThreadlineContext.
local fmt = require('threadline.format')

local M = {}

local MARK = { completed = '[x]', in_progress = '[>]', pending = '[ ]' }

--- The plan's chat lines: a header with the progress, then one checkbox line per step.
function M.plan_lines(entries)
  entries = fmt.val(entries) or {}
  local done, now = 0, nil
  for _, e in ipairs(entries) do
    local status = fmt.str(e.status)
    if status == 'completed' then
      done = done + 1
    elseif status == 'in_progress' then
      now = fmt.str(e.step)
    end
  end
  local lines = { '', ('── plan: %d of %d done%s'):format(done, #entries, now and (' · now: ' .. now) or '') }
  for _, e in ipairs(entries) do
    lines[#lines + 1] = ('  %s %s'):format(MARK[fmt.str(e.status)] or '[ ]', fmt.str(e.step))
  end
  return lines
end

-- --- `/` completion ------------------------------------------------------------------------------------

--- Fetch the session's commands (listCommands) into s.commands, for the synchronous completion function.
function M.load_commands(s, callback)
  callback = callback or function() end
  require('threadline').request('listCommands', { sessionId = s.id }, function(err, r)
    if not err and type(r) == 'table' then
      s.commands = fmt.val(r.commands) or {}
    end
    callback(err, s.commands)
  end)
end

--- Completion items for `base` (the text typed so far, "/" included) from s.commands: only while the line is
--- a "/" and the start of a name (nothing once a space follows).
function M.complete_items(s, base)
  local prefix = base:match('^/([a-z0-9_:-]*)$')
  if not prefix then
    return {}
  end
  local items = {}
  for _, c in ipairs(s.commands or {}) do
    local name = fmt.str(c.name)
    if name:sub(1, #prefix) == prefix then
      local hint = fmt.val(c.argumentHint)
      items[#items + 1] = {
        word = '/' .. name .. ' ',
        abbr = '/' .. name .. (hint and (' ' .. hint) or ''),
        menu = ('%s (%s)'):format(fmt.str(c.description), fmt.str(c.source)),
      }
    end
  end
  table.sort(items, function(a, b)
    return a.word < b.word
  end)
  return items
end

--- 'completefunc' of the input buffer: a slash command while the first line is "/" and a name, else the
--- editor's @path completion (threadline.editor.complete).
local mode = 'slash'
function M.completefunc(findstart, base)
  local s = require('threadline').current()
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.fn.col('.') - 1)
    mode = (vim.fn.line('.') == 1 and line:match('^/[a-z0-9_:-]*$')) and 'slash' or 'editor'
    if mode == 'slash' then
      return 0
    end
  end
  if mode == 'editor' then
    return require('threadline.editor').complete(findstart, base)
  end
  if s then
    M.load_commands(s) -- for next time: a command file added since
  end
  return s and M.complete_items(s, base) or {}
end

-- --- :ThreadlineContext's breakdown --------------------------------------------------------------------

local PARTS = {
  { 'systemPrompt', 'system prompt', 'S' },
  { 'projectContext', 'project context', 'P' },
  { 'toolDefinitions', 'tool definitions', 'T' },
  { 'summary', 'summary', 'U' },
  { 'messages', 'messages', 'M' },
  { 'placeholders', 'placeholders', 'p' },
  { 'free', 'free', '.' },
}
M.BAR_WIDTH = 60

--- The window as a bar of BAR_WIDTH cells, each part drawn with its letter (a part above zero gets a cell).
function M.bar(b, width)
  width = width or M.BAR_WIDTH
  local total = 0
  for _, p in ipairs(PARTS) do
    total = total + (tonumber(fmt.val(b[p[1]])) or 0)
  end
  total = math.max(total, 1)
  local cells, used = {}, 0
  for _, p in ipairs(PARTS) do
    local v = tonumber(fmt.val(b[p[1]])) or 0
    local n = math.floor(v * width / total)
    if v > 0 and n == 0 then
      n = 1
    end
    cells[p[1]], used = n, used + n
  end
  while used > width do -- take the excess from the largest part
    local big
    for _, p in ipairs(PARTS) do
      if not big or cells[p[1]] > cells[big] then
        big = p[1]
      end
    end
    cells[big], used = cells[big] - 1, used - 1
  end
  cells.free = cells.free + (width - used)
  local out = {}
  for _, p in ipairs(PARTS) do
    out[#out + 1] = string.rep(p[3], cells[p[1]])
  end
  return '[' .. table.concat(out) .. ']'
end

--- The breakdown and compaction lines of a getContextView result (empty when the server sends none).
function M.breakdown_lines(v)
  local b = fmt.val(v.breakdown)
  if type(b) ~= 'table' then
    return {}
  end
  local window = math.max(tonumber(fmt.val(v.contextWindowTokens)) or 0, 1)
  local lines = { 'breakdown: ' .. M.bar(b) }
  for _, p in ipairs(PARTS) do
    local value = tonumber(fmt.val(b[p[1]])) or 0
    lines[#lines + 1] = ('  %s %-17s %8d %3d%%'):format(p[3], p[2], value, math.floor(value * 100 / window))
  end
  local compactions = fmt.val(v.compactions) or {}
  lines[#lines + 1] = ('compactions: %d'):format(#compactions)
  for _, c in ipairs(compactions) do
    local focus = fmt.val(c.focus)
    lines[#lines + 1] = ('  #%s %s %s %s %s -> %s%s'):format(fmt.str(c.eventId), fmt.str(c.at), fmt.str(c.trigger),
      fmt.str(c.mode), fmt.str(c.beforeTokens), fmt.str(c.afterTokens), focus and ('  focus: ' .. focus) or '')
  end
  local plan = fmt.val(v.plan)
  if type(plan) == 'table' then
    local plan_lines = M.plan_lines(plan.entries)
    table.remove(plan_lines, 1)
    vim.list_extend(lines, plan_lines)
  end
  return lines
end

return M
