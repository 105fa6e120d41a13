--- What the user reads of a session's state in one line: the statusline text and the sandbox label shown beside
--- the approval policy. Pure text over a status() table (threadline.init owns the state); no buffers, no RPC.
local fmt = require('threadline.format')

local M = {}

--- sandbox_label(policy, sandbox) -> "autoEdit · sandbox: workspace-write", "... · sandbox: NOT enforced (why)".
function M.sandbox_label(policy, sb)
  policy = policy or 'server default policy'
  if type(sb) ~= 'table' then
    return policy .. ' · sandbox: unknown'
  end
  if sb.mode == 'off' then
    return policy .. ' · sandbox: off'
  end
  if not sb.enforced then
    return ('%s · sandbox: NOT enforced (%s); every command asks'):format(policy, fmt.str(sb.reason))
  end
  return ('%s · sandbox: %s (%s)'):format(policy, fmt.str(sb.mode), sb.network and 'network on' or 'network off')
end

--- line(status()) -> e.g. "TL 12.3k/64k", "TL 12.3k/1000k · budget auto" (B-BUDGET-1: the context budget beside
--- the window, "budget 60k" for [context] budget = 60000), "TL 12.3k/64k · 42% cached" when the provider reports its prompt cache,
--- "TL 12.3k/64k · 42% cached · $0.0123" once a priced call reported the session's cost, " · compacting" while the
--- server compacts the context, with " …" appended while a turn runs, or "TL stopped".
function M.line(st)
  if st.state == 'stopped' then
    return 'TL stopped'
  end
  local s = ('TL %s/%s'):format(fmt.tokens(st.context.used), st.context.size and fmt.tokens(st.context.size) or '?')
  if st.context.budget_source == 'config' and st.context.budget_tokens then
    s = s .. ' · budget ' .. fmt.tokens(st.context.budget_tokens)
  elseif st.context.budget_source == 'auto' then
    s = s .. ' · budget auto'
  end
  local share = fmt.cached_share(st.context.cached, st.context.input)
  if share then
    s = s .. ' · ' .. share
  end
  local cost = fmt.cost(st.context.cost)
  if cost then
    s = s .. ' · ' .. cost
  end
  if st.sandbox and st.sandbox.mode ~= 'off' and not st.sandbox.enforced then
    s = s .. ' · sandbox NOT enforced' -- B-SBX-2: every command asks; said where the user looks
  end
  if st.compacting then
    s = s .. ' · compacting'
  end
  if st.state == 'running' then
    s = s .. ' …'
  end
  return s
end

return M
