--- Turns in the current session: submit (steer or queue while one runs), compact, rewind, diff and cancel.
--- threadline (init.lua) re-exports them as its public API; the server connection and sessions stay there.
local config = require('threadline.config')
local fmt = require('threadline.format')
local updates = require('threadline.updates')

local M = {}

local function tl()
  return require('threadline')
end

--- A request about session s: an error is shown in its chat, a result goes to on_result (optional); callback
--- gets (err, result) either way.
local function session_request(s, method, params, callback, on_result)
  tl().request(method, params, function(err, r)
    if err then
      s.chat:error(err)
    elseif on_result then
      on_result(r)
    end
    callback(err, r)
  end)
end

--- submit(text): submits a turn in the current session (opening one first if there is none).
function M.submit(text, callback)
  callback = callback or function() end
  text = fmt.str(text)
  if vim.trim(text) == '' then
    callback({ message = 'empty message' })
    return
  end
  local s = tl().current()
  if not s then
    tl().open({}, function(err)
      if err then
        callback(err)
      else
        M.submit(text, callback)
      end
    end)
    return
  end
  if s.running then
    -- Typing while a turn runs: steer it (the default) or queue a turn after it.
    local mode = config.options.while_running
    if mode == 'steer' or mode == 'queue' then
      return (mode == 'steer' and M.steer or M.queue)(text, callback)
    end
    vim.ui.select({ 'steer', 'queue' }, {
      prompt = 'Threadline: a turn is running',
      kind = 'threadline_busy',
      format_item = function(i)
        return i == 'steer' and 'Steer: the model reads it after the current tool' or 'Queue: run it after this turn'
      end,
    }, function(choice)
      if choice then
        (choice == 'steer' and M.steer or M.queue)(text, callback)
      else
        callback({ message = 'not sent' })
      end
    end)
    return
  end
  M._run_turn(s, text, false, callback)
end

--- The submitTurn request of a turn (queue: run after the running one).
function M._run_turn(s, text, queue, callback)
  local token = {}
  if not queue then
    s.active, s.running, s.turn_id = token, true, nil
  end
  s.queued = (s.queued or 0) + (queue and 1 or 0)
  table.insert(s.pending_user, text)
  s.chat:user(text)
  local context = require('threadline.editor').take() -- :ThreadlineAddSelection's items (issue 34)
  local params = { sessionId = s.id, text = text, queue = queue or nil, context = context }
  tl().request('submitTurn', params, function(err, r)
    if queue then
      s.queued = s.queued - 1
    end
    if s.active == token then
      s.active = nil
      if s.queued == 0 then -- a queued turn keeps the session running (turnCompleted ends it)
        s.running = false
      end
    end
    if err then
      for i, p in ipairs(s.pending_user) do
        if p == text then
          table.remove(s.pending_user, i)
          break
        end
      end
      -- A server crash is reported once, by on_exit.
      local data = fmt.val(err.data)
      if not (type(data) == 'table' and data.code == require('threadline.transport').SERVER_EXITED) then
        s.chat:error(err)
      end
      callback(err)
      return
    end
    local command = fmt.val(r.command)
    if type(command) == 'table' then -- a built-in slash command, answered without a turn (issue 33)
      s.chat:notice(command.name, command.output)
    end
    local usage = fmt.val(r.usage)
    if type(usage) == 'table' then
      updates.set_usage(s, usage.contextTokens, usage.contextWindowTokens)
    end
    local turn_id = fmt.val(r.turnId)
    if turn_id and not s.completed[turn_id] then
      -- No turnCompleted notification arrived for this turn; report its end from the result.
      s.chat:turn_completed(fmt.str(r.stopReason), fmt.val(r.error))
    end
    callback(nil, r)
  end)
end

--- steer(text): add text to the running turn of the current session (read at its next model call).
function M.steer(text, callback)
  callback = callback or function() end
  local s = tl().current()
  if not s then
    return callback({ message = 'no session' })
  end
  table.insert(s.pending_user, fmt.str(text))
  s.chat:user(text, nil, true)
  session_request(s, 'steerTurn', { sessionId = s.id, text = text }, callback)
end

--- queue(text): run a turn right after the running one (at once when idle).
function M.queue(text, callback)
  callback = callback or function() end
  local s = tl().current()
  if not s then
    return M.submit(text, callback)
  end
  M._run_turn(s, fmt.str(text), s.running, callback)
end

--- compact(focus): compact now; focus (optional) is kept verbatim in the summary until the next compaction.
function M.compact(focus, callback)
  callback = callback or function() end
  local s = tl().current()
  if not s then
    return callback({ message = 'no session' })
  end
  focus = focus and vim.trim(focus) or ''
  local params = { sessionId = s.id, focus = focus ~= '' and focus or nil }
  session_request(s, 'compactSession', params, callback, function(r)
    s.compacting = nil -- its contextCompacting is answered here when there was nothing to compact
    if not r.compacted then
      s.chat:append({ '', '── nothing to compact yet: all of it is in the recent tail' })
    end
  end)
end

--- rewind({ turn_id?, tool_call_id? }): rewind files (and, by choice, the conversation) to before a turn: the
--- given one, the one under the cursor in the chat buffer, or one picked from listCheckpoints.
function M.rewind(opts, callback)
  opts = opts or {}
  local s = tl().current()
  if not s then
    return (callback or function() end)({ message = 'no session' })
  end
  local cp = require('threadline.checkpoints')
  local turn = opts.turn_id
  if not turn and vim.api.nvim_get_current_buf() == s.chat.buf then
    turn = s.chat:turn_at(vim.api.nvim_win_get_cursor(0)[1])
  end
  if turn then
    return cp.rewind(tl(), s, turn, opts.tool_call_id, callback)
  end
  cp.pick_turn(tl(), s, function(picked)
    cp.rewind(tl(), s, picked, nil, callback)
  end)
end

--- diff(tool_call_id?): the applied change of an edit (default: the last one) in a diff tab; gR rewinds it.
function M.diff(tool_call_id)
  local s = tl().current()
  local entry = s and s.diffs and s.diffs[tool_call_id ~= nil and tool_call_id ~= '' and tool_call_id or s.last_diff]
  if not entry then
    vim.notify('threadline: no edit with a diff in this session yet', vim.log.levels.WARN)
    return
  end
  local id = tool_call_id ~= nil and tool_call_id ~= '' and tool_call_id or s.last_diff
  return require('threadline.checkpoints').show_diff(entry.diff, 'applied', {
    gR = function()
      M.rewind({ turn_id = entry.turn_id, tool_call_id = id })
    end,
  })
end

--- cancel(): cancels the running turn of the current session.
function M.cancel(callback)
  callback = callback or function() end
  local s = tl().current()
  if not s or not tl()._transport() then
    callback({ message = 'no session' })
    return
  end
  -- An approval still waiting on its picker is answered "reject" first, so the turn can stop.
  require('threadline.approval').reject_all(s.id)
  session_request(s, 'cancelTurn', { sessionId = s.id }, callback)
end

return M
