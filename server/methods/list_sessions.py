"""``listSessions {cwd?, limit?, includeChildren?}`` -> ``{sessions}``, newest first."""

from typing import Any

import msgspec

from protocol.messages import ListSessionsParams, ListSessionsResult, SessionInfo, SessionTotals
from server.methods.registry import reads
from server.methods.update_session import policy
from server.project.workspace import normalized_folder
from server.services.core import Core


@reads("listSessions")
async def list_sessions(core: Core, params: ListSessionsParams) -> ListSessionsResult:
    cwd = None if params.cwd is None else str(normalized_folder(params.cwd))
    sessions = await core.store.list_sessions(cwd, params.limit, params.include_children)
    totals = await core.store.usage_totals([s.id for s in sessions])
    return ListSessionsResult(
        sessions=[
            SessionInfo(
                session_id=s.id,
                title=s.title,
                cwd=s.cwd,
                created_at=s.created_at,
                updated_at=s.updated_at,
                message_count=s.message_count,
                parent_session_id=s.parent_id,
                parent_tool_call_id=s.parent_tool_call_id,
                model=s.model,
                approval_policy=policy(s.approval_policy),
                totals=_totals(totals.get(s.id)),
                running=_running(core, s.id),
                waiting_for_approval=core.clients.waiting_for_approval(s.id),
                attached_clients=core.clients.attached(s.id),
            )
            for s in sessions
        ]
    )


def _running(core: Core, session_id: str) -> bool:
    handle = core.sessions.peek(session_id)
    return handle is not None and handle.turns.is_running()


def _totals(summed: dict[str, Any] | None) -> SessionTotals | None:
    if summed is None:
        return None
    cost = summed["costUsd"]
    return SessionTotals(
        input_tokens=summed["inputTokens"],
        output_tokens=summed["outputTokens"],
        cached_input_tokens=summed["cachedInputTokens"],
        cache_write_tokens=summed["cacheWriteTokens"],
        cost_usd=msgspec.UNSET if cost is None else round(cost, 6),
    )
