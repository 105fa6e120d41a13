"""``updateSession {sessionId, model?, approvalPolicy?}`` -> the session's settings now.

Both apply from the session's next model call (a running turn's too): the loop asks for them before each call."""

from typing import cast

from protocol.messages import ApprovalPolicy, UpdateSessionParams, UpdateSessionResult
from server.methods.registry import mutates
from server.services import models, sessions
from server.services.core import Core


@mutates("updateSession")
async def update_session(core: Core, params: UpdateSessionParams) -> UpdateSessionResult:
    session = await sessions.update_session(core, params.session_id, params.model, params.approval_policy)
    return UpdateSessionResult(
        session_id=session.id,
        model=session.model,
        approval_policy=policy(session.approval_policy),
        context_window_tokens=models.context_window(core.settings, session),
    )


def policy(value: str | None) -> ApprovalPolicy | None:
    """A stored approval policy as the wire type (the store checks it is one of the policies when it writes)."""
    return cast("ApprovalPolicy | None", value)
