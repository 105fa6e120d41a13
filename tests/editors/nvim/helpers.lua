-- Test prelude for the headless Neovim runs (loaded by test_nvim_e2e.py before each test body).
-- Puts the plugin on 'runtimepath', configures it against the repo's server and the provider double, and
-- gives the body a few helpers. The body returns a table; it is written as JSON to $TL_RESULT, then Neovim quits.
local T = {}

T.repo = assert(vim.env.TL_REPO)
T.workdir = assert(vim.env.TL_WORKDIR)

vim.opt.runtimepath:prepend(T.repo .. '/editors/nvim')
vim.cmd('runtime plugin/threadline.lua')
vim.o.columns, vim.o.lines = 160, 50

T.tl = require('threadline')
T.tl.setup({
  cmd = { T.repo .. '/.venv/bin/threadline', 'serve' },
  cmd_env = {
    THREADLINE_HOME = vim.env.TL_HOME,
    THREADLINE_BASE_URL = vim.env.TL_PROVIDER_URL,
    THREADLINE_MODEL = 'fake-model',
    THREADLINE_API_KEY = 'test-key',
    THREADLINE_CONTEXT_WINDOW = vim.env.TL_CONTEXT_WINDOW or '64000',
  },
  approval_policy = vim.env.TL_POLICY,
})

--- Wait until cond() is truthy; raise with `what` and the chat buffer on timeout.
function T.wait(what, cond, ms)
  local ok = vim.wait(ms or 20000, function()
    return cond() and true or false
  end, 10)
  if not ok then
    error(('timed out waiting for %s; status=%s'):format(what, vim.inspect(T.tl.status())))
  end
end

function T.chat_lines()
  local s = T.tl.current()
  if not s then
    return {}
  end
  return vim.api.nvim_buf_get_lines(s.chat.buf, 0, -1, false)
end

function T.chat_text()
  return table.concat(T.chat_lines(), '\n')
end

function T.open(opts)
  T.tl.open(vim.tbl_extend('force', { cwd = T.workdir }, opts or {}))
  T.wait('a session', function()
    return T.tl.status().session_id ~= nil and T.tl.status().state == 'idle'
  end)
  return T.tl.status().session_id
end

--- Submit and wait for the turn to end.
function T.turn(text)
  T.tl.submit(text)
  T.wait('the turn to start', function()
    return T.tl.status().state == 'running'
  end, 5000)
  T.wait('the turn to end', function()
    return T.tl.status().state ~= 'running'
  end)
end

--- 1-based row of the first chat line containing `needle` (plain), or nil.
function T.find(needle, lines)
  for i, l in ipairs(lines or T.chat_lines()) do
    if l:find(needle, 1, true) then
      return i
    end
  end
end

--- foldclosed() of a chat row, evaluated in a window showing the chat buffer.
function T.foldclosed(row)
  local s = T.tl.current()
  local win = vim.fn.win_findbuf(s.chat.buf)[1]
  assert(win, 'the chat buffer is not in a window')
  return vim.api.nvim_win_call(win, function()
    return vim.fn.foldclosed(row)
  end)
end

--- Replace vim.ui.select; `choose(items, opts)` returns the item to pick (nil dismisses). Calls are recorded.
function T.stub_select(choose)
  T.selects = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = {}
    for i, it in ipairs(items) do
      labels[i] = opts.format_item and opts.format_item(it) or tostring(it)
    end
    table.insert(T.selects, { prompt = opts.prompt, kind = opts.kind, labels = labels, items = items })
    -- Answer later, as a real picker would.
    vim.defer_fn(function()
      on_choice(choose(items, opts))
    end, 50)
  end
end

function T.run(body)
  local result
  local ok, err = xpcall(function()
    result = body(T)
  end, debug.traceback)
  local out = {
    ok = ok,
    error = not ok and tostring(err) or nil,
    result = result,
    status = T.tl.status(),
    chat = T.chat_lines(),
  }
  local f = assert(io.open(vim.env.TL_RESULT, 'w'))
  f:write(vim.json.encode(out))
  f:close()
  T.tl.stop(true)
  vim.cmd('qa!')
end

return T
