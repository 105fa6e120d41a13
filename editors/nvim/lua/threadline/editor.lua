--- Editor grounding (issue 34): the server's editor/* requests answered from Neovim's own language features
--- (vim.diagnostic, the buffers' attached LSP clients), the capability advertised at initialize, and what the
--- user points at: :ThreadlineAddSelection and @-completion of files in the input buffer.
local M = {}

local function opts()
  return require('threadline.config').options.editor or {}
end

--- capabilities.experimental.threadline.editor, or nil when the user turned editor grounding off.
function M.capabilities()
  local o = opts()
  if o.enabled == false then
    return nil
  end
  return {
    diagnostics = true,
    definition = true,
    references = true,
    workspaceSymbols = true,
    diagnosticsAfterEdit = o.diagnostics_after_edit ~= false,
    settleMs = o.settle_ms or 1500,
  }
end

local function timeout_ms()
  return opts().request_timeout_ms or 5000
end

--- The buffer of a file URI, loaded (its filetype set, so FileType autocommands attach language servers) and in
--- step with the file on disk when it has no unsaved changes (the agent may just have written it).
local function buffer(uri)
  local bufnr = vim.uri_to_bufnr(uri)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    vim.fn.bufload(bufnr)
    vim.bo[bufnr].buflisted = true
    if vim.bo[bufnr].filetype == '' then
      local ft = vim.filetype.match({ buf = bufnr })
      if ft then
        vim.bo[bufnr].filetype = ft
      end
    end
  elseif not vim.bo[bufnr].modified then
    local name = vim.api.nvim_buf_get_name(bufnr)
    local ok, disk = pcall(vim.fn.readfile, name)
    if ok and not vim.deep_equal(disk, vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) then
      vim.api.nvim_buf_call(bufnr, function()
        vim.cmd('silent! edit!')
      end)
    end
  end
  return bufnr
end

local function clients(bufnr, method)
  local found = vim.lsp.get_clients({ bufnr = bufnr, method = method })
  if #found == 0 then
    -- a buffer just loaded: its language server attaches from a FileType autocommand, give it a moment
    vim.wait(timeout_ms() / 2, function()
      return #vim.lsp.get_clients({ bufnr = bufnr, method = method }) > 0
    end, 50)
    found = vim.lsp.get_clients({ bufnr = bufnr, method = method })
  end
  return found
end

local function lsp_range(d)
  local lsp = d.user_data and d.user_data.lsp
  if lsp and lsp.range then
    return lsp.range
  end
  return {
    start = { line = d.lnum, character = d.col },
    ['end'] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
  }
end

local function diagnostics(params)
  local items = {}
  local function add(bufnr)
    local uri = vim.uri_from_bufnr(bufnr)
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      local code = d.code
      if type(code) ~= 'string' and type(code) ~= 'number' then
        code = nil
      end
      items[#items + 1] = {
        uri = uri,
        range = lsp_range(d),
        severity = d.severity or 1,
        message = d.message or '',
        source = d.source,
        code = code,
      }
    end
  end
  local uris = params and params.uris
  if type(uris) == 'table' and #uris > 0 then
    for _, uri in ipairs(uris) do
      add(buffer(uri))
    end
  else
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) and vim.api.nvim_buf_get_name(bufnr) ~= '' then
        add(bufnr)
      end
    end
  end
  return { items = items }
end

local function as_location(loc)
  if loc.targetUri then -- a LocationLink
    return { uri = loc.targetUri, range = loc.targetSelectionRange or loc.targetRange }
  end
  if loc.uri and loc.range then
    return { uri = loc.uri, range = loc.range }
  end
  return nil
end

local function locations(method, params)
  local lsp_method = method == 'editor/definition' and 'textDocument/definition' or 'textDocument/references'
  local bufnr = buffer(params.uri)
  if #clients(bufnr, lsp_method) == 0 then
    return nil, ('no language server attached to %s answers %s'):format(params.uri, lsp_method)
  end
  local request = { textDocument = { uri = params.uri }, position = params.position }
  if lsp_method == 'textDocument/references' then
    request.context = { includeDeclaration = true }
  end
  local answers = vim.lsp.buf_request_sync(bufnr, lsp_method, request, timeout_ms())
  local found = {}
  for _, answer in pairs(answers or {}) do
    local result = answer.result
    if type(result) == 'table' then
      if result.uri or result.targetUri then
        result = { result }
      end
      for _, loc in ipairs(result) do
        found[#found + 1] = as_location(loc)
      end
    end
  end
  return { locations = found }
end

local function symbols(params)
  local found, seen = {}, {}
  for _, client in ipairs(vim.lsp.get_clients({ method = 'workspace/symbol' })) do
    if not seen[client.id] then
      seen[client.id] = true
      local answer = client:request_sync('workspace/symbol', { query = params.query or '' }, timeout_ms())
      for _, sym in ipairs(answer and answer.result or {}) do
        local loc = sym.location or {}
        if loc.uri then
          found[#found + 1] = {
            name = sym.name,
            kind = sym.kind,
            uri = loc.uri,
            range = loc.range or { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } },
            containerName = sym.containerName,
          }
        end
      end
    end
  end
  return { symbols = found }
end

--- Answer one editor/* request: result, or nil and an error message.
function M.answer(method, params)
  params = params or {}
  if method == 'editor/diagnostics' then
    return diagnostics(params)
  elseif method == 'editor/definition' or method == 'editor/references' then
    return locations(method, params)
  elseif method == 'editor/workspaceSymbols' then
    return symbols(params)
  end
  return nil, 'unknown method ' .. method
end

-- --- what the user points at ---------------------------------------------------------------------------

--- Context items waiting for the next submitTurn.
M.pending = {}

--- :ThreadlineAddSelection: the visual selection (or the given lines) as a selection context item.
function M.add_selection(line1, line2)
  local bufnr = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' then
    return nil, 'the buffer has no file'
  end
  local lines = vim.api.nvim_buf_get_lines(bufnr, line1 - 1, line2, false)
  local last = lines[#lines] or ''
  local item = {
    kind = 'selection',
    uri = vim.uri_from_fname(vim.fn.fnamemodify(name, ':p')),
    text = table.concat(lines, '\n'),
    range = {
      start = { line = line1 - 1, character = 0 },
      ['end'] = { line = line2 - 1, character = vim.str_utfindex(last, 'utf-16') },
    },
  }
  M.pending[#M.pending + 1] = item
  return item
end

--- The pending context for a submitTurn (taken: the next turn starts with none), or nil.
function M.take()
  if #M.pending == 0 then
    return nil
  end
  local items = M.pending
  M.pending = {}
  return items
end

--- completefunc of the input buffer: files under the working directory after an '@'.
function M.complete(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.fn.col('.') - 1)
    local at = line:match('.*()@[%w%._%-/]*$')
    return at and at or -3 -- the column after '@' (0-based: at is 1-based on the '@'); -3: cancel
  end
  local words = {}
  for _, path in ipairs(vim.fn.globpath('.', '**/' .. base .. '*', false, true)) do
    path = path:gsub('^%./', '')
    if vim.fn.isdirectory(path) == 0 and not path:match('^%.git/') then
      words[#words + 1] = path
      if #words >= 200 then
        break
      end
    end
  end
  table.sort(words)
  return words
end

return M
