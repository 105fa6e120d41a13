"""``listModels {}`` -> ``{models, default?}``: the configured ``[models.NAME]`` with windows and prices."""

from protocol.messages import ListModelsParams, ListModelsResult
from server.methods.registry import reads
from server.services import models
from server.services.core import Core


@reads("listModels")
async def list_models(core: Core, params: ListModelsParams) -> ListModelsResult:
    return models.list_models(core.settings)
