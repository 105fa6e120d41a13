"""``listHooks {cwd}`` -> ``{hooks, problems?}``: the hooks a session in that folder gets, with ``source`` and
``approved``."""

from protocol.messages import ListHooksParams, ListHooksResult
from server.methods.registry import reads
from server.services import extensions
from server.services.core import Core


@reads("listHooks")
async def list_hooks(core: Core, params: ListHooksParams) -> ListHooksResult:
    hooks, problems = extensions.list_hooks(core, params.cwd)
    return ListHooksResult(hooks=hooks, problems=problems or None)
