-- Threadline user commands. The modules load on first use.
if vim.g.loaded_threadline then
  return
end
vim.g.loaded_threadline = true

local function tl()
  return require('threadline')
end

local cmd = vim.api.nvim_create_user_command

cmd('Threadline', function(o)
  tl().open({ cwd = o.args ~= '' and o.args or nil, new = o.bang })
end, { nargs = '?', bang = true, complete = 'dir', desc = 'Threadline: open the chat (! starts a new session)' })

cmd('ThreadlineSend', function(o)
  tl().submit(o.args)
end, { nargs = '+', desc = 'Threadline: send a message in the current session' })

cmd('ThreadlineCancel', function()
  tl().cancel()
end, { desc = 'Threadline: cancel the running turn' })

cmd('ThreadlineSessions', function(o)
  require('threadline.views').sessions({ all = o.bang })
end, { bang = true, desc = 'Threadline: list and resume sessions (! lists every folder)' })

cmd('ThreadlineContext', function()
  require('threadline.views').context()
end, { desc = "Threadline: show what the model would see next (getContextView)" })

cmd('ThreadlineArtifact', function(o)
  require('threadline.views').artifact(o.args)
end, { nargs = 1, desc = 'Threadline: open a tool-output artifact read-only' })

cmd('ThreadlineMcp', function()
  require('threadline.views').mcp()
end, { desc = "Threadline: the session's MCP servers and their state (listMcpServers)" })

cmd('ThreadlineStop', function()
  tl().stop(false)
end, { desc = 'Threadline: stop the server' })
