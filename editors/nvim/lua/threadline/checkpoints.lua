--- Issue 18 in Neovim: edits reviewed in a diff tab (`diffthis`), and rewinding a turn's file changes (and, by
--- choice, the conversation: a fork that ends before the turn). rewindFiles reports each path as restored,
--- unchanged, conflicted (changed outside Threadline: kept unless forced) or notRestorable (over a size cap).
local fmt = require('threadline.format')

local M = {}

local WORDS = {
  unchanged = 'already as before',
  conflicted = 'changed outside Threadline: kept unless you overwrite it',
  notRestorable = 'cannot be restored (over the checkpoint size cap)',
}

--- One line per path of a rewindFiles result, then its note.
function M.describe(result)
  local lines = {}
  for _, f in ipairs(fmt.val(result.files) or {}) do
    local what = WORDS[fmt.str(f.status)]
    if fmt.str(f.status) == 'restored' then
      what = fmt.str(f.change) == 'removed' and 'remove (the turn created it)' or 'restore'
    end
    lines[#lines + 1] = ('%s: %s'):format(fmt.str(f.path), what or fmt.str(f.status))
  end
  if #lines == 0 then
    lines[1] = 'No file changes were recorded from this turn on.'
  end
  lines[#lines + 1] = fmt.str(result.note)
  return lines
end

local function scratch(name, text, ft)
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, fmt.lines(text))
  local bo = vim.bo[buf]
  bo.buftype, bo.bufhidden, bo.swapfile, bo.modifiable = 'nofile', 'wipe', false, false
  if ft and ft ~= '' then
    bo.filetype = ft
  end
  return buf
end

--- Open `diff` ({path, oldText, newText}) in a new tab: before | after, in diff mode, read-only. `keys` maps
--- buffer-local normal-mode keys to functions (both sides). Returns close().
function M.show_diff(diff, label, keys)
  local path = fmt.str(diff.path)
  local ft = vim.filetype.match({ filename = path }) or ''
  vim.cmd('tabnew')
  local tab = vim.api.nvim_get_current_tabpage()
  local after = scratch(('threadline-diff://%s (%s, after)'):format(path, label), diff.newText, ft)
  vim.api.nvim_win_set_buf(0, after)
  vim.cmd('diffthis')
  vim.cmd('leftabove vsplit')
  local before = scratch(('threadline-diff://%s (before)'):format(path), diff.oldText, ft)
  vim.api.nvim_win_set_buf(0, before)
  vim.cmd('diffthis')
  local function close()
    if vim.api.nvim_tabpage_is_valid(tab) and #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd(('tabclose %d'):format(vim.api.nvim_tabpage_get_number(tab)))
    end
  end
  for _, buf in ipairs({ before, after }) do
    vim.keymap.set('n', 'q', close, { buffer = buf, desc = 'Threadline: close the diff' })
    for key, fn in pairs(keys or {}) do
      vim.keymap.set('n', key, function()
        fn()
        close()
      end, { buffer = buf, desc = 'Threadline diff action' })
    end
  end
  vim.b[after].threadline_diff = path
  return close
end

--- A resumed session's applied edits (readEvents fileDiff: {toolCallId, path, diff?}) for :ThreadlineDiff and its
--- one-key rewind, as live toolResult updates would have left them. An edit too large to have been kept has no diff.
function M.remember_stored(s, events)
  for _, ev in ipairs(events or {}) do
    local p = fmt.val(ev.payload) or {}
    local diff = fmt.val(p.diff)
    if fmt.str(ev.kind) == 'fileDiff' and type(diff) == 'table' then
      s.diffs = s.diffs or {}
      s.diffs[fmt.str(p.toolCallId)] = { diff = diff, turn_id = fmt.str(ev.turnId) }
      s.last_diff = fmt.str(p.toolCallId)
    end
  end
end

--- Rewind session s from turn_id on (tool_call_id: from that edit on). A dry run first: vim.ui.select
--- (kind "threadline_rewind") offers files, files and conversation (not for one edit), overwriting conflicts.
--- Calls back with (err, result, choice); choice "conversation" also forks and resumes the fork.
function M.rewind(tl, s, turn_id, tool_call_id, callback)
  callback = callback or function() end
  local base = { sessionId = s.id, toTurnId = turn_id, toolCallId = tool_call_id }
  tl.request('rewindFiles', vim.tbl_extend('force', base, { dryRun = true }), function(err, plan)
    if err then
      s.chat:error(err)
      return callback(err)
    end
    local conflicted = 0
    for _, f in ipairs(fmt.val(plan.files) or {}) do
      conflicted = conflicted + (fmt.str(f.status) == 'conflicted' and 1 or 0)
    end
    local items = { 'files' }
    if not tool_call_id then
      items[#items + 1] = 'conversation'
    end
    if conflicted > 0 then
      items[#items + 1] = 'force'
    end
    local labels = {
      files = 'Rewind files',
      conversation = 'Rewind files and conversation (a fork before the turn)',
      force = ('Rewind files, overwriting %d changed outside Threadline'):format(conflicted),
    }
    vim.ui.select(items, {
      prompt = 'Threadline: rewind to before this ' .. (tool_call_id and 'edit' or 'turn') .. '?\n'
        .. table.concat(M.describe(plan), '\n'),
      kind = 'threadline_rewind',
      format_item = function(i)
        return labels[i]
      end,
    }, function(choice)
      if not choice then
        return callback(nil, nil, nil)
      end
      tl.request('rewindFiles', vim.tbl_extend('force', base, { force = choice == 'force' or nil }), function(e, r)
        if e then
          s.chat:error(e)
          return callback(e)
        end
        s.chat:append(vim.list_extend({ '', '── files rewound' }, vim.tbl_map(function(l)
          return '  ' .. l
        end, M.describe(r))))
        if choice ~= 'conversation' then
          return callback(nil, r, choice)
        end
        M.fork_before(tl, s, turn_id, function(fe, forked)
          callback(fe, r, choice, forked)
        end)
      end)
    end)
  end)
end

--- Fork the session so it ends just before turn_id, and resume the fork (the turn's text goes to the input).
function M.fork_before(tl, s, turn_id, callback)
  tl.request('listCheckpoints', { sessionId = s.id }, function(err, r)
    local seq
    for _, t in ipairs((not err and fmt.val(r.turns)) or {}) do
      if fmt.str(t.turnId) == turn_id then
        seq = tonumber(fmt.val(t.seq))
      end
    end
    if not seq then
      return callback(err or { message = 'no such turn' })
    end
    tl.request('forkSession', { sessionId = s.id, atSeq = math.max(0, seq - 1) }, function(fe, f)
      if fe then
        s.chat:error(fe)
        return callback(fe)
      end
      tl.resume(f.sessionId, { cwd = s.cwd }, function(re)
        callback(re, f.sessionId)
      end)
    end)
  end)
end

--- Pick a turn of s (vim.ui.select, kind "threadline_turn"), newest first; calls back with its id.
function M.pick_turn(tl, s, callback)
  tl.request('listCheckpoints', { sessionId = s.id }, function(err, r)
    if err then
      s.chat:error(err)
      return
    end
    local turns = {}
    for _, t in ipairs(fmt.val(r.turns) or {}) do
      table.insert(turns, 1, t)
    end
    vim.ui.select(turns, {
      prompt = 'Threadline: rewind to before which turn?',
      kind = 'threadline_turn',
      format_item = function(t)
        local files = {}
        for _, f in ipairs(fmt.val(t.files) or {}) do
          files[#files + 1] = (fmt.str(f.change) == 'created' and '+' or '~') .. fmt.str(f.path)
        end
        return ('message %s · %s · %s'):format(fmt.str(t.seq), fmt.str(t.createdAt):sub(1, 19),
          #files > 0 and table.concat(files, ' ') or 'no file changes')
      end,
    }, function(t)
      if t then
        callback(fmt.str(t.turnId))
      end
    end)
  end)
end

return M
