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

cmd('ThreadlineSteer', function(o)
  tl().steer(o.args)
end, { nargs = '+', desc = 'Threadline: add a message to the running turn (read after the current tool)' })

cmd('ThreadlineQueue', function(o)
  tl().queue(o.args)
end, { nargs = '+', desc = 'Threadline: run a message as a turn right after the running one' })

cmd('ThreadlineCompact', function(o)
  tl().compact(o.args)
end, { nargs = '?', desc = 'Threadline: compact now, keeping an optional focus verbatim' })

cmd('ThreadlineRewind', function()
  tl().rewind()
end, { desc = 'Threadline: rewind files (or files and conversation) to before the turn under the cursor' })

cmd('ThreadlineDiff', function(o)
  tl().diff(o.args)
end, { nargs = '?', desc = 'Threadline: show an applied edit as a diff (gR rewinds it)' })

cmd('ThreadlineCancel', function()
  tl().cancel()
end, { desc = 'Threadline: cancel the running turn' })

cmd('ThreadlineSessions', function(o)
  require('threadline.views').sessions({ all = o.bang })
end, { bang = true, desc = 'Threadline: list and resume sessions (! lists every folder)' })

cmd('ThreadlineAttach', function(o)
  if o.args ~= '' then
    require('threadline').attach(o.args)
  else
    require('threadline.views').attach({ all = o.bang })
  end
end, { nargs = '?', bang = true, desc = 'Threadline: attach to a session the daemon runs (! lists every session)' })

cmd('ThreadlineContext', function()
  require('threadline.views').context()
end, { desc = "Threadline: show what the model would see next (getContextView)" })

cmd('ThreadlineArtifact', function(o)
  require('threadline.views').artifact(o.args)
end, { nargs = 1, desc = 'Threadline: open a tool-output artifact read-only' })

cmd('ThreadlineMcp', function()
  require('threadline.views').mcp()
end, { desc = "Threadline: the session's MCP servers and their state (listMcpServers)" })

cmd('ThreadlineModel', function(o)
  require('threadline.models').pick(o.args)
end, { nargs = '?', desc = "Threadline: pick the session's model (listModels; applies from the next model call)" })

cmd('ThreadlineStop', function()
  tl().stop(false)
end, { desc = 'Threadline: stop the server' })

cmd('ThreadlineAddSelection', function(o)
  local item, err = require('threadline.editor').add_selection(o.line1, o.line2)
  if not item then
    vim.notify('threadline: ' .. err, vim.log.levels.WARN)
  else
    vim.notify(('threadline: lines %d-%d attached to your next message'):format(o.line1, o.line2))
  end
end, { range = true, desc = 'Threadline: attach the selected lines to the next message' })

cmd('ThreadlineProcesses', function()
  require('threadline.processes').pick()
end, { desc = "Threadline: the session's background processes; pick a running one to stop it" })

cmd('ThreadlineWorktree', function(o)
  require('threadline.worktrees').open(o.args)
end, { nargs = '?', desc = 'Threadline: a new session in a new git worktree (branch threadline/NAME)' })

cmd('ThreadlineWorktrees', function()
  require('threadline.worktrees').list()
end, { desc = 'Threadline: worktree sessions with branch, state and diff stat (<CR> diff, m merge, x discard)' })

cmd('ThreadlineWorktreeDiff', function(o)
  require('threadline.worktrees').diff(o.args)
end, { nargs = '?', desc = "Threadline: a worktree session's changes against its base" })

cmd('ThreadlineWorktreeMerge', function(o)
  require('threadline.worktrees').merge(o.fargs[1], o.fargs[2])
end, { nargs = '*', desc = "Threadline: merge a worktree session's branch into its base [SESSION] [merge|squash|rebase]" })

cmd('ThreadlineWorktreeDiscard', function(o)
  require('threadline.worktrees').discard(o.args)
end, { nargs = '?', desc = "Threadline: remove a worktree session's worktree (its branch stays)" })
