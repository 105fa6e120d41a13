--- A resumed session's history in its chat buffer: the readTranscript items in order, with each turn's stored
--- compactions (readEvents) after its messages and a :ThreadlineDiff line on each tool result whose applied diff
--- was stored (fileDiff). Live updates are drawn by chat.lua; this draws what the store kept, through the same
--- chat methods, so a resumed session reads like one followed live.
local fmt = require('threadline.format')

local M = {}

--- Append the history of items (readTranscript) and events (readEvents) to chat (a chat.lua Chat).
function M.render(chat, items, events)
  local open = {} -- toolCallId -> tool name
  local seen_system = false
  local compactions = {} -- turnId -> { payload, ... }
  local diffs = {} -- toolCallId -> true when its applied diff was stored (fileDiff)
  for _, ev in ipairs(events or {}) do
    local payload = fmt.val(ev.payload) or {}
    if fmt.str(ev.kind) == 'fileDiff' then
      diffs[fmt.str(payload.toolCallId)] = type(fmt.val(payload.diff)) == 'table' or nil
    else
      local turn = fmt.str(ev.turnId)
      compactions[turn] = compactions[turn] or {}
      table.insert(compactions[turn], payload)
    end
  end
  local turn
  local marked = {} -- turns whose first user message is shown (later ones of a turn were steered in)
  local function flush()
    for _, payload in ipairs(turn and compactions[turn] or {}) do
      chat:compacted(payload)
    end
  end
  for _, it in ipairs(items) do
    local role = fmt.str(it.role)
    local item_turn = fmt.val(it.turnId)
    if item_turn and item_turn ~= turn then
      flush()
      turn = item_turn
    end
    if role == 'user' then
      local first = item_turn and not marked[item_turn]
      if item_turn then
        marked[item_turn] = true
      end
      -- what was typed when the message is a slash command's expansion (issue 33)
      chat:user(fmt.val(it.typed) or it.content, first and item_turn or nil, item_turn ~= nil and not first)
    elseif role == 'assistant' then
      local content = fmt.str(it.content)
      if content ~= '' then
        chat:_assistant_header()
        chat:append(fmt.lines(content))
      end
      for _, tc in ipairs(fmt.val(it.toolCalls) or {}) do
        local fn = fmt.val(tc['function']) or {}
        open[fmt.str(tc.id)] = fn.name
        chat:append({ fmt.tool_line(fn.name, fn.arguments, 'called') })
      end
      if fmt.str(it.status) == 'interrupted' then
        chat:append({ '  [interrupted]' })
      end
    elseif role == 'tool' then
      local name = open[fmt.str(it.toolCallId)] or fmt.str(it.name)
      local status = fmt.STATUS[fmt.str(it.toolStatus)]
      chat:append({ ('  ↳ %s result%s'):format(name ~= '' and name or 'tool', status and ('  ' .. status) or '') })
      local body = fmt.prefixed(fmt.FOLD, it.content)
      chat:append(#body > 0 and body or { fmt.FOLD })
      if diffs[fmt.str(it.toolCallId)] then
        chat:append({ ('    diff: :ThreadlineDiff %s (gR there rewinds this edit)'):format(fmt.str(it.toolCallId)) })
      end
    elseif role == 'system' then
      chat:append({ seen_system and '── system message' or '── system prompt' })
      seen_system = true
      local body = fmt.prefixed(fmt.FOLD, it.content)
      chat:append(#body > 0 and body or { fmt.FOLD })
    end
  end
  flush()
  chat.assistant_header = false
end

return M
