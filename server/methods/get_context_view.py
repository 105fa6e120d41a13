"""``getContextView``: the request view the next model call would send now, without calling a model."""

from protocol.messages import ContextViewResult, GetContextViewParams
from server.agent.models import provider_settings
from server.agent.service import session_tool_overhead_tokens, view_settings
from server.agent.views import (
    build_view,
    effective_settings,
    keep_resume_point,
    stable_prefix_tokens,
    stored_compaction,
)
from server.context import fit_to_window
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
    session = await rt.store.get_session(params.session_id)
    settings = view_settings(
        rt, params.context_window_tokens, params.threshold_ratio, params.keep_recent_tokens, session=session
    )  # the session's model's window unless overridden
    # The same budget the agent loop uses, so this is the view the next model call would really send.
    reserved = await session_tool_overhead_tokens(rt, params.session_id)
    model = provider_settings(rt.settings, session).model or ""
    effective = effective_settings(settings, reserved, rt.calibrations.get(model))
    # B-INC-1, B-CACHE-1: the session's state and stored compaction; no compaction is stored or announced
    compaction = await stored_compaction(rt.store, params.session_id)
    built = await build_view(
        rt.store, rt.sessions, params.session_id, compaction, lambda state: state.view(effective, compaction)
    )
    if compaction is None:  # a history no turn has compacted: the next server resumes from here (cold start)
        await keep_resume_point(rt.store, rt.sessions, params.session_id, built)
    view = fit_to_window(built)
    return ContextViewResult(
        messages=view.messages,
        estimated_tokens=view.estimated_tokens,
        threshold_tokens=view.threshold_tokens,
        context_window_tokens=settings.context_window_tokens,
        keep_recent_tokens=view.keep_recent_tokens,
        reserved_tokens=reserved,
        mode=view.mode,
        compacted_tool_outputs=view.compacted_tool_outputs,
        transcript_messages=view.transcript_messages,
        before_tokens=view.before_tokens,
        summary=view.summary,
        compact_target_tokens=effective.target_tokens,
        stable_prefix_tokens=await stable_prefix_tokens(rt.store, rt.sessions, params.session_id, view.messages),
    )
