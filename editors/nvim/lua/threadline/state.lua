--- The plugin's state, shared by its modules (threadline, threadline.server): the server connection, the sessions
--- by id (sessionId -> { id, cwd, chat, running, context = { used, size }, pending_user = {} }) and the current one.
return {
  transport = nil,
  sessions = {},
  current = nil,
  configured = false,
}
