"""``importSession {cwd, title?, messages}`` -> ``{sessionId, messageCount}``; stores, never calls a model."""

from protocol.messages import ImportSessionParams, ImportSessionResult
from server.methods.registry import mutates
from server.services import sessions
from server.services.core import Core
from server.transcript.convert import from_openai


@mutates("importSession")
async def import_session(core: Core, params: ImportSessionParams) -> ImportSessionResult:
    messages = [from_openai(m, f"messages[{i}]") for i, m in enumerate(params.messages)]
    session = await sessions.import_session(core, params.cwd, params.title, messages)
    return ImportSessionResult(session_id=session.id, message_count=len(messages))
