--- Pure text helpers: no buffers, no RPC. Shared by the chat renderer and the views.
local M = {}

--- Fold-body prefix: lines starting with it are folded (see chat.foldexpr).
M.FOLD = '  │ '

--- JSON null arrives as vim.NIL; treat it like nil.
function M.val(v)
  if v == vim.NIL then
    return nil
  end
  return v
end

--- A string for display: nil/vim.NIL -> '', tables -> compact JSON.
function M.str(v)
  v = M.val(v)
  if v == nil then
    return ''
  end
  if type(v) == 'table' then
    local ok, s = pcall(vim.json.encode, v)
    return ok and s or vim.inspect(v)
  end
  return tostring(v)
end

--- Split text into lines (a trailing newline does not add an empty line).
function M.lines(text)
  text = M.str(text)
  local out = vim.split(text, '\n', { plain = true })
  if #out > 1 and out[#out] == '' then
    table.remove(out)
  end
  for i, l in ipairs(out) do
    out[i] = l:gsub('\r$', '')
  end
  return out
end

--- Prefix every line of text.
function M.prefixed(prefix, text)
  local out = {}
  for _, l in ipairs(M.lines(text)) do
    out[#out + 1] = prefix .. l
  end
  return out
end

--- B-CACHE-5: "42% cached" for the share of a request's input the provider served from its prompt cache;
--- nil when the provider reported no cache figure (or there was no input).
function M.cached_share(cached, input)
  cached, input = tonumber(M.val(cached)), tonumber(M.val(input))
  if not cached or not input or input <= 0 then
    return nil
  end
  return ('%d%% cached'):format(math.min(100, math.floor(cached * 100 / input)))
end

--- The session's cost: "$0.0123" under a dollar (four decimals), "$12.35" from there; nil when no price is
--- known (the server then sends no cost: absent, never $0).
function M.cost(usd)
  usd = tonumber(M.val(usd))
  if not usd or usd ~= usd or usd < 0 then
    return nil
  end
  return usd >= 1 and ('$%.2f'):format(usd) or ('$%.4f'):format(usd)
end

--- 950 -> "950", 12345 -> "12.3k", 64000 -> "64k", 1250000 -> "1.25M".
function M.tokens(n)
  n = tonumber(M.val(n))
  if not n then
    return '?'
  end
  if n < 1000 then
    return tostring(math.floor(n))
  end
  local value, unit = n / 1000, 'k'
  if n >= 1000000 then
    value, unit = n / 1000000, 'M'
  end
  local s = value >= 100 and string.format('%.0f', value) or string.format('%.1f', value)
  s = s:gsub('%.0$', '')
  return s .. unit
end

--- Tool arguments on one line, cut to max characters.
function M.arguments(args, max)
  max = max or 160
  args = M.val(args)
  local s
  if type(args) == 'string' then
    local ok, decoded = pcall(vim.json.decode, args)
    s = ok and type(decoded) == 'table' and M.str(decoded) or args
  else
    s = M.str(args)
  end
  s = s:gsub('\n', '\\n')
  if #s > max then
    s = s:sub(1, max - 1) .. '…'
  end
  return s
end

--- A tool call's status as the chat shows it; a status not listed is shown as it came.
M.STATUS = { running = '… running', ok = '✓ ok', error = '✗ error', denied = '⊘ denied' }

--- The mark before a tool's name: the web tools, which reach outside from the server (B-WEB-1), get a globe.
M.TOOL_ICONS = { web_fetch = '🌐', web_search = '🌐' }

--- A tool call's line in the chat: its icon and name, its arguments in short and its status.
function M.tool_line(tool, args, status)
  local icon = M.TOOL_ICONS[M.str(tool)] or '⚙'
  return ('  %s %s %s  %s'):format(icon, M.str(tool), M.arguments(args), M.STATUS[status] or status)
end

local DECISIONS = {
  allowOnce = 'Allow once',
  allowAlways = 'Allow always (this session)',
  reject = 'Reject',
}

function M.decision(d)
  return DECISIONS[d] or tostring(d)
end

return M
