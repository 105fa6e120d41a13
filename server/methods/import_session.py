"""``importSession {cwd, title?, messages}`` -> ``{sessionId, messageCount}``; stores, never calls a model."""

from protocol.messages import ImportSessionParams, ImportSessionResult
from server.methods.registry import mutates
from server.services import sessions
from server.services.core import Core


@mutates("importSession")
async def import_session(core: Core, params: ImportSessionParams) -> ImportSessionResult:
    session, count = await sessions.import_session(core, params.cwd, params.title, params.messages)
    return ImportSessionResult(session_id=session.id, message_count=count)
