--- requestApproval: ask through vim.ui.select and always answer. Runs inside the coroutine in which
--- vim.lsp.rpc calls server-request handlers, so an asynchronous picker can take its time.
local fmt = require('threadline.format')

local M = {}

local OPTIONS = { 'allowOnce', 'allowAlways', 'reject' }

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

  local co, is_main = coroutine.running()
  local can_yield = co ~= nil and not is_main
  local done, choice, waiting = false, nil, false
  local function on_choice(item)
    if done then
      return
    end
    done, choice = true, item
    if waiting then
      vim.schedule(function()
        coroutine.resume(co)
      end)
    end
  end
  local ok, err = pcall(vim.ui.select, options, {
    prompt = prompt,
    kind = 'threadline_approval',
    format_item = fmt.decision,
  }, on_choice)
  if not ok then
    vim.notify('threadline: vim.ui.select failed: ' .. tostring(err), vim.log.levels.ERROR)
    done, choice = true, nil
  end
  if not done then
    if not can_yield then
      -- No coroutine to wait in (older Neovim): refuse rather than block the editor.
      done, choice = true, nil
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
  if chat then
    chat:approval_decision(decision)
  end
  return decision
end

return M
