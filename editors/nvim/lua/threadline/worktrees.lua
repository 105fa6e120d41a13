--- Worktree sessions (docs/WORKTREES.md): :ThreadlineWorktree NAME opens a session in a new git worktree of the
--- folder's repository; :ThreadlineWorktrees lists the worktree sessions (branch, state, diff stat) in a buffer
--- where <CR>/d opens a session's diff, m merges it, x discards it; :ThreadlineWorktreeDiff, :ThreadlineWorktreeMerge
--- and :ThreadlineWorktreeDiscard do the same for a session id (default: the current session).
local fmt = require('threadline.format')

local M = {}

local function tl()
  return require('threadline')
end

local function notify(msg, level)
  vim.notify('threadline: ' .. msg, level)
end

--- One line of the list: "SESSION  threadline/NAME  active  2 files +10 -3  1 ahead of main  title".
function M.format_item(s)
  local w = s.worktree
  return ('%s  %s  %s  %d files +%d -%d  %d ahead of %s  %s'):format(
    fmt.str(s.sessionId), fmt.str(w.branch), fmt.str(w.state), w.filesChanged, w.insertions, w.deletions,
    w.ahead, fmt.str(w.base), fmt.str(s.title))
end

--- open(name): a new session in the worktree threadline/NAME of the current folder's repository.
function M.open(name, callback)
  tl().open({ cwd = vim.fn.getcwd(), new = true, worktree = name ~= '' and name or true }, callback)
end

local function session_id(id)
  if id and id ~= '' then
    return id
  end
  local s = tl().current()
  return s and s.id or nil
end

--- list(callback(err, items)): the worktree sessions, newest first, shown in a buffer (filetype threadline_worktrees).
function M.list(callback)
  callback = callback or function() end
  tl().request('listSessions', { limit = 200, includeChildren = true }, function(err, r)
    if err then
      notify('listSessions failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      return callback(err)
    end
    local items = vim.tbl_filter(function(s)
      return type(fmt.val(s.worktree)) == 'table'
    end, fmt.val(r.sessions) or {})
    local lines = vim.tbl_map(M.format_item, items)
    if #lines == 0 then
      lines = { 'no worktree sessions (start one with :ThreadlineWorktree NAME)' }
    end
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].filetype = 'nofile', 'wipe', 'threadline_worktrees'
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modifiable = false
    local function at_cursor()
      local item = items[vim.api.nvim_win_get_cursor(0)[1]]
      return item and item.sessionId
    end
    local map = function(key, fn)
      vim.keymap.set('n', key, function()
        local id = at_cursor()
        if id then
          fn(id)
        end
      end, { buffer = buf, nowait = true })
    end
    map('<CR>', M.diff)
    map('d', M.diff)
    map('m', M.merge)
    map('x', M.discard)
    vim.cmd('botright split')
    vim.api.nvim_win_set_buf(0, buf)
    callback(nil, items, buf)
  end)
end

local function find(id, callback)
  tl().request('listSessions', { limit = 500, includeChildren = true }, function(err, r)
    if err then
      return callback(err)
    end
    for _, s in ipairs(fmt.val(r.sessions) or {}) do
      if s.sessionId == id and type(fmt.val(s.worktree)) == 'table' then
        return callback(nil, s)
      end
    end
    callback({ message = 'no worktree session ' .. fmt.str(id) })
  end)
end

--- diff(id, callback(err, buf)): the worktree's files against its base (committed or not), in a diff buffer.
function M.diff(id, callback)
  callback = callback or function() end
  id = session_id(id)
  find(id, function(err, s)
    if err then
      notify(fmt.str(err.message), vim.log.levels.WARN)
      return callback(err)
    end
    local w = s.worktree
    local args = vim.fn.isdirectory(w.path) == 1 and { 'git', '-C', w.path, 'diff', w.base }
      or { 'git', '-C', vim.fn.getcwd(), 'diff', w.base .. '...' .. w.branch }
    vim.system(args, { text = true }, vim.schedule_wrap(function(done)
      local buf = vim.api.nvim_create_buf(false, true)
      vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].filetype = 'nofile', 'wipe', 'diff'
      local text = done.code == 0 and done.stdout or ('git diff failed: ' .. (done.stderr or ''))
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n', { trimempty = true }))
      vim.bo[buf].modifiable = false
      vim.cmd('tab split')
      vim.api.nvim_win_set_buf(0, buf)
      callback(nil, buf)
    end))
  end)
end

--- merge(id, strategy, callback(err, result)): mergeWorktree; a conflict is listed, the checkout left as it was.
function M.merge(id, strategy, callback)
  callback = callback or function() end
  local params = { sessionId = session_id(id) }
  if strategy and strategy ~= '' then
    params.strategy = strategy
  end
  tl().request('mergeWorktree', params, function(err, r)
    if err then
      notify('not merged: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      return callback(err)
    end
    if r.merged then
      notify('merged' .. (fmt.val(r.commit) and (' (' .. r.commit:sub(1, 12) .. ')') or ''))
    else
      notify('not merged, these files conflict (the checkout is as it was): '
        .. table.concat(fmt.val(r.conflicts) or {}, ', '), vim.log.levels.WARN)
    end
    callback(nil, r)
  end)
end

--- discard(id, callback(err, result)): discardWorktree (the branch is kept; the session stays readable).
function M.discard(id, callback)
  callback = callback or function() end
  tl().request('discardWorktree', { sessionId = session_id(id) }, function(err, r)
    if err then
      notify('discard failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      return callback(err)
    end
    notify(r.discarded and 'worktree discarded' or 'already discarded')
    callback(nil, r)
  end)
end

return M
