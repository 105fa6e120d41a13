"""Which tool calls of one answer run together: calls of a tool that declares itself ``parallel``
(``protocol.tool_facts``: ``task``) next to each other do (B-SUB-1), every other call runs alone, in order. A
subagent mostly waits on its model, so its siblings overlap with it; the number running at once is capped by the
``task`` tool itself (``[agents] max_parallel``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from protocol.messages import OpenAIToolCall
from protocol.tool_facts import facts_of

TASK_TOOL = "task"


def batches(calls: list[OpenAIToolCall]) -> list[list[OpenAIToolCall]]:
    """The calls in order, each alone but for calls of one parallel tool next to each other, which share a batch."""
    out: list[list[OpenAIToolCall]] = []
    for call in calls:
        name = call.function.name
        if facts_of(name).parallel and out and out[-1][-1].function.name == name:
            out[-1].append(call)
        else:
            out.append([call])
    return out


async def run_batch(run: Callable[[OpenAIToolCall], Coroutine[Any, Any, None]], batch: list[OpenAIToolCall]) -> None:
    """Run one batch. Several calls run as tasks that end together: cancelled, or one failing, cancels and awaits
    the others, so none outlives the turn."""
    if len(batch) == 1:
        return await run(batch[0])
    tasks = [asyncio.create_task(run(call)) for call in batch]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
