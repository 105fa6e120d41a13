"""``importSession {cwd, title?, messages}`` -> ``{sessionId, messageCount}``; stores, never calls a model."""

import logging

from protocol.messages import ImportSessionParams, ImportSessionResult
from server.agent.service import context_view
from server.rpc import method
from server.runtime import Runtime
from server.transcript.convert import from_openai
from server.workspace import normalized_folder

log = logging.getLogger(__name__)


@method("importSession")
async def import_session(rt: Runtime, params: ImportSessionParams) -> ImportSessionResult:
    messages = [from_openai(m, f"messages[{i}]") for i, m in enumerate(params.messages)]
    for i, msg in enumerate(messages):
        msg.validate(f"messages[{i}]")
    cwd = str(normalized_folder(params.cwd))
    session = await rt.store.create_session(cwd, params.title or "Imported session")
    await rt.store.append_messages(session.id, messages)
    try:  # read the history into its view state once, now: opening the session (here or after a restart) is fast
        await context_view(rt, session.id)
    except Exception:  # noqa: BLE001 - the import is stored; the first view will read it instead
        log.exception("preparing the view of imported session %s failed", session.id)
    return ImportSessionResult(session_id=session.id, message_count=len(messages))
