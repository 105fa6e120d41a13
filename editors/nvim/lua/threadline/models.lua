--- The model picker (:ThreadlineModel): listModels' models in vim.ui.select with provider, window and prices;
--- the pick switches the current session with updateSession, from its next model call (the statusline's window
--- follows), or, with no session yet, is the model of the next session created.
local fmt = require('threadline.format')

local M = {}

local next_model = nil -- picked with no session: the next createSession's model

local function tl()
  return require('threadline')
end

local function usd(x)
  return ('$%.2f'):format(x)
end

--- "$3.00 in · $0.30 cached · $3.75 cache write · $15.00 out per M tokens", or "no price known".
function M.price_text(price)
  price = fmt.val(price)
  if type(price) ~= 'table' then
    return 'no price known'
  end
  local parts = { usd(price.input) .. ' in' }
  if type(fmt.val(price.cachedInput)) == 'number' then
    table.insert(parts, usd(price.cachedInput) .. ' cached')
  end
  if type(fmt.val(price.cacheWrite)) == 'number' then
    table.insert(parts, usd(price.cacheWrite) .. ' cache write')
  end
  table.insert(parts, usd(price.output) .. ' out')
  return table.concat(parts, ' · ') .. ' per M tokens'
end

--- One picker line: "claude  anthropic · claude-sonnet-4-5 · 200k window · $3.00 in · … per M tokens".
function M.format(m)
  local name = fmt.val(m.name)
  return ('%s  %s · %s · %s window · %s'):format(name or 'default', fmt.str(m.provider), fmt.str(m.model),
    fmt.tokens(tonumber(fmt.val(m.contextWindowTokens)) or 0), M.price_text(m.price))
end

--- The model the next createSession asks for (once), or nil for the server's default.
function M.take_next()
  local name = next_model
  next_model = nil
  return name
end

--- Apply a pick (a model name, or nil for the server's default) to the current session, or keep it for the next.
local function apply(name, callback)
  local s = tl().current()
  if not s then
    next_model = name
    return callback(nil, { model = name })
  end
  tl().request('updateSession', { sessionId = s.id, model = name or vim.NIL }, function(err, r)
    if err then
      s.chat:error(err)
      return callback(err)
    end
    s.model = fmt.val(r.model)
    require('threadline.updates').set_usage(s, nil, r.contextWindowTokens)
    s.chat:append({ '', ('── model: %s (%s window), from the next model call'):format(s.model or 'default',
      fmt.tokens(tonumber(fmt.val(r.contextWindowTokens)) or 0)) })
    callback(nil, r)
  end)
end

--- pick(name?, callback(err, result)): with a name ("default" for the server's default), switch to it; without,
--- choose one from listModels.
function M.pick(name, callback)
  callback = callback or function() end
  if name and name ~= '' then
    return apply(name ~= 'default' and name or nil, callback)
  end
  tl().request('listModels', vim.empty_dict(), function(err, r)
    if err then
      vim.notify('threadline: listModels failed: ' .. fmt.str(err.message), vim.log.levels.ERROR)
      return callback(err)
    end
    local items = {}
    if type(fmt.val(r.default)) == 'table' then
      table.insert(items, r.default)
    end
    vim.list_extend(items, fmt.val(r.models) or {})
    if #items == 0 then
      vim.notify('threadline: no models configured; add [models.NAME] to config.toml', vim.log.levels.WARN)
      return callback({ message = 'no models' })
    end
    vim.ui.select(items, { prompt = 'Threadline model', kind = 'threadline_model', format_item = M.format },
      function(choice)
        if not choice then
          return callback({ message = 'not changed' })
        end
        apply(fmt.val(choice.name), callback)
      end)
  end)
end

return M
