--- Settings given to require("threadline").setup(), merged over the defaults.
local M = {}

M.defaults = {
  -- The server command (a list, as for vim.system) and extra environment variables for it.
  cmd = { 'threadline', 'serve' },
  cmd_env = {},
  -- Use the per-user daemon (`threadline connect`, started on demand) so turns outlive Neovim and
  -- :ThreadlineAttach can follow sessions started elsewhere. Only changes the default cmd.
  use_daemon = false,
  -- Working directory of the server process (nil: Neovim's).
  cmd_cwd = nil,
  -- initializationOptions.provider: { baseUrl = ..., apiKey = ..., model = ..., contextWindowTokens = ... }.
  -- Unset fields fall back to the server's environment (THREADLINE_*) and $THREADLINE_HOME/config.toml.
  provider = nil,
  -- "ask" | "autoEdit" | "auto" | "plan"; nil keeps the server's default ("ask").
  approval_policy = nil,
  chat = {
    -- "right" | "left" | "bottom" | "tab" | "current": where :Threadline opens the chat window.
    position = 'right',
    width = 80,
    height = 20,
    -- Height of the input window under the chat window (0: no input window; use :ThreadlineSend).
    input_height = 3,
  },
  -- Lines per readArtifact page in :ThreadlineArtifact.
  artifact_page_lines = 500,
  -- Approvals of edit_file/write_file open the proposed change in a diff tab (ga allow, gA allow always, gr reject).
  diff_review = true,
  -- Typing while a turn runs: "ask" (vim.ui.select: Steer, the default, or Queue), "steer" or "queue".
  while_running = 'ask',
  -- Editor grounding (issue 34): the agent asks Neovim's diagnostics and language servers (get_diagnostics,
  -- find_definition, find_references, workspace_symbols, and the problems an edit introduced).
  editor = {
    enabled = true,
    diagnostics_after_edit = true,
    settle_ms = 1500, -- how long the server waits for a language server to see an edit
    request_timeout_ms = 5000, -- per language-server request
  },
  -- Milliseconds to wait for a clean shutdown when Neovim exits.
  shutdown_timeout = 1000,
}

M.options = vim.deepcopy(M.defaults)

function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  -- Lists replace rather than merge.
  if opts and opts.cmd then
    M.options.cmd = vim.deepcopy(opts.cmd)
  end
  if type(M.options.cmd) == 'string' then
    M.options.cmd = { M.options.cmd }
  end
  return M.options
end

--- The server command to run. When cmd is the default and `threadline` is not on PATH, a plugin loaded from a
--- Threadline checkout (editors/nvim) uses the checkout's .venv/bin/threadline.
function M.resolve_cmd()
  local cmd = M.options.cmd
  local sub = M.options.use_daemon and 'connect' or 'serve'
  if vim.deep_equal(cmd, M.defaults.cmd) then
    if vim.fn.executable(cmd[1]) ~= 1 then
      local here = debug.getinfo(1, 'S').source:gsub('^@', '')
      local repo = vim.fn.fnamemodify(here, ':p:h:h:h:h:h')
      local venv = repo .. '/.venv/bin/threadline'
      if vim.fn.executable(venv) == 1 then
        return { venv, sub }
      end
    end
    return { cmd[1], sub }
  end
  return cmd
end

--- initializationOptions for initialize.
function M.init_options()
  local o = M.options
  local init = {}
  if o.provider and next(o.provider) then
    init.provider = o.provider
  end
  if o.approval_policy then
    init.approvalPolicy = o.approval_policy
  end
  if next(init) == nil then
    return vim.empty_dict()
  end
  return init
end

return M
