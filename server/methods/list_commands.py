"""``listCommands {sessionId?, cwd?}`` -> ``{commands}``: the slash commands a session or folder can use."""

from protocol.messages import ListCommandsParams, ListCommandsResult
from server.methods.registry import reads
from server.services import commands
from server.services.core import Core


@reads("listCommands")
async def list_commands(core: Core, params: ListCommandsParams) -> ListCommandsResult:
    return ListCommandsResult(commands=await commands.list_commands(core, params.session_id, params.cwd))
