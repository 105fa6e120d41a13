--- The connection to one server process: spawn over vim.lsp.rpc, the initialize handshake, requests that
--- always get a callback (also when the process dies), and server->client requests that always get an answer.
local M = {}

local Transport = {}
Transport.__index = Transport

M.SERVER_EXITED = 'ServerExited'

--- vim.lsp.rpc.start changed signature in 0.10: (cmd, dispatchers, extra) vs 0.9's (cmd, args, dispatchers, extra).
local function rpc_start(cmd, dispatchers, extra)
  if vim.fn.has('nvim-0.10') == 1 then
    return vim.lsp.rpc.start(cmd, dispatchers, extra)
  end
  return vim.lsp.rpc.start(cmd[1], vim.list_slice(cmd, 2), dispatchers, extra)
end

local function main_loop(fn)
  if vim.in_fast_event() then
    vim.schedule(fn)
  else
    fn()
  end
end

--- Start a server.
--- opts: cmd, env, cwd, init_options, on_notification(method, params), on_request(method, params) -> result,
--- on_exit(code, signal, expected), on_ready(err, init_result)
function M.start(opts)
  local self = setmetatable({
    opts = opts,
    pending = {}, -- request id -> callback
    queue = {}, -- requests made before initialize finished
    ready = false,
    closed = false,
    stopping = false,
  }, Transport)

  local dispatchers = {
    notification = function(method, params)
      main_loop(function()
        if opts.on_notification then
          opts.on_notification(method, params)
        end
      end)
    end,
    server_request = function(method, params)
      local ok, result, err = pcall(opts.on_request, method, params)
      if not ok then
        -- A broken handler must still answer; for approvals the safe answer is "reject".
        vim.schedule(function()
          vim.notify('threadline: ' .. method .. ' handler failed: ' .. tostring(result), vim.log.levels.ERROR)
        end)
        if method == 'requestApproval' then
          return { decision = 'reject' }
        end
        return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError, tostring(result))
      end
      if result == nil and err == nil then
        return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound, method)
      end
      return result, err
    end,
    on_exit = function(code, signal)
      main_loop(function()
        self:_closed(code, signal)
      end)
    end,
    on_error = function(code, err)
      main_loop(function()
        vim.notify(
          ('threadline: RPC error %s: %s'):format(vim.lsp.rpc.client_errors[code] or code, vim.inspect(err)),
          vim.log.levels.WARN
        )
      end)
    end,
  }

  local env = opts.env
  if env and next(env) == nil then
    env = nil
  end
  local ok, client = pcall(rpc_start, opts.cmd, dispatchers, { cwd = opts.cwd, env = env })
  if not ok then
    self.closed = true
    return nil, tostring(client)
  end
  self.client = client
  self:_initialize()
  return self
end

function Transport:_initialize()
  local params = {
    processId = vim.fn.getpid(),
    clientInfo = { name = 'threadline.nvim', version = tostring(vim.version()) },
    rootUri = vim.NIL,
    capabilities = self.opts.capabilities or vim.empty_dict(),
    initializationOptions = self.opts.init_options or vim.empty_dict(),
  }
  self:_send('initialize', params, function(err, result)
    if err then
      if self.opts.on_ready then
        self.opts.on_ready(err)
      end
      self:_fail_queue(err)
      self:stop()
      return
    end
    self.client.notify('initialized', vim.empty_dict())
    self.ready = true
    self.server_info = result
    local queue = self.queue
    self.queue = {}
    for _, q in ipairs(queue) do
      self:_send(q.method, q.params, q.callback)
    end
    if self.opts.on_ready then
      self.opts.on_ready(nil, result)
    end
  end)
end

function Transport:_send(method, params, callback)
  if self.closed then
    callback({ code = -32099, message = 'the Threadline server is not running', data = { code = M.SERVER_EXITED } })
    return
  end
  local slot = {}
  local ok, id = self.client.request(method, params or vim.empty_dict(), function(err, result)
    if slot.id then
      self.pending[slot.id] = nil
    end
    if slot.done then
      return
    end
    slot.done = true
    callback(err, result)
  end)
  if not ok then
    callback({ code = -32099, message = 'could not send ' .. method .. ': the server is gone', data = { code = M.SERVER_EXITED } })
    return
  end
  slot.id = id
  slot.callback = callback
  self.pending[id] = slot
  return id
end

--- request(method, params, callback(err, result)); waits for initialize when needed.
function Transport:request(method, params, callback)
  callback = callback or function() end
  if not self.ready and not self.closed then
    table.insert(self.queue, { method = method, params = params, callback = callback })
    return
  end
  return self:_send(method, params, callback)
end

function Transport:notify(method, params)
  if self.closed then
    return false
  end
  return self.client.notify(method, params or vim.empty_dict())
end

function Transport:is_running()
  return not self.closed
end

function Transport:_fail_queue(err)
  local queue = self.queue
  self.queue = {}
  for _, q in ipairs(queue) do
    q.callback(err)
  end
end

function Transport:_closed(code, signal)
  if self.closed and self.exit_reported then
    return
  end
  self.closed = true
  self.exit_reported = true
  local gone = {
    code = -32099,
    message = ('the Threadline server exited (code %s%s)'):format(
      tostring(code),
      (signal and signal ~= 0) and (', signal ' .. signal) or ''
    ),
    data = { code = M.SERVER_EXITED },
  }
  local pending = self.pending
  self.pending = {}
  for _, slot in pairs(pending) do
    if not slot.done then
      slot.done = true
      slot.callback(gone)
    end
  end
  self:_fail_queue(gone)
  if self.opts.on_exit then
    self.opts.on_exit(code, signal, self.stopping)
  end
end

--- Clean shutdown (shutdown request, exit notification); kills the process if it does not stop in time.
--- With wait = true (VimLeavePre) it blocks up to timeout ms.
function Transport:stop(wait, timeout)
  if self.closed then
    return
  end
  self.stopping = true
  timeout = timeout or 1000
  local shut = false
  if self.ready then
    pcall(self.client.request, 'shutdown', vim.NIL, function()
      shut = true
      pcall(self.client.notify, 'exit', vim.NIL)
    end)
  else
    shut = true
  end
  local function kill()
    if not self.closed then
      pcall(self.client.terminate)
    end
  end
  if wait then
    vim.wait(timeout, function()
      return shut
    end, 10)
    if not shut then
      kill()
    end
    vim.wait(timeout, function()
      return self.closed or self.client.is_closing()
    end, 10)
    kill()
  else
    vim.defer_fn(kill, timeout)
  end
end

return M
