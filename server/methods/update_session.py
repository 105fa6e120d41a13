"""``updateSession {sessionId, model?, approvalPolicy?}`` -> the session's settings now.

Both apply from the session's next model call (a running turn's too): the loop asks for them before each call."""

from typing import cast

import msgspec

from protocol.messages import ApprovalPolicy, UpdateSessionParams, UpdateSessionResult
from server.agent.models import checked_model_name
from server.agent.service import context_window
from server.rpc import method
from server.runtime import Runtime


@method("updateSession")
async def update_session(rt: Runtime, params: UpdateSessionParams) -> UpdateSessionResult:
    session = await rt.store.get_session(params.session_id)
    if params.model is not msgspec.UNSET:  # checked before anything is written: a bad call changes nothing
        await rt.store.set_model(session.id, checked_model_name(rt.settings, params.model))
    if params.approval_policy is not msgspec.UNSET:
        await rt.store.set_approval_policy(session.id, params.approval_policy)
    session = await rt.store.get_session(session.id)
    return UpdateSessionResult(
        session_id=session.id,
        model=session.model,
        approval_policy=policy(session.approval_policy),
        context_window_tokens=context_window(rt, session),
    )


def policy(value: str | None) -> ApprovalPolicy | None:
    """A stored approval policy as the wire type (the store checks it is one of the policies when it writes)."""
    return cast("ApprovalPolicy | None", value)
