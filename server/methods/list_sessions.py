"""``listSessions {cwd?, limit?, includeChildren?}`` -> ``{sessions}``, newest first."""

from typing import Any

import msgspec

from protocol.messages import ListSessionsParams, ListSessionsResult, SessionInfo, SessionTotals
from server.methods.registry import reads
from server.services import sessions as service
from server.services import worktrees
from server.services.core import Core
from server.services.sessions import policy


@reads("listSessions")
async def list_sessions(core: Core, params: ListSessionsParams) -> ListSessionsResult:
    sessions, totals = await service.list_sessions(core, params.cwd, params.limit, params.include_children)
    worktree = await worktrees.sessions_info(core, [s.id for s in sessions])
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
                running=service.is_running(core, s.id),
                waiting_for_approval=core.clients.waiting_for_approval(s.id),
                attached_clients=core.clients.attached(s.id),
                worktree=worktree.get(s.id),
            )
            for s in sessions
        ]
    )


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
