--- Window layout: the chat window and, under it, the input window ("prompt at the bottom").
local M = {}

--- A window of this tab showing buf, else one showing another buffer of the same filetype (another
--- session's chat or input), which is then switched to buf.
local function find_win(buf)
  local same_ft
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local wbuf = vim.api.nvim_win_get_buf(win)
    if wbuf == buf then
      return win
    end
    if not same_ft and vim.bo[wbuf].filetype == vim.bo[buf].filetype then
      same_ft = win
    end
  end
  if same_ft then
    vim.api.nvim_win_set_buf(same_ft, buf)
  end
  return same_ft
end

local function open_chat_window(buf, opts)
  local pos = opts.position or 'right'
  if pos == 'current' then
    vim.api.nvim_win_set_buf(0, buf)
  elseif pos == 'tab' then
    vim.cmd('tab sbuffer ' .. buf)
  elseif pos == 'bottom' then
    vim.cmd(('botright %dsplit'):format(opts.height or 20))
    vim.api.nvim_win_set_buf(0, buf)
  elseif pos == 'left' then
    vim.cmd(('topleft %dvsplit'):format(opts.width or 80))
    vim.api.nvim_win_set_buf(0, buf)
  else
    vim.cmd(('botright %dvsplit'):format(opts.width or 80))
    vim.api.nvim_win_set_buf(0, buf)
  end
  return vim.api.nvim_get_current_win()
end

--- The input buffer of a session: <CR> (normal) or <C-s> (normal/insert) sends it, then it is cleared.
local function input_buffer(s)
  if s.input_buf and vim.api.nvim_buf_is_valid(s.input_buf) then
    return s.input_buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, 'threadline-input://' .. s.id)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'threadline_input'
  vim.bo[buf].completefunc = "v:lua.require'threadline.editor'.complete" -- @path: <C-x><C-u>
  local function send()
    local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
    if vim.trim(text) == '' then
      return
    end
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
    local tl = require('threadline')
    if tl.current() ~= s then
      tl.resume(s.id, { show = false })
    end
    tl.submit(text)
  end
  vim.keymap.set('n', '<CR>', send, { buffer = buf, desc = 'Threadline: send' })
  vim.keymap.set({ 'n', 'i' }, '<C-s>', function()
    vim.cmd('stopinsert')
    send()
  end, { buffer = buf, desc = 'Threadline: send' })
  vim.keymap.set('n', '<C-c>', function()
    require('threadline').cancel()
  end, { buffer = buf, desc = 'Threadline: cancel the running turn' })
  s.input_buf = buf
  return buf
end

function M.show(s, opts)
  local win = find_win(s.chat.buf)
  if not win then
    win = open_chat_window(s.chat.buf, opts)
  end
  require('threadline.chat').setup_window(win)
  vim.keymap.set('n', '<C-c>', function()
    require('threadline').cancel()
  end, { buffer = s.chat.buf, desc = 'Threadline: cancel the running turn' })
  local last = vim.api.nvim_buf_line_count(s.chat.buf)
  pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  if (opts.input_height or 0) > 0 then
    local ibuf = input_buffer(s)
    local iwin = find_win(ibuf)
    if not iwin then
      vim.api.nvim_set_current_win(win)
      vim.cmd(('belowright %dsplit'):format(opts.input_height))
      iwin = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(iwin, ibuf)
      vim.wo[iwin].winfixheight = true
      vim.wo[iwin].number = false
      vim.wo[iwin].relativenumber = false
      vim.wo[iwin].signcolumn = 'no'
      vim.wo[iwin].winbar = 'Threadline — <CR>/<C-s> send, <C-c> cancel'
    end
    vim.api.nvim_set_current_win(iwin)
  else
    vim.api.nvim_set_current_win(win)
  end
end

return M
