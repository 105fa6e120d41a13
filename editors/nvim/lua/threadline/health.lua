--- :checkhealth threadline — Neovim version, server command, provider settings.
local M = {}

local health = vim.health
-- 0.9 spells them report_*.
local ok_ = health.ok or health.report_ok
local warn_ = health.warn or health.report_warn
local error_ = health.error or health.report_error
local info_ = health.info or health.report_info
local start_ = health.start or health.report_start

local function check_version()
  start_('Neovim')
  local v = vim.version()
  local s = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    ok_('Neovim ' .. s .. ' (0.10+ required for full support; tested on 0.12)')
  elseif vim.fn.has('nvim-0.9') == 1 then
    warn_('Neovim ' .. s .. ': 0.9 is handled through the older vim.lsp.rpc.start signature but is untested',
      { 'Upgrade to Neovim 0.10 or newer' })
  else
    error_('Neovim ' .. s .. ' is too old: Threadline needs 0.10 or newer (0.9 at the very least)')
  end
end

local function check_cmd(opts)
  start_('Server command')
  local cmd = require('threadline.config').resolve_cmd() or {}
  if #cmd == 0 then
    error_('setup({ cmd = ... }) is empty')
    return
  end
  info_('cmd: ' .. table.concat(cmd, ' '))
  if vim.fn.executable(cmd[1]) ~= 1 then
    error_(("'%s' is not executable or not on PATH"):format(cmd[1]), {
      'Install the server (pip install threadline, or the repository\'s .venv/bin/threadline)',
      'or point setup({ cmd = { "/path/to/threadline", "serve" } }) at it',
    })
    return
  end
  ok_(("'%s' is executable"):format(vim.fn.exepath(cmd[1])))
  local st = require('threadline').status()
  if st.state ~= 'stopped' then
    ok_('server is running (' .. st.state .. ', session ' .. tostring(st.session_id) .. ')')
  else
    info_('server is not running (it starts with :Threadline)')
  end
end

local function setting(opts, field, env)
  local p = opts.provider or {}
  if p[field] ~= nil then
    return 'setup({ provider = { ' .. field .. ' } })', p[field]
  end
  local cmd_env = opts.cmd_env or {}
  if cmd_env[env] ~= nil then
    return 'cmd_env.' .. env, cmd_env[env]
  end
  local v = vim.env[env]
  if v ~= nil and v ~= '' then
    return '$' .. env, v
  end
end

local function check_provider(opts)
  start_('Provider settings')
  local home = (opts.cmd_env or {}).THREADLINE_HOME or vim.env.THREADLINE_HOME
  local config_toml = home and (home .. '/config.toml')
  local has_toml = config_toml and vim.fn.filereadable(config_toml) == 1
  if has_toml then
    info_('config file: ' .. config_toml)
  end
  for _, f in ipairs({
    { 'baseUrl', 'THREADLINE_BASE_URL', true },
    { 'model', 'THREADLINE_MODEL', true },
    { 'apiKey', 'THREADLINE_API_KEY', false },
    { 'contextWindowTokens', 'THREADLINE_CONTEXT_WINDOW', false },
  }) do
    local source, value = setting(opts, f[1], f[2])
    if source then
      local shown = f[1] == 'apiKey' and '(set, not shown)' or tostring(value)
      ok_(('%s = %s  [%s]'):format(f[1], shown, source))
    elseif has_toml then
      info_(('%s: not set here; %s may set it'):format(f[1], config_toml))
    elseif f[3] then
      warn_(('%s is not set'):format(f[1]), {
        ('set setup({ provider = { %s = ... } }), cmd_env.%s or $%s'):format(f[1], f[2], f[2]),
      })
    else
      info_(('%s: not set (server default)'):format(f[1]))
    end
  end
  local policy = opts.approval_policy
  if policy ~= nil and policy ~= 'ask' and policy ~= 'autoEdit' and policy ~= 'auto' and policy ~= 'plan' then
    error_('approval_policy must be "ask", "autoEdit", "auto" or "plan", not ' .. vim.inspect(policy))
  else
    ok_('approval_policy: ' .. (policy or 'server default (ask)'))
  end
end

function M.check()
  local opts = require('threadline.config').options
  check_version()
  check_cmd(opts)
  check_provider(opts)
end

return M
