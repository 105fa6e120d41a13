"""``getContextView``: the request view the next model call would send now, without calling a model."""

from protocol.messages import ContextViewResult, GetContextViewParams
from server.methods.registry import reads
from server.services import context_view
from server.services.core import Core


@reads("getContextView")
async def get_context_view(core: Core, params: GetContextViewParams) -> ContextViewResult:
    return await context_view.get_context_view(core, params)
