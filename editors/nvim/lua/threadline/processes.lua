--- :ThreadlineProcesses: the session's background processes (listProcesses) through vim.ui.select, kind
--- "threadline_process", running ones first; picking a running one stops it (stopProcess).
local fmt = require('threadline.format')

local M = {}

function M.format_item(p)
  local state = fmt.str(p.status)
  if state == 'running' then
    state = 'running, pid ' .. fmt.str(p.pid)
  else
    state = ('%s (exit code %s)'):format(state, fmt.str(fmt.val(p.exitCode) or '?'))
  end
  return ('%s  %s  %s'):format(fmt.str(p.processId), state, fmt.str(p.command):sub(1, 120))
end

function M.pick(callback)
  callback = callback or function() end
  local tl = require('threadline')
  local s = tl.current()
  if not s then
    vim.notify('threadline: no session; run :Threadline first', vim.log.levels.WARN)
    return callback({ message = 'no session' })
  end
  tl.request('listProcesses', { sessionId = s.id }, function(err, r)
    if err then
      vim.notify('threadline: listProcesses failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      return callback(err)
    end
    local running, ended = {}, {}
    for _, p in ipairs(fmt.val(r.processes) or {}) do
      table.insert(fmt.str(p.status) == 'running' and running or ended, 1, p)
    end
    vim.list_extend(running, ended)
    if #running == 0 then
      vim.notify('threadline: this session started no background process')
      return callback(nil, nil)
    end
    vim.ui.select(running, {
      prompt = 'Threadline: stop which background process?',
      kind = 'threadline_process',
      format_item = M.format_item,
    }, function(p)
      if not p or fmt.str(p.status) ~= 'running' then
        return callback(nil, nil)
      end
      tl.request('stopProcess', { sessionId = s.id, processId = p.processId }, function(se, done)
        if se then
          vim.notify('threadline: stopProcess failed: ' .. fmt.str(se.message), vim.log.levels.ERROR)
          return callback(se)
        end
        vim.notify('threadline: ' .. M.format_item(done.process))
        callback(nil, done.process)
      end)
    end)
  end)
end

return M
