"""``listModels {}`` -> ``{models, default?}``: the configured ``[models.NAME]`` with windows and prices."""

from protocol.messages import ListModelsParams, ListModelsResult, ModelInfo, ModelPrice
from server.agent.models import price_of, window_of
from server.config import ProviderSettings
from server.rpc import method
from server.runtime import Runtime


@method("listModels")
async def list_models(rt: Runtime, params: ListModelsParams) -> ListModelsResult:
    default = rt.settings.provider
    return ListModelsResult(
        models=[_info(name, p) for name, p in rt.settings.models.items()],
        default=_info(None, default) if default.configured else None,
    )


def _info(name: str | None, p: ProviderSettings) -> ModelInfo:
    price = price_of(p)
    return ModelInfo(
        name=name,
        provider=p.kind,
        model=p.model or "",
        context_window_tokens=window_of(p),
        price=ModelPrice(
            input=price.input, output=price.output, cached_input=price.cached_input, cache_write=price.cache_write
        )
        if price
        else None,
    )
