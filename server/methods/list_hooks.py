"""``listHooks {cwd}`` -> ``{hooks, problems?}``: the hooks a session in that folder gets, with ``source`` and
``approved``."""

from protocol.messages import ListHooksParams, ListHooksResult
from server.methods.registry import reads
from server.services.core import Core
from server.workspace import checked_folder


@reads("listHooks")
async def list_hooks(core: Core, params: ListHooksParams) -> ListHooksResult:
    hooks, problems = core.hooks.list(checked_folder(params.cwd))
    return ListHooksResult(hooks=hooks, problems=problems or None)
