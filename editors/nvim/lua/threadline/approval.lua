--- requestApproval: ask through vim.ui.select and always answer. Runs inside the coroutine in which
--- vim.lsp.rpc calls server-request handlers, so an asynchronous picker can take its time.
local fmt = require('threadline.format')

local M = {}

local OPTIONS = { 'allowOnce', 'allowAlways', 'reject' }

--- Approvals waiting for the picker: id -> { session_id, resolve(choice) }.
M.pending = {}
local next_id = 0

--- Answer "reject" to every open approval of a session (on cancel), so the server is never left waiting on a
--- picker that does not call back.
function M.reject_all(session_id)
  for id, p in pairs(M.pending) do
    if session_id == nil or p.session_id == session_id then
      M.pending[id] = nil
      p.resolve(nil)
    end
  end
end

--- Ask the user; returns the decision string ("reject" when dismissed or unknown).
function M.ask(params, chat)
  local options = {}
  for _, o in ipairs(fmt.val(params.options) or OPTIONS) do
    options[#options + 1] = o
  end
  if #options == 0 then
    options = vim.deepcopy(OPTIONS)
  end
  if chat then
    chat:approval(params)
  end
  local prompt = ('Threadline: %s — %s'):format(fmt.str(params.tool), fmt.str(params.title))
  if fmt.val(params.outsideSandbox) == true then
    prompt = 'OUTSIDE THE SANDBOX! ' .. prompt
  end
  -- A cut title ends with "…": the picker then shows the detail too (the whole command, the model's quoted
  -- reason), so what is approved is what was read, chat open or not
  local title = fmt.str(params.title)
  if title:sub(-#'…') == '…' then
    prompt = prompt .. '\n' .. table.concat(fmt.lines(params.detail), '\n')
  end

  local co, is_main = coroutine.running()
  local can_yield = co ~= nil and not is_main
  local done, choice, waiting = false, nil, false
  next_id = next_id + 1
  local pending_id = next_id
  local function on_choice(item)
    if done then
      return
    end
    M.pending[pending_id] = nil
    done, choice = true, item
    if waiting then
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end
  M.pending[pending_id] = { session_id = fmt.val(params.sessionId), resolve = on_choice }
  local close_diff
  local diff = fmt.val(params.diff)
  if type(diff) == 'table' and require('threadline.config').options.diff_review ~= false then
    -- The proposed change side by side; its keys answer too (whichever answers first wins).
    local ok_diff, close = pcall(require('threadline.checkpoints').show_diff, diff, 'proposed', {
      ga = function() on_choice('allowOnce') end,
      gA = function() on_choice('allowAlways') end,
      gr = function() on_choice('reject') end,
    })
    close_diff = ok_diff and close or nil
    M.last_diff = ok_diff and diff or nil
  end
  local ok, err = pcall(vim.ui.select, options, {
    prompt = prompt,
    kind = 'threadline_approval',
    format_item = fmt.decision,
  }, on_choice)
  if not ok then
    vim.notify('threadline: vim.ui.select failed: ' .. tostring(err), vim.log.levels.ERROR)
    on_choice(nil)
  end
  if not done then
    if not can_yield then
      -- No coroutine to wait in (older Neovim): refuse rather than block the editor.
      on_choice(nil)
    else
      waiting = true
      coroutine.yield()
    end
  end
  local decision = 'reject'
  for _, o in ipairs(options) do
    if o == choice then
      decision = o
    end
  end
  if close_diff then
    pcall(close_diff)
  end
  if chat then
    chat:approval_decision(decision)
  end
  return decision
end

return M
