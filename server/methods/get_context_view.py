"""``getContextView``: the request view the next model call would send now, without calling a model."""

from protocol.messages import ContextViewResult, GetContextViewParams
from server.agent.service import context_view
from server.agent.views import stable_prefix_tokens
from server.errors import InvalidParams
from server.rpc import method
from server.runtime import Runtime


@method("getContextView")
async def get_context_view(rt: Runtime, params: GetContextViewParams) -> ContextViewResult:
    if params.context_window_tokens is not None and params.context_window_tokens <= 0:
        raise InvalidParams("contextWindowTokens must be positive")
    if params.threshold_ratio is not None and not 0 < params.threshold_ratio <= 1:
        raise InvalidParams("thresholdRatio must be in (0, 1]")
    if params.keep_recent_tokens is not None and params.keep_recent_tokens < 0:
        raise InvalidParams("keepRecentTokens must be >= 0")
    got = await context_view(
        rt, params.session_id, params.context_window_tokens, params.threshold_ratio, params.keep_recent_tokens
    )
    view = got.view
    return ContextViewResult(
        messages=view.messages,
        estimated_tokens=view.estimated_tokens,
        threshold_tokens=view.threshold_tokens,
        context_window_tokens=got.settings.context_window_tokens,
        keep_recent_tokens=view.keep_recent_tokens,
        reserved_tokens=got.reserved_tokens,
        mode=view.mode,
        compacted_tool_outputs=view.compacted_tool_outputs,
        transcript_messages=view.transcript_messages,
        before_tokens=view.before_tokens,
        summary=view.summary,
        compact_target_tokens=got.effective.target_tokens,
        stable_prefix_tokens=await stable_prefix_tokens(rt.store, rt.sessions, params.session_id, view.messages),
    )
