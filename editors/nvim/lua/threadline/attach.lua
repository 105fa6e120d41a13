--- :ThreadlineAttach: a session the daemon runs (docs/DAEMON.md) shown in a chat buffer like a local one. attachSession
--- replays what this client has not seen (after the last `seq` it saw) and then streams live updates; an approval
--- still waiting is asked again. Switching to another session or hiding the chat buffer sends detachSession.
local fmt = require('threadline.format')

local M = {}

local function tl()
  return require('threadline')
end

local function notify(msg, level)
  vim.notify('threadline: ' .. msg, level or vim.log.levels.INFO)
end

--- "title — folder · running · waiting for approval · 2 attached" for a listSessions item.
function M.format_item(item)
  local parts = { ('%s — %s'):format(fmt.str(fmt.val(item.title) or item.sessionId), fmt.str(fmt.val(item.cwd))) }
  if fmt.val(item.waitingForApproval) == true then
    parts[#parts + 1] = 'waiting for approval'
  elseif fmt.val(item.running) == true then
    parts[#parts + 1] = 'running'
  end
  local attached = tonumber(fmt.val(item.attachedClients)) or 0
  if attached > 0 then
    parts[#parts + 1] = ('%d attached'):format(attached)
  end
  return table.concat(parts, ' · ')
end

--- pick(callback(err, session_id)): choose among listSessions (running and waiting ones first) and attach.
function M.pick(callback)
  callback = callback or function() end
  tl().request('listSessions', { limit = 100 }, function(err, r)
    if err then
      notify('listSessions failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      callback(err)
      return
    end
    local items = vim.deepcopy(fmt.val(r.sessions) or {})
    if #items == 0 then
      notify('no sessions')
      callback(nil, nil)
      return
    end
    local function busy(it)
      return (fmt.val(it.waitingForApproval) == true or fmt.val(it.running) == true) and 1 or 0
    end
    local order = {}
    for i, it in ipairs(items) do
      order[it] = i
    end
    table.sort(items, function(a, b)
      if busy(a) ~= busy(b) then
        return busy(a) > busy(b)
      end
      return order[a] < order[b] -- listSessions' order (most recently updated first)
    end)
    vim.ui.select(items, { prompt = 'Threadline: attach to a session', kind = 'threadline_attach', format_item = M.format_item }, function(choice)
      if not choice then
        callback(nil, nil)
        return
      end
      M.attach(choice.sessionId, { cwd = fmt.val(choice.cwd) }, callback)
    end)
  end)
end

--- The stored history in a fresh chat buffer (readTranscript), when the updates since the last one seen are no
--- longer kept (truncated).
local function reload(s, callback)
  local items = {}
  local function page(after)
    tl().request('readTranscript', { sessionId = s.id, afterSeq = after, limit = 200 }, function(err, r)
      if err then
        s.chat:error(err)
        callback()
        return
      end
      vim.list_extend(items, fmt.val(r.items) or {})
      local next_seq = fmt.val(r.nextSeq)
      if next_seq and #(fmt.val(r.items) or {}) > 0 then
        page(next_seq)
        return
      end
      M.fresh_chat(s)
      s.chat:transcript(items, {})
      s.chat:append({ '', ('── reloaded: %d messages (the updates since the last one seen are gone)'):format(#items) })
      tl().show(s)
      callback()
    end)
  end
  page(nil)
end

--- Give s an empty chat buffer in place of its old one (whose content a full replay or a reload would repeat).
function M.fresh_chat(s)
  local old = s.chat
  s.chat = require('threadline.chat').new(s.id, s.cwd)
  M.watch(s)
  if old:valid() then
    for _, win in ipairs(vim.fn.win_findbuf(old.buf)) do
      vim.api.nvim_win_set_buf(win, s.chat.buf)
    end
    pcall(vim.api.nvim_buf_delete, old.buf, { force = true })
  end
  pcall(vim.api.nvim_buf_set_name, s.chat.buf, 'threadline://' .. s.id)
end

--- Detach when the chat buffer is hidden or deleted (a later :Threadline or :ThreadlineAttach attaches again).
function M.watch(s)
  local buf = s.chat.buf
  vim.api.nvim_create_autocmd({ 'BufHidden', 'BufDelete' }, {
    buffer = buf,
    callback = function()
      vim.schedule(function()
        if s.attached and s.chat.buf == buf and vim.fn.win_findbuf(buf)[1] == nil then
          M.detach(s)
        end
      end)
    end,
  })
end

--- attach(session_id, { cwd = ... }, callback(err, session_id)): attach this connection to the session and show it.
--- A session seen before asks for the updates after the last `seq` it saw; a new one for every kept update.
function M.attach(session_id, opts, callback)
  opts = opts or {}
  callback = callback or function() end
  local s = tl()._session(session_id)
  if not s or not s.chat:valid() then
    s = tl()._new_session(session_id, opts.cwd)
    M.watch(s)
  elseif not s.seq then -- nothing numbered seen from this server: everything is replayed, into an empty chat
    M.fresh_chat(s)
  end
  s.attached, s.detached = true, nil
  tl()._activate(s, opts.show)
  -- The replayed updates arrive before this answer, into the session table made above.
  tl().request('attachSession', { sessionId = session_id, sinceSeq = s.seq or 0 }, function(err, r)
    if err then
      s.attached = nil
      s.chat:error(err)
      callback(err)
      return
    end
    s.running = fmt.val(r.running) == true
    local function done()
      local state = fmt.val(r.waitingForApproval) == true and 'waiting for an approval'
        or (fmt.val(r.running) == true and 'running' or 'idle')
      s.chat:append({ '', ('── attached: %s'):format(state) })
      callback(nil, s.id)
    end
    if fmt.val(r.truncated) == true then
      s.seq = tonumber(fmt.val(r.seq)) or s.seq
      reload(s, done)
    else
      done()
    end
  end)
end

--- Send detachSession for s (its updates stop; its turns go on in the daemon).
function M.detach(s, callback)
  callback = callback or function() end
  if not s.attached then
    callback(nil)
    return
  end
  s.attached, s.detached = nil, true
  local t = tl()._transport()
  if not t or not t:is_running() then
    callback(nil)
    return
  end
  t:request('detachSession', { sessionId = s.id }, function(err)
    if not err and s.chat:valid() then
      s.chat:append({ '', '── detached' })
    end
    callback(err)
  end)
end

return M
