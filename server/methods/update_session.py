"""``updateSession {sessionId, model?, approvalPolicy?, sandbox?}`` -> the session's settings now.

The model and policy apply from the session's next model call (a running turn's too): the loop asks for them before
each call. The sandbox mode applies from the session's next turn (a turn confines its commands one way)."""

from pathlib import Path

from protocol.messages import UpdateSessionParams, UpdateSessionResult
from server.methods.registry import mutates
from server.services import models, sandbox, sessions
from server.services.core import Core


@mutates("updateSession")
async def update_session(core: Core, params: UpdateSessionParams) -> UpdateSessionResult:
    session = await sessions.update_session(core, params.session_id, params.model, params.approval_policy)
    status = await sandbox.apply_mode(core, session.id, Path(session.cwd), params.sandbox)
    return UpdateSessionResult(
        session_id=session.id,
        model=session.model,
        approval_policy=sessions.policy(session.approval_policy),
        context_window_tokens=models.context_window(core.settings, session),
        sandbox=status,
    )
