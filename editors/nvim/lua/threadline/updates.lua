--- sessionUpdate kinds applied to a session: its chat buffer, its running state and its context meter.
local fmt = require('threadline.format')

local M = {}

local function notify(msg, level)
  vim.notify('threadline: ' .. msg, level or vim.log.levels.INFO)
end

--- B-METER-1: used is the size of the last request, replaced (never added up); size is the window.
function M.set_usage(s, used, size)
  used, size = tonumber(fmt.val(used)), tonumber(fmt.val(size))
  if used then
    s.context.used = used
  end
  if size and size > 0 then
    s.context.size = size
  end
end

--- B-CACHE-5: the last request's cached input tokens and its input tokens; cached is nil when the provider
--- reported no cache figure for that request.
function M.set_cache(s, cached, input)
  s.context.cached, s.context.input = tonumber(fmt.val(cached)), tonumber(fmt.val(input))
end

--- B-BUDGET-1: the context budget the request was planned against ("auto", or [context] budget in tokens).
function M.set_budget(s, source, tokens)
  source = fmt.val(source)
  if source == 'auto' or source == 'config' then
    s.context.budget_source, s.context.budget_tokens = source, tonumber(fmt.val(tokens))
  end
end

--- The session's cost so far in USD (usage totals.costUsd, or the stored totals of a resumed session); a figure
--- that is absent (no price known) leaves what is there.
function M.set_cost(s, usd)
  usd = tonumber(fmt.val(usd))
  if usd then
    s.context.cost = usd
  end
end

local UPDATE = {}

function UPDATE.turnStarted(s, _, turn_id)
  s.running = true
  s.turn_id = turn_id
end

function UPDATE.userMessage(s, u, turn_id)
  -- Turns submitted from here are already shown; render only text we did not send. A slash command's
  -- expansion carries what was typed (issue 33): that is what was shown.
  local text = fmt.str(fmt.val(u.typed) or u.text)
  local steered = fmt.val(u.steered) == true
  for i, pending in ipairs(s.pending_user) do
    if pending == text then
      table.remove(s.pending_user, i)
      if turn_id and not steered then
        s.chat:mark_turn(text, turn_id)
      end
      return
    end
  end
  s.chat:user(text, (not steered) and turn_id or nil, steered)
end

function UPDATE.assistantDelta(s, u)
  s.chat:stream_text('assistant', fmt.str(u.text))
end

function UPDATE.reasoningDelta(s, u)
  s.chat:stream_text('reasoning', fmt.str(u.text))
end

function UPDATE.assistantMessage(s, u)
  s.chat:assistant_message(u)
end

function UPDATE.toolCall(s, u)
  s.chat:tool_call(u)
end

function UPDATE.toolResult(s, u, turn_id)
  local diff = fmt.val(u.diff)
  if type(diff) == 'table' then -- for :ThreadlineDiff and its one-key rewind
    s.diffs = s.diffs or {}
    s.diffs[fmt.str(u.toolCallId)] = { diff = diff, turn_id = turn_id }
    s.last_diff = fmt.str(u.toolCallId)
  end
  s.chat:tool_result(u)
end

function UPDATE.artifactCreated(s, u)
  s.last_artifact = fmt.val(u.artifactId)
end

--- A compaction has started (the server sends contextCompacted when it is done): a state of the session, shown
--- by status()/statusline(), not a chat line; any later figure or the turn's end also ends it.
function UPDATE.contextCompacting(s, u)
  s.compacting = tonumber(fmt.val(u.beforeTokens)) or 0
end

function UPDATE.contextCompacted(s, u)
  s.compacting = nil
  s.chat:compacted(u)
end

function UPDATE.usage(s, u)
  s.compacting = nil
  M.set_usage(s, u.contextTokens, u.contextWindowTokens)
  M.set_cache(s, u.cachedInputTokens, u.inputTokens)
  M.set_budget(s, u.budgetSource, u.budgetTokens)
  M.set_cost(s, type(fmt.val(u.totals)) == 'table' and u.totals.costUsd or nil)
end

function UPDATE.turnCompleted(s, u, turn_id)
  s.compacting = nil
  -- The submitTurn answer of this turn may still be on its way; a newer turn may already have started.
  if turn_id == nil or turn_id == s.turn_id then
    s.running, s.active = false, nil
  end
  if turn_id then
    s.completed[turn_id] = true
  end
  s.chat:turn_completed(fmt.str(u.stopReason), fmt.val(u.error))
end

--- The agent's plan (update_plan, issue 33): kept for :ThreadlineContext and shown as a checklist in the chat.
function UPDATE.plan(s, u)
  s.plan = fmt.val(u.entries) or {}
  s.chat:append(require('threadline.plans').plan_lines(s.plan))
end

function UPDATE.notice(s, u)
  s.chat:notice(u.level, u.message)
  if fmt.str(u.level) == 'error' then
    notify(fmt.str(u.message), vim.log.levels.ERROR)
  end
end

--- A hook ran: shown when it blocked, failed or left a note (a quiet run is not a chat line).
function UPDATE.hookRun(s, u)
  local failure, decision = fmt.val(u.failure), fmt.val(u.decision)
  local note = fmt.val(u.reason) or fmt.val(u.additionalContext)
  local blocked = failure ~= nil or decision == 'block' or decision == 'deny'
  if not blocked and not note then
    return
  end
  local said = failure and ('failed (' .. fmt.str(failure) .. ')') or (decision and fmt.str(decision) or '')
  local tool = fmt.val(u.tool)
  local head = fmt.str(u.event) .. ' hook'
  if tool then
    head = head .. ' on ' .. fmt.str(tool)
  end
  if said ~= '' then
    head = head .. ' ' .. said
  end
  s.chat:notice(blocked and 'warning' or 'info', head .. ': ' .. fmt.str(note or u.command))
end

--- An MCP server of the session changed state: kept in s.mcp[name] for :ThreadlineMcp and the statusline.
function UPDATE.mcpServerStatus(s, u)
  s.mcp = s.mcp or {}
  local name = fmt.str(u.name)
  local known = s.mcp[name] or {}
  local tools = fmt.val(u.tools)
  s.mcp[name] = {
    name = name,
    state = fmt.str(u.state),
    transport = fmt.str(u.transport),
    origin = known.origin,
    reason = fmt.val(u.reason),
    tools = tools and #tools or known.tools,
  }
end

--- listMcpServers' answer for session s (replaces what was known).
function M.set_mcp_servers(s, servers)
  s.mcp = {}
  for _, srv in ipairs(fmt.val(servers) or {}) do
    local name = fmt.str(srv.name)
    s.mcp[name] = {
      name = name,
      state = fmt.str(srv.state),
      transport = fmt.str(srv.transport),
      origin = fmt.val(srv.origin),
      reason = fmt.val(srv.reason),
      tools = #(fmt.val(srv.tools) or {}),
    }
  end
end

--- Apply one update ({kind, ...}) to session s; unknown kinds are ignored (the protocol may add some).
function M.apply(s, u, turn_id)
  local handler = UPDATE[fmt.str(u.kind)]
  if handler then
    handler(s, u, turn_id)
  end
end

return M
